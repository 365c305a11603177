//! The per-thread state of the streaming variants' loop ([`Stream`]): the register queues of
//! the `Streaming` variant's input columns and the shared-memory rings of the `SharedTile`
//! variant's inputs, which `stream.rs` and `tile.rs` both fill and read.

use crate::ptx::Reg;

/// A register queue of one input column: values at z-offsets `zmin ..= zmax`.
pub(super) struct Column {
    pub(super) field: usize,
    /// y displacement.
    pub(super) dy: i64,
    /// x displacement from the thread's first point.
    pub(super) cx: i64,
    pub(super) zmin: i64,
    /// Registers, index `dz - zmin`.
    pub(super) queue: Vec<Reg>,
    /// Whether the column lies inside the field's storage (x within halo).
    pub(super) inside: Reg,
}

/// Per-thread state of the loop.
pub(super) struct Stream {
    /// First x of the thread (u32).
    pub(super) x0: Reg,
    /// Current plane (u32).
    pub(super) z: Reg,
    /// Block origin x and y (u32), for tile loads.
    pub(super) block_x: Reg,
    pub(super) block_y: Reg,
    pub(super) tid_x: Reg,
    pub(super) tid_y: Reg,
    /// Whether point k of the thread is inside the interior.
    pub(super) valid: Vec<Reg>,
    /// Per field, address of point (z, y, x0).
    pub(super) ptrs: Vec<Reg>,
    pub(super) columns: Vec<Column>,
    pub(super) tiles: Vec<Tile>,
}

/// The shared-memory ring of one input.
pub(super) struct Tile {
    pub(super) field: usize,
    /// Displacement ranges (min, max) along z, y, x.
    pub(super) range: [(i64, i64); 3],
    /// Tile width and height in elements; ring length in planes.
    pub(super) width: i64,
    pub(super) height: i64,
    pub(super) planes: i64,
    /// Address of this thread's (point 0, y-offset ymin, x-offset xmin) in ring slot 0.
    pub(super) thread_base: Reg,
    /// Address of the array.
    pub(super) array_base: Reg,
    /// Slot of plane `z + zmin` (u32).
    pub(super) ring: Reg,
}

impl Tile {
    pub(super) fn plane_bytes(&self, esz: i64) -> i64 {
        self.width * self.height * esz
    }
}
