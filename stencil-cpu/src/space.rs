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
//! - unit-stride blocks ([`CpuSchedule::row_block`]): the whole row, or 512 points for rows
//!   longer than 1024;
//! - register blocks across rows ([`CpuSchedule::register_rows`], Datta's `RY`): 1 and every
//!   count the generated point loops jam ([`JAMMED_ROWS`]), for kernels of two dimensions or
//!   more whose loop is not retimed (the retimed loop and the generic path compute rows one at
//!   a time, so more would only repeat schedules). `RX` is the vector width times LLVM's
//!   unroll along the row, and `RZ` is 1;
//! - stores ([`CpuSchedule::stores`]): plain, and streaming where the machine has them;
//! - software prefetch ([`CpuSchedule::prefetch`]): none, 2 or 4 rows ahead;
//! - unit-stride padding ([`ScheduleSpace::row_paddings`]): 0 to 3 more cache lines per row
//!   for kernels of two dimensions or more. Padding is a property of a grid's layout, fixed
//!   when it is allocated ([`Grid::with_padding`](stencil_core::grid::Grid::with_padding)),
//!   so it is not a field of [`CpuSchedule`]: `Launch::search_padding` times the tuned
//!   schedule of each padding on grids allocated with it.
//!
//! The space excludes `force_generic` (a fallback, not a speed option) and the thread count
//! (a property of the backend's pool).

use stencil_core::passes::linear::retimed_stores;
use stencil_core::schedule::{DimValue, SearchSpace, TuningSpace};
use stencil_core::{CpuSchedule, CpuStores, JAMMED_ROWS, Kernel, MAX_DIMS, Schedule, analysis};

use crate::machine::Machine;
use crate::streaming::StreamWidth;

/// The legal schedules for one kernel on one interior shape and pool size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleSpace {
    shape: Vec<usize>,
    tiles: Vec<[usize; MAX_DIMS]>,
    chunks: Vec<usize>,
    row_blocks: Vec<usize>,
    register_rows: Vec<usize>,
    stores: Vec<CpuStores>,
    prefetch: Vec<usize>,
    row_paddings: Vec<usize>,
    /// What the default schedule's `Auto` stores become for this kernel and shape.
    auto_stores: CpuStores,
    /// What the default schedule's [`PREFETCH_AUTO`](stencil_core::PREFETCH_AUTO) becomes
    /// for this kernel and shape.
    auto_prefetch: usize,
    /// The default schedule's tiles for this kernel and shape (its slab cut included:
    /// `schedules::slab_rows`).
    default_tile: [usize; MAX_DIMS],
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
            planes * cy * cx * elem * n_inputs <= machine.l2()
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
        // The default schedule's blocks are always candidates, so the tuner can measure the
        // default first and never end up slower than it.
        let grid_bytes = shape.iter().product::<usize>()
            * elem
            * (kernel.inputs().count() + kernel.outputs().count());
        let default_tile = crate::schedules::default_tile(
            shape,
            workers,
            crate::schedules::slab_rows(
                shape,
                crate::schedules::slab_bytes_per_row(kernel, shape),
                grid_bytes,
                machine.llc_share(),
                (machine.l1(), machine.l2()),
            ),
        );
        if !tiles.contains(&default_tile) {
            tiles.push(default_tile);
        }
        if tiles.is_empty() {
            // Fewer points than workers: one block per outer index is the only choice.
            let mut tile = [0; MAX_DIMS];
            tile[0] = 1;
            tiles.push(tile);
        }
        // Point-loop blocks: the whole row, or for long rows (over 1024 points) 512 points,
        // which keeps the generic path's streaming buffers in the first-level cache.
        let mut row_blocks = vec![0];
        if row > 1024 && 512 >= 32 * vector_elems {
            row_blocks.push(512);
        }
        // Register blocks across rows: adjacent rows of the second-innermost dimension.
        let mut register_rows = vec![1];
        if n_dims >= 2 && retimed_stores(kernel).is_none() {
            register_rows.extend(JAMMED_ROWS);
        }
        let mut stores = vec![CpuStores::Plain];
        if machine.vector != StreamWidth::None {
            stores.push(CpuStores::Streaming);
        }
        let output_bytes = shape.iter().product::<usize>() * elem * kernel.outputs().count();
        let auto_stores = if stores.contains(&CpuStores::Streaming)
            && crate::schedules::auto_streams(output_bytes, machine.llc_share())
        {
            CpuStores::Streaming
        } else {
            CpuStores::Plain
        };
        let auto_prefetch = crate::schedules::prefetch_rows(
            stencil_core::PREFETCH_AUTO,
            grid_bytes,
            machine.llc_share(),
        );
        ScheduleSpace {
            shape: shape.to_vec(),
            tiles,
            chunks: if workers > 1 { vec![0, 1] } else { vec![0] },
            row_blocks,
            register_rows,
            stores,
            prefetch: vec![0, 2, 4],
            // Each line of padding moves consecutive rows (and planes) of a grid by one more
            // cache set against each other, and against the other grids' rows: 0 to 3 lines
            // cover the conflicts a window of rows can have (Datta et al.'s array padding).
            // One-dimensional grids have a single row, which padding does not move.
            row_paddings: if n_dims >= 2 {
                vec![0, 1, 2, 3]
            } else {
                vec![0]
            },
            auto_stores,
            auto_prefetch,
            default_tile,
        }
    }

    /// The row paddings worth timing, in cache lines beyond what `Geometry::new` gives: the
    /// layout axis of the space, searched at allocation time (see the module documentation).
    pub fn row_paddings(&self) -> &[usize] {
        &self.row_paddings
    }

    /// Number of schedules.
    pub fn len(&self) -> usize {
        self.tiles.len()
            * self.chunks.len()
            * self.row_blocks.len()
            * self.register_rows.len()
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
        let register_rows = self.register_rows[pick(self.register_rows.len())];
        let row_block = self.row_blocks[pick(self.row_blocks.len())];
        let chunk = self.chunks[pick(self.chunks.len())];
        let tile = self.tiles[pick(self.tiles.len())];
        CpuSchedule {
            tile,
            threads: 0,
            force_generic: false,
            chunk,
            row_block,
            register_rows,
            stores,
            prefetch,
            time_depth: 0,
            time_slab: 0,
        }
    }

    /// Every schedule of the space.
    pub fn iter(&self) -> impl Iterator<Item = CpuSchedule> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// This space as the tuner sees it: one dimension per grid axis holding the core-block
    /// extents along it (`block_z`, `block_y`, `block_x` in 3-D; the whole axis is its extent,
    /// so index neighbours are size neighbours; only combinations this space lists are
    /// legal), then `chunk` (`contiguous` or `round-robin`), `row_block` (0 = the whole row),
    /// `register_rows` (rows per register block), `stores` (`plain` or `streaming`) and
    /// `prefetch` (rows ahead). The default point is
    /// the backend's default schedule, its `Auto` stores spelled out as what they become for
    /// this kernel and shape on `machine` (so the tuner's baseline is what the default runs);
    /// blocks should fit in `cache_bytes` per thread (the
    /// second-level cache or the thread's share of the last level, whichever is larger); the
    /// peak is nominal (two fused multiply-adds per vector lane per cycle at 2.5 GHz).
    pub fn tuning_space(
        &self,
        machine: &Machine,
        elem_bytes: usize,
        workers: usize,
    ) -> TuningSpace {
        let n_dims = self.shape.len();
        let axis_names = ["w", "z", "y", "x"];
        let names = &axis_names[MAX_DIMS - n_dims..];
        // Per axis, the distinct extents of the listed blocks (whole axis = its extent).
        let axes: Vec<Vec<usize>> = (0..n_dims)
            .map(|d| {
                let mut v: Vec<usize> = self.tiles.iter().map(|t| self.extent(t, d)).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let mut space = SearchSpace::new();
        for (d, values) in axes.iter().enumerate() {
            space = space.with_ints(
                &format!("block_{}", names[d]),
                values.iter().map(|&v| v as i64),
            );
        }
        let chunk_name = |c: usize| if c == 0 { "contiguous" } else { "round-robin" };
        let store_name = |s: CpuStores| match s {
            CpuStores::Streaming => "streaming",
            _ => "plain",
        };
        space = space
            .with(
                "chunk",
                self.chunks
                    .iter()
                    .map(|&c| DimValue::Name(chunk_name(c).into()))
                    .collect(),
            )
            .with_ints("row_block", self.row_blocks.iter().map(|&r| r as i64))
            .with_ints(
                "register_rows",
                self.register_rows.iter().map(|&r| r as i64),
            )
            .with(
                "stores",
                self.stores
                    .iter()
                    .map(|&s| DimValue::Name(store_name(s).into()))
                    .collect(),
            )
            .with_ints("prefetch", self.prefetch.iter().map(|&p| p as i64));

        let this = self.clone();
        let axes_of = axes.clone();
        let schedule_of = move |point: &[usize]| {
            let listed = this
                .tiles
                .iter()
                .find(|t| (0..n_dims).all(|d| this.extent(t, d) == axes_of[d][point[d]]))?;
            let rest = &point[n_dims..];
            Some(Schedule::Cpu(CpuSchedule {
                tile: *listed,
                threads: 0,
                force_generic: false,
                chunk: this.chunks[rest[0]],
                row_block: this.row_blocks[rest[1]],
                register_rows: this.register_rows[rest[2]],
                stores: this.stores[rest[3]],
                prefetch: this.prefetch[rest[4]],
                time_depth: 0,
                time_slab: 0,
            }))
        };
        let default = CpuSchedule {
            tile: self.default_tile,
            ..crate::schedules::default_schedule(&self.shape, workers)
        };
        let default_point: Option<Vec<usize>> = (0..n_dims)
            .map(|d| {
                axes[d]
                    .iter()
                    .position(|&v| v == self.extent(&default.tile, d))
            })
            .chain([
                self.chunks.iter().position(|&c| c == default.chunk),
                self.row_blocks.iter().position(|&r| r == default.row_block),
                // Where only one row at a time is listed, every count runs that way.
                self.register_rows
                    .iter()
                    .position(|&r| {
                        r == crate::schedules::register_rows(
                            default.register_rows,
                            self.shape[n_dims - 1],
                            elem_bytes,
                            machine.l1(),
                        )
                    })
                    .or((self.register_rows.len() == 1).then_some(0)),
                self.stores.iter().position(|&s| s == self.auto_stores),
                self.prefetch.iter().position(|&p| p == self.auto_prefetch),
            ])
            .collect();
        let lanes = (machine.vector.bytes() / elem_bytes.max(1)).max(1);
        let mut tuning = TuningSpace::new(space, schedule_of);
        tuning.default_point = default_point;
        tuning.block_dims = (0..n_dims).map(Some).collect();
        tuning.cache_bytes = machine.l2().max(machine.llc_share() / workers.max(1));
        tuning.peak_flops = (workers.max(1) * lanes * 4) as f64 * 2.5e9;
        tuning.largest_cache_bytes = machine.llc_share();
        // What moves a memory-bound sweep's time most, first: the stores, register rows,
        // the inner blocks (blocked or not), prefetch, then the outer blocks, the chunks and
        // the row blocks.
        let (chunk, row_block, rows, stores, prefetch) =
            (n_dims, n_dims + 1, n_dims + 2, n_dims + 3, n_dims + 4);
        let mut screening = vec![stores, rows];
        screening.extend((1..n_dims).rev());
        screening.extend([prefetch, 0, chunk, row_block]);
        tuning.screening = screening;
        tuning.stores_dim = self
            .stores
            .iter()
            .position(|&s| s == CpuStores::Streaming)
            .map(|i| (stores, i));
        tuning
    }

    /// The extent of `tile`'s blocks along axis `d` (0 means the whole axis).
    fn extent(&self, tile: &[usize; MAX_DIMS], d: usize) -> usize {
        match tile[d] {
            0 => self.shape[d],
            t => t.min(self.shape[d]),
        }
    }

    /// Whether `schedule` is in the space.
    pub fn contains(&self, schedule: &CpuSchedule) -> bool {
        schedule.threads == 0
            && !schedule.force_generic
            && self.tiles.contains(&schedule.tile)
            && self.chunks.contains(&schedule.chunk)
            && self.row_blocks.contains(&schedule.row_block)
            && self.register_rows.contains(&schedule.register_rows)
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
            measured: None,
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

    #[test]
    fn middle_blocks_follow_the_effective_second_level_cache() {
        // Reported 8 MiB, measured 256 KiB: blocks of 3 planes of CY rows of 256 f64 fit in
        // the measured size, as on a machine that reports 256 KiB.
        let k = star(3);
        let shape = [64, 256, 256];
        let middles = |m: &Machine| {
            let mut cy: Vec<usize> = ScheduleSpace::new(m, &k, &shape, 2)
                .iter()
                .map(|s| s.tile[1])
                .collect();
            cy.sort_unstable();
            cy.dedup();
            cy
        };
        let mut measured = machine(StreamWidth::Avx512, 8 << 20);
        measured.measured = Some(stencil_core::CacheSizes {
            l1_bytes: 0,
            l2_bytes: 256 << 10,
            llc_bytes: 0,
        });
        // 32: the space's blocks; 20: the default's slab from memory, as many rows as fit
        // half the measured cache (3 planes of 256 f64 per row: 21, evened out to 20).
        assert_eq!(middles(&measured), [0, 20, 32]);
        assert_eq!(
            middles(&measured),
            middles(&machine(StreamWidth::Avx512, 256 << 10))
        );
        assert_eq!(
            middles(&machine(StreamWidth::Avx512, 8 << 20)),
            [0, 32, 64, 128]
        );
        // The model's cache figures: a measured 1 MiB last level (reported 32 MiB).
        measured.measured = Some(stencil_core::CacheSizes {
            l1_bytes: 0,
            l2_bytes: 256 << 10,
            llc_bytes: 1 << 20,
        });
        let tuning = ScheduleSpace::new(&measured, &k, &shape, 2).tuning_space(&measured, 8, 2);
        assert_eq!(
            tuning.cache_bytes,
            512 << 10,
            "the thread's share of the last level"
        );
        assert_eq!(tuning.largest_cache_bytes, 1 << 20);
    }

    #[test]
    fn in_cache_defaults_cut_planes_into_first_level_slabs() {
        // 64^3 f64, one input read at radius 1 along the planes: 3 rows of 64 points, 1536
        // bytes per row of a block; two thirds of a 48 KiB first-level cache hold 21 such
        // rows, evened out to 4 blocks of 16.
        let m = machine(StreamWidth::Avx512, 1 << 20);
        let k = star(3);
        let shape = [64, 64, 64];
        let slab = crate::schedules::slab_bytes_per_row(&k, &shape);
        assert_eq!(slab, 3 * 64 * 8);
        // An axis of 16 rows or fewer is never cut: no analysis, 0.
        assert_eq!(
            crate::schedules::slab_bytes_per_row(&k, &[64, crate::MIN_SLAB_ROWS, 64]),
            0
        );
        let grids = 2 * 64 * 64 * 64 * 8;
        let rows = |l1: usize, slab: usize, grids: usize| {
            crate::schedules::slab_rows(&shape, slab, grids, 32 << 20, (l1, 1 << 20))
        };
        assert_eq!(rows(48 << 10, slab, grids), Some(16));
        // f32: half the bytes, 42 rows fit: 2 blocks of 32.
        assert_eq!(rows(48 << 10, slab / 2, grids / 2), Some(32));
        // A 32 KiB cache holds 14 f64 rows, fewer than a block needs: planes stay whole.
        assert_eq!(rows(32 << 10, slab, grids), None);
        // Grids beyond the cache: half the 1 MiB second-level cache holds all 64 rows, so
        // planes stay whole; whole planes that fit, and no slab: whole planes.
        assert_eq!(rows(48 << 10, slab, (32 << 20) + 1), None);
        assert_eq!(rows(1 << 20, slab, grids), None);
        assert_eq!(rows(48 << 10, 0, grids), None);
        assert_eq!(
            crate::schedules::slab_rows(
                &[64, 64],
                3 * 64 * 8,
                grids,
                32 << 20,
                (48 << 10, 1 << 20)
            ),
            None,
            "2-D"
        );
        // The tuner's default point is the default schedule's blocks, slab included, and so
        // is the plan of `CpuSchedule::default()`.
        let space = ScheduleSpace::new(&m, &k, &shape, 1);
        let tuning = space.tuning_space(&m, 8, 1);
        let point = tuning.default_point.clone().expect("default in the space");
        let Some(Schedule::Cpu(default)) = tuning.schedule(&point) else {
            panic!("the default point is a CPU schedule");
        };
        assert_eq!(default.tile[..3], [16, 16, 0]);
        let plan = crate::schedules::plan_on(
            &m,
            &CpuSchedule::default(),
            &shape,
            8,
            1,
            grids / 2,
            grids,
            slab,
        );
        assert_eq!(
            plan.tiling,
            crate::tiling::Tiling::new(&shape, &default.tile)
        );
        // Kernels whose sweeps are bound by arithmetic (a retimed loop) keep whole planes.
        let mut b = KernelBuilder::new("k27", 3, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let c = b.param("c");
        let mut sum = b.read(u, &[-1, -1, -1]);
        for i in -1..=1 {
            for j in -1..=1 {
                for k in -1..=1 {
                    if (i, j, k) != (-1, -1, -1) {
                        let r = b.read(u, &[i, j, k]);
                        sum = b.add(sum, r);
                    }
                }
            }
        }
        let c = b.param_ref(c);
        let value = b.mul(c, sum);
        b.store(out, value);
        let k27 = b.finish().unwrap();
        assert_eq!(crate::schedules::slab_bytes_per_row(&k27, &shape), 0);
        // In 4-D a block sweeps the planes of the third-innermost axis: its radius (1 here,
        // 2 along the outermost) sets the planes.
        let mut b = KernelBuilder::new("k4", 4, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let mut sum = b.read(u, &[-2, 0, 0, 0]);
        for offset in [[2, 0, 0, 0], [0, -1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]] {
            let r = b.read(u, &offset);
            sum = b.mul(sum, r);
        }
        b.store(out, sum);
        let k4 = b.finish().unwrap();
        assert_eq!(
            crate::schedules::slab_bytes_per_row(&k4, &[8, 64, 64, 64]),
            3 * 64 * 8
        );
    }

    #[test]
    fn defaults_from_memory_cut_planes_into_second_level_slabs() {
        // 256^3 f64 from memory (two 128 MiB grids, an 8 MiB cache): 3 input rows of 256
        // points per row of a block, 6 KiB; half of a 1 MiB second-level cache holds 85 such
        // rows, evened out to 4 blocks of 64.
        let k = star(3);
        let shape = [256, 256, 256];
        let slab = crate::schedules::slab_bytes_per_row(&k, &shape);
        assert_eq!(slab, 3 * 256 * 8);
        let grids = 2 * 256 * 256 * 256 * 8;
        let rows = |l2: usize, slab: usize, grids: usize| {
            crate::schedules::slab_rows(&shape, slab, grids, 8 << 20, (48 << 10, l2))
        };
        assert_eq!(rows(1 << 20, slab, grids), Some(64));
        // A 2 MiB second-level cache: 170 rows, 2 blocks of 128.
        assert_eq!(rows(2 << 20, slab, grids), Some(128));
        // A 128 KiB one holds 10 rows, fewer than a block needs: planes stay whole.
        assert_eq!(rows(128 << 10, slab, grids), None);
        // The same grids in a cache that holds them take first-level slabs instead: two
        // thirds of 48 KiB over 6 KiB, 5 rows, too few.
        assert_eq!(
            crate::schedules::slab_rows(&shape, slab, grids, grids, (48 << 10, 1 << 20)),
            None
        );
        // The default plan's blocks from memory are the slabs (one thread: about four
        // blocks along the planes), and so is the tuner's default point.
        let m = machine(StreamWidth::Avx512, 1 << 20);
        let space = ScheduleSpace::new(&m, &k, &shape, 1);
        let tuning = space.tuning_space(&m, 8, 1);
        let point = tuning.default_point.clone().expect("default in the space");
        let Some(Schedule::Cpu(default)) = tuning.schedule(&point) else {
            panic!("the default point is a CPU schedule");
        };
        assert_eq!(default.tile[..3], [64, 64, 0]);
        // Kamil's Divergence: one of three inputs read across planes (the others stream
        // through on their own plane), so no slab.
        let mut b = KernelBuilder::new("divergence", 3, ElemType::F64);
        let (x, y, z) = (b.input("x"), b.input("y"), b.input("z"));
        let out = b.output("out");
        let mut sum = b.read(x, &[1, 0, 0]);
        for (field, offset) in [(x, [-1, 0, 0]), (y, [0, 1, 0]), (z, [0, 0, 1])] {
            let r = b.read(field, &offset);
            sum = b.add(sum, r);
        }
        b.store(out, sum);
        let divergence = b.finish().unwrap();
        assert_eq!(crate::schedules::slab_bytes_per_row(&divergence, &shape), 0);
        // Two inputs read across planes, one at radius 2 below only: 3 + 3 planes' rows.
        let mut b = KernelBuilder::new("two", 3, ElemType::F64);
        let (p, q) = (b.input("p"), b.input("q"));
        let out = b.output("out");
        let mut sum = b.read(p, &[-1, 0, 0]);
        for (field, offset) in [(p, [1, 0, 0]), (q, [-2, 0, 0]), (q, [0, 0, 1])] {
            let r = b.read(field, &offset);
            sum = b.add(sum, r);
        }
        b.store(out, sum);
        let two = b.finish().unwrap();
        assert_eq!(
            crate::schedules::slab_bytes_per_row(&two, &shape),
            (3 + 3) * 256 * 8
        );
    }

    #[test]
    fn the_tuners_view_is_the_same_set_of_schedules() {
        use stencil_core::schedule::Searchable;
        let m = machine(StreamWidth::Avx, 2 << 20);
        for (k, shape) in [
            (star(3), vec![256, 256, 256]),
            (star(3), vec![9, 40, 5000]),
            (star(2), vec![300, 77]),
            (star(1), vec![100_000]),
        ] {
            let space = ScheduleSpace::new(&m, &k, &shape, 2);
            let tuning = space.tuning_space(&m, 8, 2);
            assert_eq!(tuning.block_dims.len(), shape.len());
            let mut reached = Vec::new();
            for index in 0..tuning.space().n_points() {
                let point = tuning.space().point_at(index);
                match tuning.schedule(&point) {
                    Some(Schedule::Cpu(s)) => {
                        assert!(space.contains(&s), "{s:?} not in the space");
                        assert!(tuning.is_legal(&point));
                        assert!(!reached.contains(&s), "two points give {s:?}");
                        reached.push(s);
                    }
                    Some(other) => panic!("{other:?}"),
                    None => assert!(!tuning.is_legal(&point)),
                }
            }
            assert_eq!(reached.len(), space.len(), "every schedule is reachable");
            // The default point is the backend's default schedule with its `Auto` stores
            // spelled out: streaming where the output (one f64 grid) exceeds two 32 MiB caches.
            let auto = if shape.iter().product::<usize>() * 8 > 2 * (32 << 20) {
                CpuStores::Streaming
            } else {
                CpuStores::Plain
            };
            // Its automatic prefetch likewise: two rows ahead where the two grids (input and
            // output) exceed two caches, none otherwise.
            let auto_prefetch = if 2 * shape.iter().product::<usize>() * 8
                > crate::AUTO_PREFETCH_CACHES * (32 << 20)
            {
                stencil_core::DEFAULT_PREFETCH_ROWS
            } else {
                0
            };
            // The default's blocks, with their slabs of rows from memory (256^3 only: half
            // the 2 MiB second-level cache over 3 planes of 256 f64 per row, 2 blocks of 128).
            let mut default = crate::schedules::default_schedule(&shape, 2);
            if shape == [256, 256, 256] {
                default.tile[1] = 128;
            }
            let point = tuning.default_point.clone().expect("default in the space");
            match tuning.schedule(&point) {
                Some(Schedule::Cpu(s)) => {
                    assert_eq!(
                        (s.tile, s.chunk, s.row_block),
                        (default.tile, default.chunk, default.row_block)
                    );
                    assert_eq!(s.stores, auto, "{shape:?}");
                    assert_eq!(s.prefetch, auto_prefetch, "{shape:?}");
                }
                other => panic!("{other:?}"),
            }
            // Block extents are numbers, sorted, the largest the whole axis.
            for (d, dim) in tuning.space().dims()[..shape.len()].iter().enumerate() {
                let values: Vec<i64> = dim.values.iter().filter_map(|v| v.as_int()).collect();
                assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
                assert!(*values.last().unwrap() as usize <= shape[d]);
            }
        }
    }
}
