//! The schedule space of the CPU backend for one kernel and interior shape, derived from the
//! machine's capabilities ([`Machine`]): only legal schedules are enumerable (Kamil et al.'s
//! strategy engine, 000_..., section VI), so a tuner can sweep or sample it blindly.
//!
//! Axes, after Datta et al.'s Table 2 (002_..., section 4):
//! - core blocks `(CZ, CY, CX)` ([`CpuSchedule::tile`]): the unit-stride extent `CX` is the
//!   whole row, or for rows of 4096 points and more a quarter row (a power of two); a middle
//!   extent `CY` is the whole extent or a power of two of at least 16 rows and an eighth of
//!   the extent whose working set (`2r + 1` planes of `CY x CX` points of every input) fits in
//!   the second-level cache; the outer extent `CZ` gives 1, 2 or 4 blocks per worker. A shape
//!   with fewer core blocks than workers (a thread without work) is illegal.
//! - chunks of core blocks dealt to threads ([`CpuSchedule::chunk`]): one contiguous range per
//!   thread (0), or single blocks round-robin (1);
//! - thread blocks: one thread per core here (no SMT), so a thread block is its core block;
//! - register / unit-stride blocks ([`CpuSchedule::row_block`]): the whole row, or 512 points
//!   for rows longer than 1024 (unroll-and-jam across rows is not in the space: the generated
//!   point loop is one row wide, and LLVM unrolls it along the row);
//! - stores ([`CpuSchedule::stores`]): plain, and streaming where the machine has them;
//! - software prefetch ([`CpuSchedule::prefetch`]): none or 2 rows ahead.
//!
//! The space excludes `force_generic` (a fallback, not a speed option) and the thread count
//! (a property of the backend's pool).

use stencil_core::{CpuSchedule, CpuStores, Kernel, MAX_DIMS, analysis};

use crate::machine::Machine;
use crate::streaming::StreamWidth;

/// The legal schedules for one kernel on one interior shape and pool size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleSpace {
    tiles: Vec<[usize; MAX_DIMS]>,
    chunks: Vec<usize>,
    row_blocks: Vec<usize>,
    stores: Vec<CpuStores>,
    prefetch: Vec<usize>,
}

impl ScheduleSpace {
    /// The space for `kernel` on an interior of `shape` run by `workers` threads of `machine`.
    ///
    /// # Panics
    /// If `shape` does not have the kernel's dimension count.
    pub fn new(machine: &Machine, kernel: &Kernel, shape: &[usize], workers: usize) -> Self {
        assert_eq!(
            shape.len(),
            kernel.n_dims,
            "schedule space: shape of the wrong rank"
        );
        let n_dims = shape.len();
        let workers = workers.max(1);
        let elem = kernel.elem().size_bytes();
        let vector_elems = (machine.vector.bytes() / elem).max(1);
        let radius = analysis::radius(kernel);
        let n_inputs = kernel.inputs().count().max(1);
        let last = n_dims - 1;
        let row = shape[last];

        let powers = |low: usize, below: usize| {
            (0..usize::BITS)
                .map(|k| 1usize << k)
                .skip_while(move |&p| p < low)
                .take_while(move |&p| p < below)
        };
        // Unit-stride extent: whole, or for long rows (4096 points and more) a quarter row
        // rounded to a power of two (shorter rows only add per-row overhead).
        let mut cx: Vec<usize> = vec![0];
        if row >= 4096 {
            cx.push(1 << (row / 4).ilog2());
        }
        // Middle extents (3-D and more): whole, or powers of two of at least 16 rows and an
        // eighth of the extent whose working set fits in the second-level cache.
        let planes = 2 * radius.in_dim(0) as usize + 1;
        let fits = |cy: usize, cx: usize| {
            let cx = if cx == 0 { row } else { cx };
            planes * cy * cx * elem * n_inputs <= machine.l2_bytes
        };
        let mut tiles = Vec::new();
        for &x in &cx {
            let mut middles: Vec<usize> = vec![0];
            if n_dims >= 3 {
                let extent = shape[last - 1];
                middles.extend(powers(16.max(extent / 8), extent).filter(|&cy| fits(cy, x)));
            }
            for &y in &middles {
                let mut outers: Vec<usize> = Vec::new();
                for per_worker in [1, 2, 4] {
                    let z = shape[0].div_ceil(workers * per_worker).max(1);
                    if !outers.contains(&z) {
                        outers.push(z);
                    }
                }
                for &z in &outers {
                    let mut tile = [0; MAX_DIMS];
                    tile[0] = z;
                    if n_dims >= 3 {
                        tile[last - 1] = y;
                    }
                    if n_dims >= 2 {
                        tile[last] = x;
                    } else {
                        tile[0] = if x == 0 { z } else { x.min(z) };
                    }
                    let blocks: usize = (0..n_dims)
                        .map(|d| {
                            let t = if tile[d] == 0 { shape[d] } else { tile[d] };
                            shape[d].div_ceil(t)
                        })
                        .product();
                    if blocks >= workers && !tiles.contains(&tile) {
                        tiles.push(tile);
                    }
                }
            }
        }
        if tiles.is_empty() {
            // Fewer points than workers: one block per outer index is the only choice.
            let mut tile = [0; MAX_DIMS];
            tile[0] = 1;
            tiles.push(tile);
        }
        // Point-loop blocks: the whole row, or for long rows (over 1024 points) 512 points,
        // which keeps a streaming run's buffers in the first-level cache.
        let mut row_blocks = vec![0];
        if row > 1024 && 512 >= 32 * vector_elems {
            row_blocks.push(512);
        }
        let mut stores = vec![CpuStores::Plain];
        if machine.vector != StreamWidth::None {
            stores.push(CpuStores::Streaming);
        }
        ScheduleSpace {
            tiles,
            chunks: if workers > 1 { vec![0, 1] } else { vec![0] },
            row_blocks,
            stores,
            prefetch: vec![0, 2],
        }
    }

    /// Number of schedules.
    pub fn len(&self) -> usize {
        self.tiles.len()
            * self.chunks.len()
            * self.row_blocks.len()
            * self.stores.len()
            * self.prefetch.len()
    }

    /// Whether the space is empty (never: every space holds at least one schedule).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedule number `index` (`0..len()`), mixed radix over the axes.
    ///
    /// # Panics
    /// If `index >= len()`.
    pub fn get(&self, index: usize) -> CpuSchedule {
        assert!(index < self.len(), "schedule {index} of {}", self.len());
        let mut rest = index;
        let mut pick = |n: usize| {
            let k = rest % n;
            rest /= n;
            k
        };
        let prefetch = self.prefetch[pick(self.prefetch.len())];
        let stores = self.stores[pick(self.stores.len())];
        let row_block = self.row_blocks[pick(self.row_blocks.len())];
        let chunk = self.chunks[pick(self.chunks.len())];
        let tile = self.tiles[pick(self.tiles.len())];
        CpuSchedule {
            tile,
            threads: 0,
            force_generic: false,
            chunk,
            row_block,
            stores,
            prefetch,
        }
    }

    /// Every schedule of the space.
    pub fn iter(&self) -> impl Iterator<Item = CpuSchedule> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Whether `schedule` is in the space.
    pub fn contains(&self, schedule: &CpuSchedule) -> bool {
        schedule.threads == 0
            && !schedule.force_generic
            && self.tiles.contains(&schedule.tile)
            && self.chunks.contains(&schedule.chunk)
            && self.row_blocks.contains(&schedule.row_block)
            && self.stores.contains(&schedule.stores)
            && self.prefetch.contains(&schedule.prefetch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Topology;
    use stencil_core::{ElemType, KernelBuilder};

    fn star(n_dims: usize) -> Kernel {
        let mut b = KernelBuilder::new("star", n_dims, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let mut sum = b.read(u, &vec![0; n_dims]);
        for d in 0..n_dims {
            for s in [-1, 1] {
                let mut offset = vec![0; n_dims];
                offset[d] = s;
                let r = b.read(u, &offset);
                sum = b.add(sum, r);
            }
        }
        b.store(out, sum);
        b.finish().unwrap()
    }

    fn machine(vector: StreamWidth, l2_bytes: usize) -> Machine {
        Machine {
            cores: 2,
            l1_bytes: 48 << 10,
            l2_bytes,
            llc_bytes: 32 << 20,
            vector,
            topology: Topology::new(vec![vec![0, 1]]),
        }
    }

    #[test]
    fn every_enumerated_schedule_is_legal_and_distinct() {
        let m = machine(StreamWidth::Avx512, 2 << 20);
        let space = ScheduleSpace::new(&m, &star(3), &[256, 256, 256], 2);
        assert!(space.len() > 20);
        let all: Vec<CpuSchedule> = space.iter().collect();
        for (i, s) in all.iter().enumerate() {
            assert!(space.contains(s));
            assert!(!all[..i].contains(s), "duplicate {s:?}");
            // Middle blocks fit in L2: 3 planes of CY x 256 f64.
            if s.tile[1] != 0 {
                assert!(3 * s.tile[1] * 256 * 8 <= 2 << 20);
                assert!(s.tile[1] >= 32 && s.tile[1].is_power_of_two());
            }
            // Every worker gets a block.
            assert!(256usize.div_ceil(s.tile[0]) >= 2);
        }
        assert!(all.iter().any(|s| s.stores == CpuStores::Streaming));
        assert!(!space.contains(&CpuSchedule {
            force_generic: true,
            ..all[0]
        }));
    }

    #[test]
    fn capabilities_shape_the_space() {
        let k = star(3);
        let small_l2 = ScheduleSpace::new(
            &machine(StreamWidth::Avx512, 64 << 10),
            &k,
            &[64, 256, 256],
            2,
        );
        let big_l2 = ScheduleSpace::new(
            &machine(StreamWidth::Avx512, 8 << 20),
            &k,
            &[64, 256, 256],
            2,
        );
        assert!(small_l2.len() < big_l2.len());
        let no_streaming =
            ScheduleSpace::new(&machine(StreamWidth::None, 2 << 20), &k, &[64, 256, 256], 2);
        assert!(no_streaming.iter().all(|s| s.stores == CpuStores::Plain));
        // Tiny shapes and one worker still give a non-empty space.
        let tiny = ScheduleSpace::new(&machine(StreamWidth::Avx, 2 << 20), &star(2), &[1, 3], 4);
        assert!(!tiny.is_empty());
        let one_d = ScheduleSpace::new(&machine(StreamWidth::Sse2, 2 << 20), &star(1), &[5000], 1);
        assert!(one_d.iter().all(|s| s.chunk == 0));
    }
}
