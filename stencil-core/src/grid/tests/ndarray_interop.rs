//! ndarray views of the interior and grids built from ndarray views.

use ndarray::{Array3, ArrayView1, ArrayView2, ShapeBuilder};

use super::Draw;
use crate::error::ErrorKind;
use crate::grid::{Boundary, Grid1, Grid2, Grid3};
use crate::rng::Rng;

#[test]
fn interior_view_equals_to_vec_without_copying() {
    let mut random = Rng::new(20);
    let g = Grid3::<f64>::from_fn([3, 4, 5], 2, |_| random.value()).unwrap();
    let a = g.interior();
    assert_eq!(a.shape(), &[3, 4, 5]);
    let strides: Vec<isize> = (0..3).map(|d| g.geometry().strides[d] as isize).collect();
    assert_eq!(a.strides(), &strides[..]);
    assert_eq!(a.iter().copied().collect::<Vec<_>>(), g.to_vec());
    assert_eq!(a[[2, 1, 4]], g[[2, 1, 4]]);
    let origin = &g.as_slice()[g.geometry().origin] as *const f64;
    assert_eq!(a.as_ptr(), origin);
}

#[test]
fn mutation_through_interior_mut_reaches_the_grid_and_marks_stale() {
    let mut random = Rng::new(21);
    let mut g = Grid2::<f32>::from_fn([4, 6], 3, |_| random.value()).unwrap();
    g.set_boundary(Boundary::Periodic);
    let before = g.to_vec();
    {
        let mut a = g.interior_mut();
        a[[3, 5]] = 2.5;
        a.row_mut(1).fill(-1.0);
    }
    assert!(g.halo_is_stale());
    let mut expected = before;
    expected[3 * 6 + 5] = 2.5;
    expected[6..12].fill(-1.0);
    assert_eq!(g.to_vec(), expected);
    g.update_halo();
    assert_eq!(g.get([-1, -1]), Some(2.5));
}

#[test]
fn from_array_reads_any_memory_order() {
    let mut random = Rng::new(22);
    // A Fortran-order array: logical order differs from memory order.
    let values: Vec<f64> = (0..24).map(|_| random.value()).collect();
    let f = Array3::from_shape_vec((2, 3, 4).f(), values).unwrap();
    let g = Grid3::from_array(f.view(), 1).unwrap();
    assert_eq!(g.shape(), [2, 3, 4]);
    assert_eq!(g.to_vec(), f.iter().copied().collect::<Vec<_>>());
    assert_eq!(g[[1, 2, 3]], f[[1, 2, 3]]);
    assert!(!g.halo_is_stale());
    assert_eq!(g.interior(), f.view());

    let t = f.view().reversed_axes();
    let g = Grid3::from_array(t, 2).unwrap();
    assert_eq!(g.interior(), t);

    let one = [0.5, -0.25, 0.125];
    let g = Grid1::from_array(ArrayView1::from(&one), 0).unwrap();
    assert_eq!(g.to_vec(), one);

    let empty: [f64; 0] = [];
    let e = ArrayView2::from_shape((0, 3), &empty).unwrap();
    assert_eq!(
        Grid2::from_array(e, 1).unwrap_err().kind(),
        ErrorKind::InvalidShape
    );
}
