//! Layout, point access, rows, bulk writes, staleness, construction and errors.

use super::Draw;
use crate::error::ErrorKind;
use crate::grid::{Boundary, DEFAULT_HALO, Grid, Grid1, Grid2, Grid3, Side};
use crate::rng::Rng;
use crate::view::ALIGN_BYTES;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn grids_are_send_and_sync() {
    assert_send_sync::<Grid3<f64>>();
    assert_send_sync::<Grid2<f32>>();
}

fn check_rows_aligned<T: crate::Element, const D: usize>(shape: [usize; D], halo: usize) {
    for pad in [0, 1, 3] {
        check_padded_rows_aligned::<T, D>(shape, halo, pad);
    }
}

fn check_padded_rows_aligned<T: crate::Element, const D: usize>(
    shape: [usize; D],
    halo: usize,
    pad: usize,
) {
    let g = Grid::<T, D>::with_padding(shape, halo, pad).unwrap();
    assert_eq!(g.padding(), pad);
    let mut n_rows = 0;
    for row in g.rows() {
        assert_eq!(row.len(), shape[D - 1]);
        assert_eq!(
            row.as_ptr() as usize % ALIGN_BYTES,
            0,
            "shape {shape:?} halo {halo}"
        );
        n_rows += 1;
    }
    assert_eq!(n_rows, shape[..D - 1].iter().product::<usize>());
    assert_eq!(g.as_slice().as_ptr() as usize % ALIGN_BYTES, 0);
    assert_eq!(g.as_slice().len(), g.geometry().len);
}

#[test]
fn interior_rows_start_64_byte_aligned() {
    for halo in [0, 1, 3, 4, 5, 9] {
        check_rows_aligned::<f32, 1>([13], halo);
        check_rows_aligned::<f64, 1>([13], halo);
        check_rows_aligned::<f32, 2>([3, 17], halo);
        check_rows_aligned::<f64, 2>([5, 1], halo);
        check_rows_aligned::<f32, 3>([2, 3, 31], halo);
        check_rows_aligned::<f64, 3>([4, 2, 9], halo);
        check_rows_aligned::<f64, 4>([2, 2, 3, 8], halo);
    }
}

#[test]
fn new_grid_is_zero_with_default_halo_and_dirichlet_zero() {
    let g = Grid3::<f64>::new([3, 4, 5]).unwrap();
    assert_eq!(g.shape(), [3, 4, 5]);
    assert_eq!(g.halo(), DEFAULT_HALO);
    assert_eq!(g.n_points(), 60);
    for d in 0..3 {
        for side in Side::BOTH {
            assert_eq!(g.boundary(d, side), Some(Boundary::Dirichlet(0.0)));
        }
    }
    assert_eq!(g.boundary(3, Side::Low), None);
    assert!(g.as_slice().iter().all(|&v| v == 0.0));
    assert!(!g.halo_is_stale());
}

#[test]
fn get_set_and_index_round_trip_including_halo() {
    let mut random = Rng::new(10);
    let shape = [3usize, 4, 5];
    let halo = 2;
    let mut g = Grid3::<f64>::with_halo(shape, halo).unwrap();
    let points = super::all_points(shape, halo);
    let values: Vec<f64> = points.iter().map(|_| random.value()).collect();
    for (&p, &v) in points.iter().zip(&values) {
        g.set(p, v).unwrap();
    }
    for (&p, &v) in points.iter().zip(&values) {
        assert_eq!(g.get(p), Some(v));
        if p.iter()
            .zip(shape)
            .all(|(&c, n)| c >= 0 && (c as usize) < n)
        {
            assert_eq!(g[[p[0] as usize, p[1] as usize, p[2] as usize]], v);
        }
    }
    // The storage index is the geometry's.
    assert_eq!(
        g.as_slice()[g.geometry().index(&[-2, 3, 6])],
        g.get([-2, 3, 6]).unwrap()
    );
    g[[2, 3, 4]] = 0.5;
    assert_eq!(g.get([2, 3, 4]), Some(0.5));
    for outside in [[-3, 0, 0], [0, 6, 0], [0, 0, 7], [5, 6, 7]] {
        assert_eq!(g.get(outside), None);
        assert_eq!(
            g.set(outside, 1.0).unwrap_err().kind(),
            ErrorKind::BadArgument
        );
    }
}

#[test]
fn index_outside_the_interior_panics() {
    let g = Grid2::<f64>::with_halo([3, 4], 2).unwrap();
    let result = std::panic::catch_unwind(|| g[[3, 0]]);
    assert!(result.is_err());
    let result = std::panic::catch_unwind(|| g[[0, 4]]);
    assert!(result.is_err());
}

#[test]
fn from_slice_to_vec_and_interior_iter_round_trip() {
    let mut random = Rng::new(11);
    let shape = [3usize, 5, 7];
    let values: Vec<f32> = (0..105).map(|_| random.value()).collect();
    let g = Grid3::from_slice(shape, 3, &values).unwrap();
    assert_eq!(g.to_vec(), values);
    let mut expected_points = Vec::new();
    for i in 0..3 {
        for j in 0..5 {
            for k in 0..7 {
                expected_points.push([i, j, k]);
            }
        }
    }
    let (points, iterated): (Vec<_>, Vec<_>) = g.interior_iter().unzip();
    assert_eq!(points, expected_points);
    assert_eq!(iterated, values);
    for (n, &[i, j, k]) in expected_points.iter().enumerate() {
        assert_eq!(g[[i, j, k]], values[n]);
    }
    let flat: Vec<f32> = g.rows().flatten().copied().collect();
    assert_eq!(flat, values);
    // 1-D and halo 0.
    let one = Grid1::from_slice([4], 0, &values[..4]).unwrap();
    assert_eq!(one.to_vec(), &values[..4]);
}

#[test]
fn fill_with_runs_in_c_order_and_fills_the_halo() {
    let mut g = Grid2::<f64>::with_halo([3, 4], 1).unwrap();
    g.set_boundary(Boundary::Periodic);
    let mut calls = Vec::new();
    g.fill_with(|[i, j]| {
        calls.push([i, j]);
        (10 * i + j) as f64 + 0.5
    });
    let expected: Vec<[usize; 2]> = (0..3).flat_map(|i| (0..4).map(move |j| [i, j])).collect();
    assert_eq!(calls, expected);
    assert_eq!(g[[2, 3]], 23.5);
    assert_eq!(g.get([-1, -1]), Some(23.5));
    assert_eq!(g.get([3, 1]), Some(1.5));
    assert!(!g.halo_is_stale());
}

#[test]
fn fill_and_map_inplace_refresh_the_halo() {
    let mut random = Rng::new(12);
    let values: Vec<f64> = (0..6).map(|_| random.value()).collect();
    let mut g = Grid2::from_slice([2, 3], 2, &values).unwrap();
    g.set_boundary(Boundary::ZeroGradient);
    g.map_inplace(|v| 2.0 * v + 1.0);
    let doubled: Vec<f64> = values.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(g.to_vec(), doubled);
    assert_eq!(g.get([-2, 4]), Some(doubled[2]));
    assert!(!g.halo_is_stale());
    g.fill(-0.25);
    assert!(g.to_vec().iter().all(|&v| v == -0.25));
    assert_eq!(g.get([3, -1]), Some(-0.25));
    assert!(!g.halo_is_stale());
}

#[test]
fn staleness_tracks_interior_writes_and_interior_dependent_faces() {
    let mut g = Grid2::<f64>::with_halo([4, 4], 2).unwrap();
    assert!(!g.halo_is_stale());
    g.set([1, 1], 1.0).unwrap();
    // Dirichlet faces do not depend on the interior.
    assert!(!g.halo_is_stale());
    g.set_face_boundary(1, Side::High, Boundary::Reflect)
        .unwrap();
    assert!(!g.halo_is_stale());
    g.set([-1, 0], 1.0).unwrap();
    assert!(
        !g.halo_is_stale(),
        "a halo write does not change the interior"
    );
    g.set([0, 0], 1.0).unwrap();
    assert!(g.halo_is_stale());
    let copy = g.clone();
    assert!(copy.halo_is_stale());
    assert!(!g.like().halo_is_stale());
    g.update_halo();
    assert!(!g.halo_is_stale());
    g[[2, 2]] = 3.0;
    assert!(g.halo_is_stale());
    g.update_halo();
    let _ = g.view();
    let _ = g.as_slice();
    let _ = g.rows().count();
    assert!(!g.halo_is_stale(), "read-only access");
    let _ = g.view_mut();
    assert!(g.halo_is_stale());
    g.update_halo();
    let _ = g.as_mut_slice();
    assert!(g.halo_is_stale());
    g.update_halo();
    let _ = g.rows_mut();
    assert!(g.halo_is_stale());
    g.set_boundary(Boundary::Dirichlet(1.0));
    g[[0, 0]] = 5.0;
    assert!(!g.halo_is_stale(), "no face depends on the interior");
}

#[test]
fn like_copies_geometry_and_boundaries_with_zero_interior() {
    let mut random = Rng::new(13);
    let mut g = Grid3::<f32>::from_fn([3, 4, 5], 2, |_| random.value()).unwrap();
    g.set_boundary(Boundary::Periodic);
    g.set_face_boundary(2, Side::High, Boundary::Dirichlet(1.5))
        .unwrap();
    let h = g.like();
    assert_eq!(h.geometry(), g.geometry());
    assert_eq!(h.boundaries(), g.boundaries());
    assert!(h.to_vec().iter().all(|&v| v == 0.0));
    assert_eq!(h.get([0, 0, 5]), Some(1.5));
    assert_eq!(h.get([-1, -1, 6]), Some(1.5));
    assert_eq!(h.get([-1, -1, -1]), Some(0.0));
}

#[test]
fn repadded_keeps_every_point_the_boundaries_and_the_halo_state() {
    let mut random = Rng::new(15);
    let mut g = Grid3::<f64>::from_fn([3, 4, 13], 2, |_| random.value()).unwrap();
    g.set_boundary(Boundary::Periodic);
    g.set([-2, -1, 14], 42.0).unwrap();
    for pad in [1, 2, 5, 0] {
        let p = g.repadded(pad).unwrap();
        assert_eq!(p.padding(), pad);
        assert_eq!(p.boundaries(), g.boundaries());
        assert_eq!(p.halo_is_stale(), g.halo_is_stale());
        for i in -2..5isize {
            for j in -2..6isize {
                for k in -2..15isize {
                    assert_eq!(
                        p.get([i, j, k]),
                        g.get([i, j, k]),
                        "pad {pad} at {i},{j},{k}"
                    );
                }
            }
        }
        // Back to the plain layout: the same storage as the original, padding included.
        assert_eq!(p.repadded(0).unwrap().as_slice(), g.as_slice());
    }
}

#[test]
fn clone_is_deep() {
    let mut random = Rng::new(14);
    let g = Grid2::<f64>::from_fn([3, 3], 1, |_| random.value()).unwrap();
    let mut c = g.clone();
    let before = g.to_vec();
    c[[1, 1]] = 100.0;
    c.set([-1, -1], 7.0).unwrap();
    assert_eq!(g.to_vec(), before);
    assert_eq!(g.get([-1, -1]), Some(0.0));
    assert_ne!(c.as_slice().as_ptr(), g.as_slice().as_ptr());
}

#[test]
fn misuse_is_an_error() {
    assert_eq!(
        Grid::<f64, 0>::new([]).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    assert_eq!(
        Grid2::<f64>::new([3, 0]).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    assert_eq!(
        Grid::<f64, 5>::new([2; 5]).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    assert_eq!(
        Grid2::<f64>::new([usize::MAX / 4, 4]).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    assert_eq!(
        Grid2::<f64>::from_slice([2, 3], 1, &[1.0; 5])
            .unwrap_err()
            .kind(),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        Grid2::<f64>::from_slice([2, 0], 1, &[]).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
    let mut g = Grid2::<f64>::new([2, 2]).unwrap();
    assert_eq!(
        g.set_face_boundary(2, Side::Low, Boundary::Periodic)
            .unwrap_err()
            .kind(),
        ErrorKind::BadArgument
    );
    assert_eq!(g.boundary(0, Side::Low), Some(Boundary::Dirichlet(0.0)));
}

#[test]
fn views_see_the_whole_storage() {
    let mut random = Rng::new(15);
    let mut g = Grid2::<f64>::from_fn([3, 5], 2, |_| random.value()).unwrap();
    let v = g.view();
    assert_eq!(v.geom, *g.geometry());
    assert_eq!(v.get(&[1, 2]), g[[1, 2]]);
    assert_eq!(v.data.len(), g.geometry().len);
    g.view_mut().set(&[2, 4], 9.0);
    assert_eq!(g[[2, 4]], 9.0);
    let i = g.geometry().index(&[0, 1]);
    g.as_mut_slice()[i] = -3.0;
    assert_eq!(g[[0, 1]], -3.0);
}
