//! How a global interior is cut into one box per rank: a Cartesian process grid, chosen to
//! minimise the halo surface, and the boxes it gives.
//!
//! Pure arithmetic, with no MPI in it, so the rules are tested without an MPI library.

use stencil_core::{Error, ErrorKind, Result};

/// A block decomposition of an interior of `shape` over a process grid of `dims` ranks per
/// dimension (`dims` multiply to the rank count).
///
/// Ranks are numbered in C order over the process grid (the last dimension fastest), as an
/// MPI Cartesian communicator numbers them without reordering. Along dimension `d`, the
/// `shape[d]` points are split into `dims[d]` contiguous parts whose sizes differ by at most
/// one, the larger parts first: part `c` starts at `c * (n / p) + min(c, n % p)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Decomposition<const D: usize> {
    shape: [usize; D],
    dims: [usize; D],
}

impl<const D: usize> Decomposition<D> {
    /// The decomposition of `shape` over `ranks` ranks that cuts the least surface (the sum,
    /// over the cuts, of the area of each cut plane), among the process grids whose every part
    /// along a cut dimension holds at least `min_part` points; ties go to the grid that cuts
    /// outer dimensions more (rows along the unit-stride dimension stay long).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] when no process grid of `ranks` ranks leaves every part at
    /// least `min_part` points (the grid is too small for that many ranks and that halo), or
    /// when `ranks` is 0.
    pub fn new(shape: [usize; D], ranks: usize, min_part: usize) -> Result<Self> {
        if ranks == 0 {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                "no rank to decompose over",
            ));
        }
        let mut best: Option<([usize; D], u128)> = None;
        let mut dims = [1usize; D];
        factorisations(ranks, 0, &mut dims, &mut |dims| {
            if !fits(&shape, dims, min_part) {
                return;
            }
            let cost = cut_surface(&shape, dims);
            // Factorisations come in lexicographic order of `dims`, so on a tie the later
            // one cuts earlier dimensions more.
            if best.is_none_or(|(_, c)| cost <= c) {
                best = Some((*dims, cost));
            }
        });
        match best {
            Some((dims, _)) => Ok(Decomposition { shape, dims }),
            None => Err(Error::new(
                ErrorKind::InvalidShape,
                format!(
                    "an interior of {shape:?} cannot be cut over {ranks} ranks into parts of at \
                     least {min_part} points along every cut dimension (the halo and ghost \
                     depth need that many); use fewer ranks or a larger grid"
                ),
            )),
        }
    }

    /// The decomposition over the process grid `dims` given by the caller.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidShape`] when an entry of `dims` is 0, or a part along a cut
    /// dimension would hold fewer than `min_part` points (or none).
    pub fn with_dims(shape: [usize; D], dims: [usize; D], min_part: usize) -> Result<Self> {
        if dims.contains(&0) {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!("process grid {dims:?} has a dimension of no rank"),
            ));
        }
        if !fits(&shape, &dims, min_part) {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!(
                    "process grid {dims:?} cuts the interior {shape:?} into parts of fewer than \
                     {} points along some dimension (the halo and ghost depth need at least \
                     {min_part}, and every part at least one)",
                    min_part.max(1)
                ),
            ));
        }
        Ok(Decomposition { shape, dims })
    }

    /// The global interior's extents.
    pub fn shape(&self) -> [usize; D] {
        self.shape
    }

    /// Ranks along each dimension.
    pub fn dims(&self) -> [usize; D] {
        self.dims
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.dims.iter().product()
    }

    /// The process-grid coordinates of `rank` (C order).
    pub fn coords(&self, rank: usize) -> [usize; D] {
        let mut rest = rank;
        let mut c = [0; D];
        for d in (0..D).rev() {
            c[d] = rest % self.dims[d];
            rest /= self.dims[d];
        }
        c
    }

    /// The rank at process-grid coordinates `coords`.
    pub fn rank_of(&self, coords: [usize; D]) -> usize {
        coords
            .iter()
            .zip(&self.dims)
            .fold(0, |r, (&c, &p)| r * p + c)
    }

    /// The first point of part `c` of dimension `d` (`c == dims[d]` gives the extent).
    pub fn start(&self, d: usize, c: usize) -> usize {
        let (n, p) = (self.shape[d], self.dims[d]);
        c * (n / p) + c.min(n % p)
    }

    /// The box `rank` owns: `lo[d]..hi[d]` along each dimension, in global coordinates.
    pub fn owned(&self, rank: usize) -> ([usize; D], [usize; D]) {
        let c = self.coords(rank);
        (
            std::array::from_fn(|d| self.start(d, c[d])),
            std::array::from_fn(|d| self.start(d, c[d] + 1)),
        )
    }

    /// The part of dimension `d` holding global coordinate `x` (in `0..shape[d]`).
    pub fn part_of(&self, d: usize, x: usize) -> usize {
        let (n, p) = (self.shape[d], self.dims[d]);
        let (q, r) = (n / p, n % p);
        // The first `r` parts hold `q + 1` points.
        if x < r * (q + 1) {
            x / (q + 1)
        } else {
            r + (x - r * (q + 1)) / q
        }
    }

    /// The rank owning global interior point `x`.
    pub fn owner(&self, x: [usize; D]) -> usize {
        self.rank_of(std::array::from_fn(|d| self.part_of(d, x[d])))
    }
}

/// Whether every part of every cut dimension holds at least `min_part` points (and every part
/// of every dimension at least one).
fn fits<const D: usize>(shape: &[usize; D], dims: &[usize; D], min_part: usize) -> bool {
    (0..D).all(|d| {
        let smallest = shape[d] / dims[d];
        smallest >= 1 && (dims[d] == 1 || smallest >= min_part)
    })
}

/// The total area of the planes that cut the interior.
fn cut_surface<const D: usize>(shape: &[usize; D], dims: &[usize; D]) -> u128 {
    (0..D)
        .map(|d| {
            let plane: u128 = (0..D)
                .filter(|&e| e != d)
                .map(|e| shape[e] as u128)
                .product();
            (dims[d] as u128 - 1) * plane
        })
        .sum()
}

/// Calls `f` with every way of writing `rest` as a product of the entries `d..` of `dims`,
/// in lexicographic order.
fn factorisations<const D: usize>(
    rest: usize,
    d: usize,
    dims: &mut [usize; D],
    f: &mut impl FnMut(&[usize; D]),
) {
    if d + 1 >= D {
        if D > 0 {
            dims[D - 1] = rest;
        }
        f(dims);
        return;
    }
    for p in 1..=rest {
        if rest.is_multiple_of(p) {
            dims[d] = p;
            factorisations(rest / p, d + 1, dims, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_each_dimension_once_and_differ_by_at_most_one() {
        for n in [5usize, 7, 64, 101] {
            for p in 1..=5.min(n) {
                let dec = Decomposition::<1>::with_dims([n], [p], 1).unwrap();
                let sizes: Vec<usize> = (0..p)
                    .map(|c| dec.start(0, c + 1) - dec.start(0, c))
                    .collect();
                assert_eq!(sizes.iter().sum::<usize>(), n);
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
                for x in 0..n {
                    let c = dec.part_of(0, x);
                    assert!(
                        (dec.start(0, c)..dec.start(0, c + 1)).contains(&x),
                        "{n} {p} {x}"
                    );
                }
            }
        }
    }

    #[test]
    fn ranks_and_coordinates_are_c_order() {
        let dec = Decomposition::<3>::with_dims([8, 9, 10], [2, 3, 1], 1).unwrap();
        assert_eq!(dec.ranks(), 6);
        assert_eq!(dec.coords(4), [1, 1, 0]);
        for r in 0..6 {
            assert_eq!(dec.rank_of(dec.coords(r)), r);
        }
        assert_eq!(dec.owned(5), ([4, 6, 0], [8, 9, 10]));
        assert_eq!(dec.owner([5, 3, 9]), 4);
    }

    #[test]
    fn the_least_surface_wins() {
        // A cube over 4 ranks: two cuts (2 x 2) cut 2 planes, one dimension cut 3 planes.
        let dec = Decomposition::<3>::new([64, 64, 64], 4, 1).unwrap();
        assert_eq!(dec.dims(), [2, 2, 1]);
        // Two ranks cut the outermost dimension of a cube.
        assert_eq!(
            Decomposition::<3>::new([64, 64, 64], 2, 1).unwrap().dims(),
            [2, 1, 1]
        );
        // A slab thin in dimension 0 is cut along the others.
        assert_eq!(
            Decomposition::<3>::new([4, 64, 64], 2, 1).unwrap().dims(),
            [1, 2, 1]
        );
        // Prime rank counts on a 2-D grid.
        assert_eq!(
            Decomposition::<2>::new([30, 90], 3, 1).unwrap().dims(),
            [1, 3]
        );
    }

    #[test]
    fn too_small_grids_are_refused() {
        let e = Decomposition::<1>::new([7], 4, 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidShape);
        assert!(Decomposition::<1>::new([8], 4, 2).is_ok());
        assert!(Decomposition::<2>::with_dims([8, 8], [3, 1], 3).is_err());
        assert!(Decomposition::<2>::with_dims([8, 8], [0, 1], 1).is_err());
        assert!(Decomposition::<2>::new([8, 8], 0, 1).is_err());
        // Minimal parts are fine on a dimension that is not cut.
        assert!(Decomposition::<2>::with_dims([1, 8], [1, 2], 4).is_ok());
    }
}
