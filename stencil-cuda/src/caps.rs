//! Device capabilities as plain data, and the legal GPU schedule space derived from them.
//!
//! [`DeviceCaps`] comes from the device when one is present
//! ([`CudaDevice::caps`](crate::runtime::CudaDevice::caps)); otherwise the described
//! [`DeviceCaps::sm_90`] (H100 SXM) and [`DeviceCaps::sm_80`] (A100) stand in, so the tuner
//! and the tests can enumerate schedules on a machine with no GPU.

use stencil_core::ir::Kernel;
use stencil_core::schedule::{
    DimValue, GpuSchedule, GpuVariant, MergeKind, SearchSpace, Searchable,
};

use crate::codegen;

/// What the schedule space and the code generator need to know about a device.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct DeviceCaps {
    /// Device name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most shared memory of one block, in bytes (static shared memory is capped at 48 KiB
    /// whatever the device offers).
    pub shared_memory_per_block: u64,
    /// 32-bit registers per multiprocessor.
    pub registers_per_sm: u32,
    /// Most threads resident on one multiprocessor.
    pub max_threads_per_sm: u32,
    /// Number of multiprocessors.
    pub sm_count: u32,
    /// Threads per warp.
    pub warp_size: u32,
}

impl DeviceCaps {
    /// A described NVIDIA H100 SXM (sm_90).
    pub fn sm_90() -> Self {
        DeviceCaps {
            name: "described sm_90 (H100 SXM)".into(),
            compute_capability: (9, 0),
            max_threads_per_block: 1024,
            shared_memory_per_block: 48 * 1024,
            registers_per_sm: 65536,
            max_threads_per_sm: 2048,
            sm_count: 132,
            warp_size: 32,
        }
    }

    /// A described NVIDIA A100 (sm_80).
    pub fn sm_80() -> Self {
        DeviceCaps {
            name: "described sm_80 (A100)".into(),
            compute_capability: (8, 0),
            max_threads_per_block: 1024,
            shared_memory_per_block: 48 * 1024,
            registers_per_sm: 65536,
            max_threads_per_sm: 2048,
            sm_count: 108,
            warp_size: 32,
        }
    }

    /// The `sm_XY` number of the device (e.g. 90).
    pub fn arch(&self) -> u32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }
}

const VARIANTS: [(GpuVariant, &str); 3] = [
    (GpuVariant::ThreadPerPoint, "point"),
    (GpuVariant::Streaming, "stream"),
    (GpuVariant::SharedTile, "tile"),
];
const BLOCK_X: [u32; 4] = [32, 64, 128, 256];
const BLOCK_Y: [u32; 5] = [1, 2, 4, 8, 16];
const BLOCK_Z: [u32; 3] = [1, 2, 4];
const MERGES: [u32; 3] = [1, 2, 4];
const MERGE_KINDS: [(MergeKind, &str); 2] =
    [(MergeKind::Block, "block"), (MergeKind::Cyclic, "cyclic")];
const CHUNKS: [u32; 3] = [0, 16, 64];
const UNROLLS: [u32; 3] = [1, 2, 4];

/// Whether `s` is a legal (and canonical) schedule of `kernel` on `shape` for `caps`: block x a
/// multiple of the warp size, at most `max_threads_per_block` threads, shared tiles that fit;
/// streaming variants only for kernels of 2 or more dimensions, with 2-D blocks (and
/// `block y = 1` for 2-D kernels); thread-per-point blocks no deeper than the kernel; no
/// option that a variant ignores set to a non-default value (so each schedule appears once).
/// A kernel with reductions has only the schedules of the reduction variant
/// ([`codegen::is_reduction_schedule`]: blocks of 256, 128 or 64 threads along x with merge 1,
/// 2 or 4, block or cyclic). A kernel that reads an output in place has the whole space:
/// every variant reads such an output from global memory at the thread's own point (see the
/// `codegen` module), so no variant can see a value another thread stored in the same sweep.
pub fn is_legal(kernel: &Kernel, shape: &[usize], caps: &DeviceCaps, s: &GpuSchedule) -> bool {
    if codegen::check_kernel(kernel).is_err() || codegen::check_schedule(s).is_err() {
        return false;
    }
    if kernel.has_reductions() && !codegen::is_reduction_schedule(s) {
        return false;
    }
    let n = kernel.n_dims;
    let outer = shape.first().copied().unwrap_or(1) as u64;
    let [bx, by, bz] = s.block;
    let streaming = s.variant != GpuVariant::ThreadPerPoint;
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    threads <= u64::from(caps.max_threads_per_block)
        && bx % caps.warp_size == 0
        && !(s.merge == 1 && s.merge_kind == MergeKind::Cyclic)
        && !(n == 1 && by > 1)
        && !(n < 3 && bz > 1)
        && !(streaming && (n < 2 || bz > 1 || (n == 2 && by > 1)))
        && !(!streaming && (s.stream_chunk != 0 || s.unroll != 1))
        && !(s.stream_chunk != 0 && u64::from(s.stream_chunk) >= outer)
        && codegen::shared_bytes(kernel, s)
            <= caps
                .shared_memory_per_block
                .min(codegen::STATIC_SHARED_LIMIT)
}

/// Every legal schedule of `kernel` on `shape` for a device with `caps` (see [`is_legal`]),
/// over thread-per-point, streaming and shared tiles; block x in 32..256, y in 1..16, z in
/// 1..4; merge 1, 2, 4 (block or cyclic); chunks 0, 16, 64; unroll 1, 2, 4. Kernels the
/// generator cannot express give an empty space.
pub fn schedule_space(kernel: &Kernel, shape: &[usize], caps: &DeviceCaps) -> Vec<GpuSchedule> {
    let search = GpuSearch::new(kernel, shape, caps);
    let dims: Vec<usize> = search.space.dims().iter().map(|d| d.values.len()).collect();
    let mut point = vec![0usize; dims.len()];
    let mut out = Vec::new();
    'points: loop {
        if search.is_legal(&point) {
            out.push(search.schedule(&point));
        }
        for d in (0..dims.len()).rev() {
            point[d] += 1;
            if point[d] < dims[d] {
                continue 'points;
            }
            point[d] = 0;
        }
        break;
    }
    out
}

/// The GPU schedule space as the tuner's [`SearchSpace`]: dimensions `variant`, `block_x`,
/// `block_y`, `block_z`, `merge`, `merge_kind`, `stream_chunk`, `unroll`; legality per
/// [`is_legal`].
#[derive(Clone, Debug)]
pub struct GpuSearch {
    kernel: Kernel,
    shape: Vec<usize>,
    caps: DeviceCaps,
    space: SearchSpace,
}

impl GpuSearch {
    /// The space of `kernel` on `shape` for `caps`.
    pub fn new(kernel: &Kernel, shape: &[usize], caps: &DeviceCaps) -> Self {
        let ints = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
        let space = SearchSpace::new()
            .with(
                "variant",
                VARIANTS
                    .iter()
                    .map(|(_, n)| DimValue::Name((*n).into()))
                    .collect(),
            )
            .with_ints("block_x", ints(&BLOCK_X))
            .with_ints("block_y", ints(&BLOCK_Y))
            .with_ints("block_z", ints(&BLOCK_Z))
            .with_ints("merge", ints(&MERGES))
            .with(
                "merge_kind",
                MERGE_KINDS
                    .iter()
                    .map(|(_, n)| DimValue::Name((*n).into()))
                    .collect(),
            )
            .with_ints("stream_chunk", ints(&CHUNKS))
            .with_ints("unroll", ints(&UNROLLS));
        GpuSearch {
            kernel: kernel.clone(),
            shape: shape.to_vec(),
            caps: caps.clone(),
            space,
        }
    }

    /// The schedule at `point` (one index per dimension).
    ///
    /// # Panics
    /// If `point` does not have one in-range index per dimension.
    pub fn schedule(&self, point: &[usize]) -> GpuSchedule {
        assert_eq!(point.len(), 8, "GpuSearch: a point has 8 indices");
        GpuSchedule {
            variant: VARIANTS[point[0]].0,
            block: [BLOCK_X[point[1]], BLOCK_Y[point[2]], BLOCK_Z[point[3]]],
            merge: MERGES[point[4]],
            merge_kind: MERGE_KINDS[point[5]].0,
            stream_chunk: CHUNKS[point[6]],
            unroll: UNROLLS[point[7]],
            time_steps: 1,
        }
    }
}

impl Searchable for GpuSearch {
    fn space(&self) -> &SearchSpace {
        &self.space
    }

    fn is_legal(&self, point: &[usize]) -> bool {
        point.len() == 8
            && point
                .iter()
                .zip(self.space.dims())
                .all(|(&i, d)| i < d.values.len())
            && is_legal(&self.kernel, &self.shape, &self.caps, &self.schedule(point))
    }
}

/// The schedule used when nothing better is known: for 3-D kernels 2.5-D streaming with
/// 32 x 8 blocks and chunks of 64 planes (enough blocks to fill a large GPU at 256^3); for
/// smaller kernels one thread per point. A kernel with reductions: one thread per point in
/// blocks of 256 x 1 x 1 (one thread block per reduction block).
pub fn default_schedule(kernel: &Kernel, shape: &[usize]) -> GpuSchedule {
    let outer = shape.first().copied().unwrap_or(1);
    if kernel.has_reductions() {
        return reduction_schedule(256, 1, MergeKind::Block);
    }
    match kernel.n_dims {
        3 => GpuSchedule {
            variant: GpuVariant::Streaming,
            block: [32, 8, 1],
            merge: 1,
            merge_kind: MergeKind::Block,
            stream_chunk: if outer > 64 { 64 } else { 0 },
            unroll: 1,
            time_steps: 1,
        },
        2 => GpuSchedule {
            block: [32, 4, 1],
            ..GpuSchedule::default()
        },
        _ => GpuSchedule {
            block: [128, 1, 1],
            ..GpuSchedule::default()
        },
    }
}

/// A small sample covering every variant and option (used by `verify` and the ptxas and
/// emulator tests): thread-per-point with 3-D blocks and both merge kinds; streaming and
/// shared tiles plain, merged (block and cyclic), unrolled (with a remainder) and concurrent
/// (chunks that do and do not divide the outer extent). Blocks are small so the emulator stays
/// fast; they need not divide the shape. A kernel with reductions: the reduction variant
/// without merging, merged by 2 in blocks and merged by 4 cyclically.
pub fn sample_schedules(kernel: &Kernel) -> Vec<GpuSchedule> {
    let n = kernel.n_dims;
    let base = GpuSchedule::default();
    if kernel.has_reductions() {
        return vec![
            reduction_schedule(256, 1, MergeKind::Block),
            reduction_schedule(128, 2, MergeKind::Block),
            reduction_schedule(64, 4, MergeKind::Cyclic),
        ];
    }
    let mut out = vec![
        // The defaults, for outer extents that do and do not get concurrent streaming.
        default_schedule(kernel, &[1]),
        default_schedule(kernel, &[1000]),
        GpuSchedule {
            block: [32, 2, 2],
            ..base
        },
        GpuSchedule {
            block: [32, 1, 1],
            merge: 3,
            merge_kind: MergeKind::Block,
            ..base
        },
        GpuSchedule {
            block: [32, 2, 1],
            merge: 2,
            merge_kind: MergeKind::Cyclic,
            ..base
        },
    ];
    if n >= 2 {
        let by = if n == 3 { 4 } else { 1 };
        for variant in [GpuVariant::Streaming, GpuVariant::SharedTile] {
            let v = GpuSchedule {
                variant,
                block: [32, by, 1],
                ..base
            };
            out.push(v);
            out.push(GpuSchedule {
                merge: 2,
                merge_kind: MergeKind::Block,
                unroll: 3,
                ..v
            });
            out.push(GpuSchedule {
                merge: 2,
                merge_kind: MergeKind::Cyclic,
                stream_chunk: 2,
                unroll: 2,
                ..v
            });
            out.push(GpuSchedule {
                stream_chunk: 3,
                ..v
            });
        }
    }
    out.retain(|s| codegen::shared_bytes(kernel, s) <= codegen::STATIC_SHARED_LIMIT);
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(*s));
    out
}

/// A schedule of the reduction variant: `block_x` threads of `merge` points each.
fn reduction_schedule(block_x: u32, merge: u32, merge_kind: MergeKind) -> GpuSchedule {
    GpuSchedule {
        variant: GpuVariant::ThreadPerPoint,
        block: [block_x, 1, 1],
        merge,
        merge_kind,
        stream_chunk: 0,
        unroll: 1,
        time_steps: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stencil_core::ElemType;
    use stencil_core::random::{RandomStencilConfig, random_stencil};

    #[test]
    fn space_is_legal_and_varied() {
        let k = random_stencil(&RandomStencilConfig::new(3, 1, ElemType::F64, 3));
        let caps = DeviceCaps::sm_90();
        let space = schedule_space(&k, &[100, 100, 100], &caps);
        assert!(space.len() > 100, "{}", space.len());
        for s in &space {
            assert_eq!(s.block[0] % 32, 0);
            assert!(s.block.iter().product::<u32>() <= 1024);
            assert!(codegen::check_schedule(s).is_ok(), "{s:?}");
        }
        for v in [
            GpuVariant::ThreadPerPoint,
            GpuVariant::Streaming,
            GpuVariant::SharedTile,
        ] {
            assert!(space.iter().any(|s| s.variant == v), "{v:?} missing");
        }
        assert!(space.iter().any(|s| s.merge_kind == MergeKind::Cyclic));
        assert!(space.iter().any(|s| s.stream_chunk == 16 && s.unroll == 4));
    }

    #[test]
    fn the_tuner_view_agrees_with_the_enumeration() {
        let k = random_stencil(&RandomStencilConfig::new(2, 2, ElemType::F32, 9));
        let caps = DeviceCaps::sm_80();
        let search = GpuSearch::new(&k, &[300, 200], &caps);
        let dims = search.space().dims();
        assert_eq!(dims.len(), 8);
        let total: usize = dims.iter().map(|d| d.values.len()).product();
        let legal = schedule_space(&k, &[300, 200], &caps);
        assert!(!legal.is_empty() && legal.len() < total);
        // An illegal point: streaming with a 3-D block.
        assert!(!search.is_legal(&[1, 0, 0, 1, 0, 0, 0, 0]));
        // The legal thread-per-point 32 x 1 x 1 point maps to that schedule.
        let s = search.schedule(&[0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(search.is_legal(&[0, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(s.block, [32, 1, 1]);
        assert!(legal.contains(&s));
        // Out-of-range points are illegal, not a panic.
        assert!(!search.is_legal(&[9, 0, 0, 0, 0, 0, 0, 0]));
        assert!(!search.is_legal(&[0; 3]));
    }

    #[test]
    fn one_dimensional_kernels_only_map_threads_to_points() {
        let k = random_stencil(&RandomStencilConfig::new(1, 2, ElemType::F32, 5));
        let space = schedule_space(&k, &[1000], &DeviceCaps::sm_80());
        assert!(!space.is_empty());
        assert!(
            space
                .iter()
                .all(|s| s.variant == GpuVariant::ThreadPerPoint && s.block[1] == 1)
        );
    }
}
