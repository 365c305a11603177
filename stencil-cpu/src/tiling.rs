//! How a schedule's tile extents cut the interior into tiles, and tiles into rows.
//!
//! A tile is a box of interior points; the tiles of a [`Tiling`] partition the interior (each
//! point lies in exactly one tile). Tile extents are clamped to the interior (0 means the whole
//! extent) and need not divide it: the last tile of a dimension is shorter. A *row* is the run
//! of a tile's points that share every index but the last: it is contiguous in every grid. A
//! *row run* is the tile's rows that share every index but the last two: consecutive rows of
//! a run are one stride of the second-to-last dimension apart in each grid.
//!
//! Executors walk runs and step through their rows by adding a stride, so the per-row work is
//! a few loads, an add and the stores the point loop's arguments need. Per-row stores are what
//! costs: after a row, its output writes fill the store queue while they wait for their cache
//! lines, and every further store (or a load that cannot be forwarded from a store of another
//! width) waits with them, delaying the next row's loads.

use stencil_core::{Geometry, MAX_DIMS};

/// The tiles of an interior of `shape` under given tile extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tiling {
    n_dims: usize,
    shape: [usize; MAX_DIMS],
    /// Clamped tile extents: between 1 and the interior extent; 1 beyond `n_dims`.
    tile: [usize; MAX_DIMS],
    /// Number of tiles along each dimension; 1 beyond `n_dims`.
    counts: [usize; MAX_DIMS],
    /// Where the tiled box starts in the interior (0 for a tiling of the whole interior).
    offset: [usize; MAX_DIMS],
}

/// One tile: the half-open index range `start[d]..end[d]` in each dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) start: [usize; MAX_DIMS],
    pub(crate) end: [usize; MAX_DIMS],
}

impl Tiling {
    /// Tiles of the interior `shape` (1 to [`MAX_DIMS`] non-zero extents) with extents `tile`
    /// (one entry per dimension used; 0 or more than the extent means the whole extent).
    pub(crate) fn new(shape: &[usize], tile: &[usize; MAX_DIMS]) -> Tiling {
        let n_dims = shape.len();
        assert!(
            (1..=MAX_DIMS).contains(&n_dims) && shape.iter().all(|&n| n > 0),
            "stencil-cpu tiling: invalid interior shape {shape:?} (Job::new rules it out)"
        );
        let mut full = [1; MAX_DIMS];
        let mut clamped = [1; MAX_DIMS];
        let mut counts = [1; MAX_DIMS];
        for d in 0..n_dims {
            full[d] = shape[d];
            clamped[d] = if tile[d] == 0 {
                shape[d]
            } else {
                tile[d].min(shape[d])
            };
            counts[d] = shape[d].div_ceil(clamped[d]);
        }
        Tiling {
            n_dims,
            shape: full,
            tile: clamped,
            counts,
            offset: [0; MAX_DIMS],
        }
    }

    /// The same tiles moved by `offset` in the interior: the tiling of the box of extents
    /// `shape` (as given to [`new`](Self::new)) that starts at `offset`.
    pub(crate) fn shifted(mut self, offset: [usize; MAX_DIMS]) -> Tiling {
        self.offset = offset;
        self
    }

    /// Number of tiles.
    pub(crate) fn n_tiles(&self) -> usize {
        self.counts.iter().product()
    }

    /// The longest row any tile has (the clamped tile extent of the last dimension).
    pub(crate) fn max_row_len(&self) -> usize {
        self.tile[self.n_dims - 1]
    }

    /// The tiles' extent along dimension `d` (clamped to the interior; the last tile of the
    /// dimension may be shorter).
    pub(crate) fn extent(&self, d: usize) -> usize {
        self.tile[d]
    }

    /// Tile number `index` (`0..n_tiles()`, C order over the tile grid).
    pub(crate) fn tile(&self, index: usize) -> Tile {
        debug_assert!(index < self.n_tiles());
        let mut rest = index;
        let mut start = [0; MAX_DIMS];
        let mut end = [1; MAX_DIMS];
        for d in (0..self.n_dims).rev() {
            let block = rest % self.counts[d];
            rest /= self.counts[d];
            start[d] = block * self.tile[d];
            end[d] = (start[d] + self.tile[d]).min(self.shape[d]) + self.offset[d];
            start[d] += self.offset[d];
        }
        Tile { start, end }
    }
}

impl Tile {
    /// Calls `run(bases, n_rows, len, first)` for every row run of this box of an `n_dims`-dimensional
    /// interior, in storage order (a box need not belong to a tiling: the time loop's blocks
    /// are boxes of their own): `bases[g]` is the storage index, in the grid of layout
    /// `grids[g]`, of the run's first point; the run has `n_rows` rows of `len` points, and row
    /// `r` starts at `bases[g] + r * row_stride(&grids[g])`. `bases` is the caller's buffer of
    /// `grids.len()` entries; `first` is the interior index of the run's first point. Nothing
    /// is called for an empty box.
    #[inline]
    pub(crate) fn for_each_run(
        &self,
        n_dims: usize,
        grids: &[Geometry],
        bases: &mut [usize],
        mut run: impl FnMut(&[usize], usize, usize, &[usize; MAX_DIMS]),
    ) {
        self.for_each_block(
            n_dims,
            grids,
            bases,
            false,
            |bases, _, n_rows, len, first| run(bases, n_rows, len, first),
        );
    }

    /// [`for_each_run`](Self::for_each_run), with the runs of a 3-D (or more) box gathered
    /// along the third-innermost dimension (the planes, [`plane_dim`]) when `planes`:
    /// `run(bases, n_planes, n_rows, len, first)` for each block of `n_planes` planes of
    /// `n_rows` rows, plane `p`'s row `r` starting at
    /// `bases[g] + p * plane_stride(&grids[g]) + r * row_stride(&grids[g])`. Otherwise, and
    /// below three dimensions, `n_planes` is 1.
    #[inline]
    pub(crate) fn for_each_block(
        &self,
        n_dims: usize,
        grids: &[Geometry],
        bases: &mut [usize],
        planes: bool,
        mut run: impl FnMut(&[usize], usize, usize, usize, &[usize; MAX_DIMS]),
    ) {
        assert_eq!(grids.len(), bases.len(), "one base per grid");
        let tile = *self;
        if (0..n_dims).any(|d| tile.start[d] >= tile.end[d]) {
            return;
        }
        let last = n_dims - 1;
        let len = tile.end[last] - tile.start[last];
        // Dimensions below `outer` index the runs; a 1-D tile is one run of one row.
        let mut outer = last.saturating_sub(1);
        let n_rows = if last == 0 {
            1
        } else {
            tile.end[outer] - tile.start[outer]
        };
        let n_planes = if planes && n_dims >= 3 {
            outer -= 1;
            tile.end[outer] - tile.start[outer]
        } else {
            1
        };
        let mut point = tile.start;
        for (base, geom) in bases.iter_mut().zip(grids) {
            *base = storage_index(geom, &point);
        }
        loop {
            run(bases, n_planes, n_rows, len, &point);
            // Advance the odometer over the dimensions that index runs, and the bases with
            // it by strides: recomputed from `point`, whose entries were just stored one at a
            // time, the bases' vectorised dot product waited on a failed store-to-load
            // forwarding at every run.
            let mut d = outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                point[d] += 1;
                if point[d] < tile.end[d] {
                    for (base, geom) in bases.iter_mut().zip(grids) {
                        *base += geom.strides[d];
                    }
                    break;
                }
                let back = point[d] - 1 - tile.start[d];
                point[d] = tile.start[d];
                for (base, geom) in bases.iter_mut().zip(grids) {
                    *base -= back * geom.strides[d];
                }
            }
        }
    }
}

/// The dimension along which [`Tile::for_each_block`] gathers planes: the third-innermost
/// (the outermost in 3-D); 0 below three dimensions.
pub(crate) fn plane_dim(n_dims: usize) -> usize {
    n_dims.saturating_sub(3)
}

/// Distance in storage between consecutive planes of a block ([`Tile::for_each_block`]) in a
/// grid of layout `geom`; 0 below three dimensions.
pub(crate) fn plane_stride(geom: &Geometry) -> usize {
    if geom.n_dims >= 3 {
        geom.strides[geom.n_dims - 3]
    } else {
        0
    }
}

/// Distance in storage between consecutive rows of a run, in a grid of layout `geom` (the
/// stride of the second-to-last dimension; 0 in 1-D, where runs have one row).
pub(crate) fn row_stride(geom: &Geometry) -> usize {
    if geom.n_dims >= 2 {
        geom.strides[geom.n_dims - 2]
    } else {
        0
    }
}

/// Storage index, in a grid of layout `geom`, of the interior point `point`.
#[inline(always)]
pub(crate) fn storage_index(geom: &Geometry, point: &[usize; MAX_DIMS]) -> usize {
    // Strides are 0 beyond the grid's dimensions, so the extra entries add nothing.
    let mut index = geom.origin;
    for (p, s) in point.iter().zip(geom.strides) {
        index += p * s;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that the rows of all tiles cover every interior point of `shape` exactly once,
    /// in two grids of different halos at once, and touch nothing else: as runs, and as
    /// blocks of planes.
    fn check_partition(shape: &[usize], tile: [usize; MAX_DIMS]) {
        for planes in [false, true] {
            check_blocks(shape, tile, planes);
        }
    }

    fn check_blocks(shape: &[usize], tile: [usize; MAX_DIMS], planes: bool) {
        let tiling = Tiling::new(shape, &tile);
        let grids = [
            Geometry::new(shape, 0, 8).unwrap(),
            Geometry::new(shape, 3, 4).unwrap(),
        ];
        let mut visits = [vec![0u32; grids[0].len], vec![0u32; grids[1].len]];
        let mut bases = [0; 2];
        let n_dims = shape.len();
        for t in 0..tiling.n_tiles() {
            let tile = tiling.tile(t);
            let mut each = |bases: &[usize], n_planes, n_rows, len, first: &[usize; MAX_DIMS]| {
                assert!(len >= 1 && len <= tiling.max_row_len());
                assert!(n_rows >= 1 && n_planes >= 1);
                // A block spans its tile's planes in 3-D and more, when asked.
                let pd = plane_dim(n_dims);
                let whole = tile.end[pd] - tile.start[pd];
                assert_eq!(n_planes, if planes && n_dims >= 3 { whole } else { 1 });
                // The bases advance by strides; they must stay those of the first point.
                for (&base, geom) in bases.iter().zip(&grids) {
                    assert_eq!(base, storage_index(geom, first), "run at {first:?}");
                }
                for ((seen, &base), geom) in visits.iter_mut().zip(bases).zip(&grids) {
                    for p in 0..n_planes {
                        for r in 0..n_rows {
                            let start = base + p * plane_stride(geom) + r * row_stride(geom);
                            for count in &mut seen[start..start + len] {
                                *count += 1;
                            }
                        }
                    }
                }
            };
            if planes {
                tile.for_each_block(n_dims, &grids, &mut bases, true, each);
            } else {
                tile.for_each_run(n_dims, &grids, &mut bases, |bases, n_rows, len, first| {
                    each(bases, 1, n_rows, len, first)
                });
            }
        }
        for (geom, seen) in grids.iter().zip(&visits) {
            let mut expected = vec![0u32; geom.len];
            let mut point = vec![0isize; shape.len()];
            'points: loop {
                expected[geom.index(&point)] = 1;
                for d in (0..shape.len()).rev() {
                    point[d] += 1;
                    if (point[d] as usize) < shape[d] {
                        continue 'points;
                    }
                    point[d] = 0;
                }
                break;
            }
            assert!(
                *seen == expected,
                "shape {shape:?} tile {tile:?} halo {} planes {planes}",
                geom.halo
            );
        }
    }

    #[test]
    fn tiles_partition_the_interior() {
        let cases: [(&[usize], [usize; MAX_DIMS]); 9] = [
            (&[7, 5, 13], [3, 5, 7, 0]),
            (&[7, 5, 13], [0, 0, 0, 0]),
            (&[7, 5, 13], [1, 1, 0, 0]),
            (&[7, 5, 13], [100, 100, 100, 0]),
            (&[1, 1, 1], [3, 5, 7, 0]),
            (&[11, 29], [4, 3, 0, 0]),
            (&[10007], [4096, 0, 0, 0]),
            (&[3, 2, 5, 7], [2, 1, 3, 4]),
            (&[2, 17], [0, 1, 0, 0]),
        ];
        for (shape, tile) in cases {
            check_partition(shape, tile);
        }
    }

    #[test]
    fn clamping_and_counts() {
        let t = Tiling::new(&[7, 5, 13], &[3, 0, 100, 0]);
        assert_eq!(t.n_tiles(), 3);
        assert_eq!(t.max_row_len(), 13);
        assert_eq!(
            t.tile(2),
            Tile {
                start: [6, 0, 0, 0],
                end: [7, 5, 13, 1]
            }
        );
        let t = Tiling::new(&[10], &[3, 0, 0, 0]);
        assert_eq!(t.n_tiles(), 4);
        assert_eq!(t.max_row_len(), 3);
    }

    #[test]
    fn storage_index_matches_geometry() {
        let g = Geometry::new(&[5, 7, 13], 2, 8).unwrap();
        let p = [4, 6, 12, 0];
        assert_eq!(storage_index(&g, &p), g.index(&[4, 6, 12]));
        assert_eq!(storage_index(&g, &[0; MAX_DIMS]), g.origin);
    }
}
