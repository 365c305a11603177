//! Tests of the grid module, with the helpers they share: values from the seeded generator and an
//! independent, point-by-point reference for halo values.
//!
//! The reference follows the documented rule directly (the last dimension in which a point
//! is outside the interior decides; copying conditions recurse) and computes periodic and
//! reflected coordinates by repeated shifting and mirroring, not by the closed forms the
//! implementation uses.

mod access;
mod halo;
#[cfg(feature = "ndarray")]
mod ndarray_interop;

use crate::element::Element;
use crate::rng::Rng;

use super::{Boundary, Grid, Side};

/// Test values from the crate's generator.
pub(super) trait Draw {
    /// Uniform in `[-1, 1)`, never exactly zero in practice.
    fn value<T: Element>(&mut self) -> T;
}

impl Draw for Rng {
    fn value<T: Element>(&mut self) -> T {
        T::from_f64(self.uniform(-1.0, 1.0))
    }
}

/// Every point of interior plus halo, in C order.
pub(super) fn all_points<const D: usize>(shape: [usize; D], halo: usize) -> Vec<[isize; D]> {
    let h = halo as isize;
    let mut points = vec![[0isize; D]];
    for d in 0..D {
        let n = shape[d] as isize;
        points = points
            .into_iter()
            .flat_map(|p| {
                (-h..n + h).map(move |c| {
                    let mut q = p;
                    q[d] = c;
                    q
                })
            })
            .collect();
    }
    points
}

/// The value point `p` must hold after `update_halo`, per the documented rule, where
/// `before(p)` is what the grid held before (interior values and untouched halo values).
pub(super) fn expected_value<T: Element, const D: usize>(
    shape: [usize; D],
    faces: &[[Boundary<T>; 2]; D],
    before: &impl Fn([isize; D]) -> T,
    p: [isize; D],
) -> T {
    let Some(e) = (0..D)
        .rev()
        .find(|&d| p[d] < 0 || p[d] >= shape[d] as isize)
    else {
        return before(p);
    };
    let n = shape[e] as isize;
    let side = usize::from(p[e] >= n);
    let q = match faces[e][side] {
        Boundary::Dirichlet(v) => return v,
        Boundary::UserManaged => return before(p),
        Boundary::Periodic => {
            let mut q = p[e];
            while q < 0 {
                q += n;
            }
            while q >= n {
                q -= n;
            }
            q
        }
        Boundary::ZeroGradient => {
            if p[e] < 0 {
                0
            } else {
                n - 1
            }
        }
        Boundary::Reflect if n == 1 => 0,
        Boundary::Reflect => {
            let mut q = p[e];
            while q < 0 || q >= n {
                q = if q < 0 { -q } else { 2 * (n - 1) - q };
            }
            q
        }
    };
    let mut inner = p;
    inner[e] = q;
    expected_value(shape, faces, before, inner)
}

/// Builds a grid with random interior and random halo values, applies `faces` one by one,
/// and checks every interior and halo point against [`expected_value`] and that padding is
/// still zero.
pub(super) fn check_faces<T: Element, const D: usize>(
    shape: [usize; D],
    halo: usize,
    faces: [[Boundary<T>; 2]; D],
    random: &mut Rng,
) {
    let mut grid = Grid::<T, D>::from_fn(shape, halo, |_| random.value()).unwrap();
    // Every face user-managed while the halo gets random values, so the faces that stay
    // user-managed keep them.
    grid.set_boundary(Boundary::UserManaged);
    let points = all_points(shape, halo);
    for &p in &points {
        let inside = (0..D).all(|d| p[d] >= 0 && p[d] < shape[d] as isize);
        if !inside {
            grid.set(p, random.value()).unwrap();
        }
    }
    let before = grid.clone();
    for (d, pair) in faces.iter().enumerate() {
        for (side, &b) in Side::BOTH.iter().zip(pair) {
            grid.set_face_boundary(d, *side, b).unwrap();
        }
    }
    assert!(!grid.halo_is_stale());
    let lookup = |p: [isize; D]| before.get(p).unwrap();
    for &p in &points {
        let want = expected_value(shape, &faces, &lookup, p);
        let got = grid.get(p).unwrap();
        assert!(
            got == want,
            "shape {shape:?} halo {halo} faces {faces:?}: point {p:?} holds {got}, expected {want}"
        );
    }
    // Padding: storage elements outside interior plus halo are never written.
    let mut reachable = vec![false; grid.geometry().len];
    for &p in &points {
        reachable[grid.geometry().index(&p)] = true;
    }
    for (i, &v) in grid.as_slice().iter().enumerate() {
        if !reachable[i] {
            assert!(v == T::ZERO, "padding element {i} was written: {v}");
        }
    }
}
