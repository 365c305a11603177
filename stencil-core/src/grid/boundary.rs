//! Boundary conditions: what a grid's halo holds, one condition per face.
//!
//! A face is one side ([`Side::Low`] or [`Side::High`]) of one dimension. A [`Boundary`] says
//! how the halo points beyond that face are computed from the interior; this module owns the
//! one-dimensional rule ([`Boundary::source`]); the multi-dimensional fill order that makes
//! edges and corners consistent lives in [`fill_halo`](super::fill_halo).

use crate::element::Element;

/// One side of a dimension.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Side {
    /// Below index 0 (halo coordinates `-halo..0`).
    Low,
    /// Above the last interior index (halo coordinates `n..n + halo`).
    High,
}

impl Side {
    /// Both sides, low first.
    pub const BOTH: [Side; 2] = [Side::Low, Side::High];

    /// 0 for [`Side::Low`], 1 for [`Side::High`].
    pub const fn index(self) -> usize {
        match self {
            Side::Low => 0,
            Side::High => 1,
        }
    }
}

/// How the halo beyond one face of a grid is filled by `update_halo`.
///
/// Semantics for a halo point whose coordinate `p` in dimension `d` lies outside the interior
/// `0..n` of that dimension (coordinates in the other dimensions unchanged):
///
/// - `Dirichlet(v)`: the value `v`.
/// - `Periodic`: the value at `p.rem_euclid(n)` (the interior wraps around; halos wider than
///   the interior wrap several times).
/// - `ZeroGradient`: the value at the nearest interior point, `p.clamp(0, n - 1)` (Neumann
///   condition with zero normal derivative).
/// - `Reflect`: the mirror image without repeating the edge point (numpy's `'reflect'`):
///   `-1 -> 1`, `-2 -> 2`, `n -> n - 2`. Halos wider than the interior keep mirroring, which is
///   periodic with period `2 (n - 1)`. When `n == 1` there is nothing to mirror and it acts as
///   `ZeroGradient`.
/// - `UserManaged`: left untouched; the user writes the halo (for example, from a neighbour
///   process).
///
/// See [`Grid`](super::Grid) for how conditions of different dimensions combine at edges and
/// corners.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Boundary<T> {
    /// A fixed value.
    Dirichlet(T),
    /// Wrap around to the opposite side of the interior.
    Periodic,
    /// Copy the nearest interior point.
    ZeroGradient,
    /// Mirror the interior about the edge point, without repeating it.
    Reflect,
    /// Never written by the library.
    UserManaged,
}

/// Where one halo coordinate gets its value from, per [`Boundary::source`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum HaloSource<T> {
    /// A fixed value.
    Value(T),
    /// The point at this interior coordinate (in `0..n`) of the same dimension.
    Interior(usize),
    /// Nothing: the point is left as it is.
    Untouched,
}

impl<T: Element> Boundary<T> {
    /// Whether the halo values depend on the interior (`Periodic`, `ZeroGradient`, `Reflect`),
    /// so that changing the interior makes the halo stale.
    pub fn depends_on_interior(&self) -> bool {
        matches!(
            self,
            Boundary::Periodic | Boundary::ZeroGradient | Boundary::Reflect
        )
    }

    /// Where the halo point at coordinate `p` (outside `0..n`) of a dimension with `n`
    /// interior points gets its value from, per the semantics on [`Boundary`].
    ///
    /// For a coordinate inside `0..n` it returns `HaloSource::Interior(p)` whatever the
    /// condition.
    ///
    /// # Panics
    /// If `n` is zero.
    pub fn source(&self, p: isize, n: usize) -> HaloSource<T> {
        assert!(n > 0, "a dimension has at least one interior point");
        let n_signed = n as isize;
        if (0..n_signed).contains(&p) {
            return HaloSource::Interior(p as usize);
        }
        let q = match *self {
            Boundary::Dirichlet(v) => return HaloSource::Value(v),
            Boundary::UserManaged => return HaloSource::Untouched,
            Boundary::Periodic => p.rem_euclid(n_signed),
            Boundary::ZeroGradient => p.clamp(0, n_signed - 1),
            Boundary::Reflect if n == 1 => 0,
            Boundary::Reflect => {
                let period = 2 * (n_signed - 1);
                let m = p.rem_euclid(period);
                if m >= n_signed { period - m } else { m }
            }
        };
        HaloSource::Interior(q as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interior(b: Boundary<f64>, p: isize, n: usize) -> usize {
        match b.source(p, n) {
            HaloSource::Interior(q) => q,
            other => panic!("{b:?} at {p} of {n} gave {other:?}"),
        }
    }

    #[test]
    fn reflect_matches_numpy_reflect() {
        // numpy.pad(np.arange(5), 7, mode='reflect') =
        // [1 2 3 4 3 2 1 | 0 1 2 3 4 | 3 2 1 0 1 2 3]
        let low = [1, 2, 3, 4, 3, 2, 1];
        let high = [3, 2, 1, 0, 1, 2, 3];
        for (k, &want) in low.iter().enumerate() {
            assert_eq!(interior(Boundary::Reflect, k as isize - 7, 5), want);
        }
        for (k, &want) in high.iter().enumerate() {
            assert_eq!(interior(Boundary::Reflect, 5 + k as isize, 5), want);
        }
        // n == 2: [... 1 0 1 | 0 1 | 0 1 0 ...]
        assert_eq!(interior(Boundary::Reflect, -1, 2), 1);
        assert_eq!(interior(Boundary::Reflect, -2, 2), 0);
        assert_eq!(interior(Boundary::Reflect, 2, 2), 0);
        assert_eq!(interior(Boundary::Reflect, 3, 2), 1);
        // n == 1 falls back to zero-gradient.
        assert_eq!(interior(Boundary::Reflect, -3, 1), 0);
        assert_eq!(interior(Boundary::Reflect, 4, 1), 0);
    }

    #[test]
    fn periodic_and_zero_gradient_sources() {
        assert_eq!(interior(Boundary::Periodic, -1, 5), 4);
        assert_eq!(interior(Boundary::Periodic, -7, 5), 3);
        assert_eq!(interior(Boundary::Periodic, 5, 5), 0);
        assert_eq!(interior(Boundary::Periodic, 11, 5), 1);
        assert_eq!(interior(Boundary::ZeroGradient, -3, 5), 0);
        assert_eq!(interior(Boundary::ZeroGradient, 9, 5), 4);
        assert_eq!(
            Boundary::Dirichlet(1.5).source(-1, 5),
            HaloSource::Value(1.5)
        );
        assert_eq!(
            Boundary::<f64>::UserManaged.source(6, 5),
            HaloSource::Untouched
        );
        assert_eq!(
            Boundary::Dirichlet(1.5).source(2, 5),
            HaloSource::Interior(2)
        );
    }

    #[test]
    fn only_copying_conditions_depend_on_interior() {
        assert!(Boundary::<f32>::Periodic.depends_on_interior());
        assert!(Boundary::<f32>::ZeroGradient.depends_on_interior());
        assert!(Boundary::<f32>::Reflect.depends_on_interior());
        assert!(!Boundary::Dirichlet(0.0f32).depends_on_interior());
        assert!(!Boundary::<f32>::UserManaged.depends_on_interior());
        assert_eq!(Side::Low.index(), 0);
        assert_eq!(Side::High.index(), 1);
    }
}
