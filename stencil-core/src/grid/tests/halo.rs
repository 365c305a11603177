//! Halo filling: every boundary kind on 1-D to 4-D grids against the point-wise reference,
//! hand-checked corners, mixed faces, and halos wider than the interior.

use super::{Draw, check_faces};
use crate::grid::{Boundary, Grid, Grid1, Grid2, Grid3, Grid4, Side};
use crate::rng::Rng;

const KINDS: [Boundary<f64>; 5] = [
    Boundary::Dirichlet(0.75),
    Boundary::Periodic,
    Boundary::ZeroGradient,
    Boundary::Reflect,
    Boundary::UserManaged,
];

fn random_kind(random: &mut Rng) -> Boundary<f64> {
    match KINDS[random.index(KINDS.len())] {
        Boundary::Dirichlet(_) => Boundary::Dirichlet(random.value()),
        other => other,
    }
}

#[test]
fn every_kind_on_every_face_in_1d() {
    let mut random = Rng::new(1);
    for kind in KINDS {
        for (n, halo) in [(7, 3), (1, 2), (2, 4), (3, 4), (16, 1), (5, 0)] {
            check_faces([n], halo, [[kind; 2]], &mut random);
        }
    }
}

#[test]
fn every_kind_on_every_face_in_2d() {
    let mut random = Rng::new(2);
    for kind in KINDS {
        for (shape, halo) in [([5, 9], 2), ([1, 3], 3), ([3, 2], 4), ([17, 33], 4)] {
            check_faces(shape, halo, [[kind; 2]; 2], &mut random);
        }
    }
}

#[test]
fn every_kind_on_every_face_in_3d() {
    let mut random = Rng::new(3);
    for kind in KINDS {
        for (shape, halo) in [([4, 5, 6], 2), ([2, 1, 3], 3), ([3, 7, 2], 1)] {
            check_faces(shape, halo, [[kind; 2]; 3], &mut random);
        }
    }
}

#[test]
fn every_kind_in_4d_and_in_f32() {
    let mut random = Rng::new(4);
    for kind in KINDS {
        check_faces([3, 2, 4, 5], 2, [[kind; 2]; 4], &mut random);
        let kind32 = match kind {
            Boundary::Dirichlet(v) => Boundary::Dirichlet(v as f32),
            Boundary::Periodic => Boundary::Periodic,
            Boundary::ZeroGradient => Boundary::ZeroGradient,
            Boundary::Reflect => Boundary::Reflect,
            Boundary::UserManaged => Boundary::UserManaged,
        };
        check_faces([5, 3, 19], 3, [[kind32; 2]; 3], &mut random);
    }
}

#[test]
fn random_mixed_faces_in_2d_and_3d() {
    let mut random = Rng::new(5);
    for _ in 0..60 {
        let faces2 = [
            [random_kind(&mut random), random_kind(&mut random)],
            [random_kind(&mut random), random_kind(&mut random)],
        ];
        check_faces([4, 6], 3, faces2, &mut random);
        let faces3: [[Boundary<f64>; 2]; 3] =
            std::array::from_fn(|_| [random_kind(&mut random), random_kind(&mut random)]);
        check_faces([3, 4, 5], 2, faces3, &mut random);
    }
}

#[test]
fn periodic_2d_corners_hold_the_wrapped_interior_corners() {
    let mut random = Rng::new(6);
    let (n0, n1) = (5usize, 7usize);
    let mut g = Grid2::<f64>::from_fn([n0, n1], 2, |_| random.value()).unwrap();
    g.set_boundary(Boundary::Periodic);
    let at = |i: usize, j: usize| g[[i, j]];
    assert_eq!(g.get([-1, -1]), Some(at(n0 - 1, n1 - 1)));
    assert_eq!(g.get([-2, -1]), Some(at(n0 - 2, n1 - 1)));
    assert_eq!(g.get([-1, 7]), Some(at(n0 - 1, 0)));
    assert_eq!(g.get([6, 8]), Some(at(1, 1)));
    assert_eq!(g.get([5, -2]), Some(at(0, n1 - 2)));
    // Edges too.
    assert_eq!(g.get([-1, 3]), Some(at(n0 - 1, 3)));
    assert_eq!(g.get([2, 8]), Some(at(2, 1)));
}

#[test]
fn zero_gradient_3d_corners_hold_the_nearest_interior_corner() {
    let mut random = Rng::new(7);
    let shape = [4usize, 5, 6];
    let mut g = Grid3::<f64>::from_fn(shape, 3, |_| random.value()).unwrap();
    g.set_boundary(Boundary::ZeroGradient);
    assert_eq!(g.get([-3, -3, -3]), Some(g[[0, 0, 0]]));
    assert_eq!(g.get([-1, -2, -3]), Some(g[[0, 0, 0]]));
    assert_eq!(g.get([6, -1, 8]), Some(g[[3, 0, 5]]));
    assert_eq!(g.get([4, 7, 6]), Some(g[[3, 4, 5]]));
    assert_eq!(g.get([-2, 2, 7]), Some(g[[0, 2, 5]]));
}

#[test]
fn mixed_dirichlet_and_periodic_edges_follow_the_later_dimension() {
    let mut random = Rng::new(8);
    let mut g = Grid2::<f64>::from_fn([4, 5], 2, |_| random.value()).unwrap();
    // Dimension 0 Dirichlet, dimension 1 periodic: the corner copies (periodically, along
    // dimension 1) a point of dimension 0's halo, which holds the Dirichlet value.
    g.set_face_boundary(0, Side::Low, Boundary::Dirichlet(2.0))
        .unwrap();
    g.set_face_boundary(0, Side::High, Boundary::Dirichlet(3.0))
        .unwrap();
    g.set_face_boundary(1, Side::Low, Boundary::Periodic)
        .unwrap();
    g.set_face_boundary(1, Side::High, Boundary::Periodic)
        .unwrap();
    assert_eq!(g.get([-1, -1]), Some(2.0));
    assert_eq!(g.get([4, 6]), Some(3.0));
    assert_eq!(g.get([1, -2]), Some(g[[1, 3]]));

    // Dimension 0 periodic, dimension 1 Dirichlet: the later dimension's value wins.
    g.set_boundary(Boundary::Periodic);
    g.set_face_boundary(1, Side::Low, Boundary::Dirichlet(-1.0))
        .unwrap();
    assert_eq!(g.get([-1, -1]), Some(-1.0));
    assert_eq!(g.get([-1, 5]), Some(g[[3, 0]]));
    assert_eq!(g.get([5, 2]), Some(g[[1, 2]]));

    // Two Dirichlet faces meeting: the later dimension's value.
    g.set_boundary(Boundary::Dirichlet(7.0));
    g.set_face_boundary(0, Side::High, Boundary::Dirichlet(9.0))
        .unwrap();
    assert_eq!(g.get([4, -1]), Some(7.0));
    assert_eq!(g.get([4, 2]), Some(9.0));
}

#[test]
fn reflect_with_halo_wider_than_interior_matches_numpy() {
    // numpy.pad([a, b, c], 4, mode='reflect') picks indices [0 1 2 1 | 0 1 2 | 1 0 1 2].
    let values = [0.25, -0.5, 0.125];
    let mut g = Grid1::from_slice([3], 4, &values).unwrap();
    g.set_boundary(Boundary::Reflect);
    let picks = [0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2];
    for (k, &pick) in picks.iter().enumerate() {
        assert_eq!(
            g.get([k as isize - 4]),
            Some(values[pick]),
            "point {}",
            k as isize - 4
        );
    }
}

#[test]
fn user_managed_faces_keep_what_the_user_wrote() {
    let mut g = Grid1::<f64>::from_slice([3], 2, &[1.0, 2.0, 3.0]).unwrap();
    g.set_face_boundary(0, Side::High, Boundary::UserManaged)
        .unwrap();
    g.set([3], 8.5).unwrap();
    g.set([-1], 8.5).unwrap();
    g.update_halo();
    assert_eq!(g.get([3]), Some(8.5));
    assert_eq!(g.get([-1]), Some(0.0));
}

#[test]
fn stale_halo_is_refreshed_by_update_halo() {
    let mut random = Rng::new(9);
    let mut g = Grid4::<f64>::from_fn([2, 3, 2, 4], 1, |_| random.value()).unwrap();
    g.set_boundary(Boundary::Periodic);
    g[[0, 0, 0, 0]] = 42.0;
    assert!(g.halo_is_stale());
    assert_ne!(g.get([2, 3, 2, 4]), Some(42.0));
    g.update_halo();
    assert!(!g.halo_is_stale());
    assert_eq!(g.get([2, 3, 2, 4]), Some(42.0));
    assert_eq!(g.get([-1, -1, -1, -1]), Some(g[[1, 2, 1, 3]]));
}

#[test]
fn refresh_halo_repairs_written_halos_and_follows_the_interior() {
    // Dirichlet faces: a halo point written by hand is restored, interior writes through the
    // kernel-output view keep the constant halo.
    let mut g = Grid2::<f64>::with_halo([4, 5], 1).unwrap();
    g.set_boundary(Boundary::Dirichlet(2.5));
    g.set([-1, 2], 9.0).unwrap();
    assert_eq!(g.get([-1, 2]), Some(9.0));
    g.refresh_halo();
    assert_eq!(
        g.get([-1, 2]),
        Some(2.5),
        "a written halo point is refilled"
    );
    g.as_mut_slice()[0] = -7.0; // the corner halo point (-1, -1)
    g.refresh_halo();
    assert_eq!(
        g.get([-1, -1]),
        Some(2.5),
        "raw storage writes are repaired"
    );
    {
        let view = g.kernel_output_view();
        let i = view.geom.index(&[1, 1]);
        view.data[i] = 4.0;
    }
    g.refresh_halo();
    assert_eq!(g.get([1, 1]), Some(4.0));
    assert_eq!(g.get([-1, 1]), Some(2.5));
    assert_eq!(g.get([4, 1]), Some(2.5));

    // A periodic face depends on the interior: the halo follows every interior write.
    let mut p = Grid2::<f64>::with_halo([4, 5], 1).unwrap();
    p.set_boundary(Boundary::Periodic);
    {
        let view = p.kernel_output_view();
        let i = view.geom.index(&[0, 3]);
        view.data[i] = 6.0;
    }
    assert!(p.halo_is_stale());
    p.refresh_halo();
    assert_eq!(p.get([4, 3]), Some(6.0), "periodic image of (0, 3)");
    assert!(!p.halo_is_stale());
}

/// Fills `grid`'s halo the way a time loop does: interior slabs of dimension 0 in chunks of
/// `chunk` planes, each halo plane of dimension 0 as soon as the plane its condition copies
/// from is done (or at the end, for conditions that wrap). Returns the storage afterwards.
fn staged_fill<const D: usize>(
    grid: &Grid<f64, D>,
    faces: &[[Boundary<f64>; 2]; D],
    chunk: usize,
) -> Vec<f64> {
    use crate::grid::halo::fill_halo_planes;
    use crate::view::FieldViewMut;
    let geom = *grid.geometry();
    let mut data = grid.as_slice().to_vec();
    let mut view = FieldViewMut {
        geom,
        data: &mut data,
    };
    let (n, h) = (geom.shape[0] as isize, geom.halo as isize);
    let wraps = faces[0].contains(&Boundary::Periodic);
    let mut halo_done = vec![false; 2 * geom.halo];
    let mut done = 0;
    while done < n {
        let end = (done + chunk as isize).min(n);
        fill_halo_planes(&mut view, faces, done..end);
        done = end;
        for (k, c) in (-h..0).chain(n..n + h).enumerate() {
            let side = usize::from(c >= n);
            let ready = match faces[0][side].source(c, n as usize) {
                super::super::boundary::HaloSource::Interior(q) => {
                    !wraps && (q as isize) < done || done == n
                }
                _ => true,
            };
            if ready && !halo_done[k] {
                fill_halo_planes(&mut view, faces, c..c + 1);
                halo_done[k] = true;
            }
        }
    }
    data
}

#[test]
fn a_halo_filled_plane_by_plane_equals_a_whole_fill() {
    let mut random = Rng::new(21);
    for round in 0..120 {
        let chunk = 1 + random.index(3);
        let faces3: [[Boundary<f64>; 2]; 3] =
            std::array::from_fn(|_| [random_kind(&mut random), random_kind(&mut random)]);
        let shape = [
            1 + random.index(6),
            1 + random.index(5),
            1 + random.index(7),
        ];
        let halo = random.index(4);
        let mut g = Grid3::<f64>::from_fn(shape, halo, |_| random.value()).unwrap();
        // Arbitrary values in the halo too: user-managed faces keep them.
        for v in g.as_mut_slice() {
            if *v == 0.0 {
                *v = random.value();
            }
        }
        let staged = staged_fill(&g, &faces3, chunk);
        let mut whole = g.as_slice().to_vec();
        let mut view = crate::view::FieldViewMut {
            geom: *g.geometry(),
            data: &mut whole,
        };
        crate::grid::fill_halo(&mut view, &faces3);
        assert!(
            staged
                .iter()
                .zip(&whole)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "round {round}: {shape:?} halo {halo} chunk {chunk} {faces3:?}"
        );
        // 1-D and 2-D.
        let faces1 = [[random_kind(&mut random), random_kind(&mut random)]];
        let g1 = Grid1::<f64>::from_fn([1 + random.index(9)], random.index(4), |_| random.value())
            .unwrap();
        let mut whole = g1.as_slice().to_vec();
        crate::grid::fill_halo(
            &mut crate::view::FieldViewMut {
                geom: *g1.geometry(),
                data: &mut whole,
            },
            &faces1,
        );
        assert_eq!(staged_fill(&g1, &faces1, chunk), whole, "1-D round {round}");
        let faces2: [[Boundary<f64>; 2]; 2] =
            std::array::from_fn(|_| [random_kind(&mut random), random_kind(&mut random)]);
        let g2 = Grid2::<f64>::from_fn([1 + random.index(7), 1 + random.index(6)], 2, |_| {
            random.value()
        })
        .unwrap();
        let mut whole = g2.as_slice().to_vec();
        crate::grid::fill_halo(
            &mut crate::view::FieldViewMut {
                geom: *g2.geometry(),
                data: &mut whole,
            },
            &faces2,
        );
        assert_eq!(staged_fill(&g2, &faces2, chunk), whole, "2-D round {round}");
    }
}
