//! The reduction variant: thread per point, one thread block per reduction block of
//! [`stencil_core::reduce`], so the GPU combines a kernel's reductions in exactly the
//! documented order.
//!
//! A row (every index but the last fixed) is cut into blocks of [`BLOCK`] = 256 points; thread
//! block `blockIdx.x` of a row covers points `256 * blockIdx.x ..` of it, with `256 / merge`
//! threads of `merge` points each (block or cyclic layout). The other grid axes index the row:
//! `blockIdx.y` is `y` (and `blockIdx.z` is `z` for 3-D kernels); a 2-D kernel with more than
//! 65535 rows folds them into `blockIdx.z * 65535 + blockIdx.y`, and the blocks past the last
//! row leave before any barrier.
//!
//! Each thread evaluates the body at its points (reading outputs read in place at the point
//! from their own buffers before storing them, as the other variants do)
//! and writes each reduction's value at point `p` of the block to slot `p` of a shared array of
//! 256 elements per reduction; a point past the row writes the operation's identity (which
//! leaves every lane's value unchanged, see [`stencil_core::reduce`]). `bar.sync`; threads
//! `0..LANES` (one warp: [`LANES`] = 32) fold lane `l` from the identity over slots
//! `l, l + LANES, ..` in that order and store it to a shared array of `LANES` lanes;
//! `bar.sync`; thread 0 combines the lanes by the pairwise tree of
//! [`stencil_core::reduce::tree`] (for 32 lanes: adjacent pairs, then pairs of pairs) and
//! stores the block's value to the reduction's partials buffer at
//! `row * blocks_per_row + blockIdx.x`. The host combines the partials, rows in C order, with
//! [`stencil_core::reduce::tree`] ([`finish`]). Every constant comes from
//! `stencil_core::reduce` ([`BLOCK`], [`LANES`]), so the code follows its definition.
//!
//! No thread leaves before the barriers (points past the row only skip their evaluation), so
//! every thread of a block reaches both `bar.sync`s.

use stencil_core::ir::ReduceOp;
use stencil_core::reduce::{BLOCK, LANES};
use stencil_core::{Element, Error, ErrorKind, Result};

use super::context::{Ctx, LaunchDims, PlantedReductionBug, blocks};
use super::eval::ReadValues;
use crate::ptx::{
    Address, Axis, Cmp, FloatOp, Guard, Inst, IntOp, Label, Operand, Param, Reg, SharedArray,
    Space, Special, Type,
};

/// The most blocks a launch has along y or z.
const GRID_YZ_LIMIT: i64 = 65535;

/// Block values per reduction for an interior of canonical `shape` `(z, y, x)` of a kernel
/// of `n_dims` dimensions: rows times blocks per row.
pub(crate) fn partials(n_dims: usize, shape: [i64; 3]) -> usize {
    let rows: i64 = match n_dims {
        1 => 1,
        2 => shape[1],
        _ => shape[0] * shape[1],
    };
    let per_row = stencil_core::reduce::blocks_per_row(shape[2].max(0) as usize);
    rows.max(0) as usize * per_row
}

/// Each reduction's result from its block values (as many per reduction as
/// [`GeneratedKernel::partials`](super::GeneratedKernel::partials) says, rows in C order):
/// the pairwise tree of [`stencil_core::reduce::tree`], the order every backend follows.
pub(crate) fn finish<T: Element>(ops: &[ReduceOp], partials: &[Vec<T>]) -> Vec<T> {
    ops.iter()
        .zip(partials)
        .map(|(&op, values)| stencil_core::reduce::tree(op, values))
        .collect()
}

/// The operation's identity ([`stencil_core::reduce::identity`]: `+0`, or NaN for a minimum
/// or maximum, which `min`/`max` ignore as they do in PTX) as an immediate of type `ty`.
fn identity(op: ReduceOp, ty: Type) -> Operand {
    match ty {
        Type::F32 => Operand::F32(stencil_core::reduce::identity(op)),
        _ => Operand::F64(stencil_core::reduce::identity(op)),
    }
}

/// The instruction combining `a` with `b` (`a` first, as [`stencil_core::reduce::combine`]).
fn combine_op(op: ReduceOp) -> FloatOp {
    match op {
        ReduceOp::Sum => FloatOp::Add,
        ReduceOp::Min => FloatOp::Min,
        ReduceOp::Max => FloatOp::Max,
    }
}

impl Ctx<'_> {
    /// The registers `values` combined by the pairwise tree of [`stencil_core::reduce::tree`]
    /// (the first `len / 2` combined with the rest, recursively).
    fn tree(&mut self, op: ReduceOp, values: &[Reg]) -> Reg {
        match values.len() {
            0 => self.mov(self.fty, identity(op, self.fty)),
            1 => values[0],
            n => {
                let (a, b) = values.split_at(n / 2);
                let a = self.tree(op, a);
                let b = self.tree(op, b);
                self.combine(op, a, b)
            }
        }
    }

    /// `a` combined with `b` by `op` into a fresh register.
    fn combine(&mut self, op: ReduceOp, a: Reg, b: Reg) -> Reg {
        let dst = self.b.reg(self.fclass);
        self.b.push(Inst::Float {
            op: combine_op(op),
            ty: self.fty,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }

    fn branch_to(&mut self, pred: Reg, negated: bool, target: Label) {
        self.b.guarded(
            Guard { pred, negated },
            Inst::Bra {
                target,
                uniform: false,
            },
        );
    }
}

/// Emits the reduction variant; returns the launch dimensions.
pub(crate) fn emit(ctx: &mut Ctx<'_>) -> Result<LaunchDims> {
    let s = ctx.schedule;
    let kernel = ctx.kernel;
    let bx = i64::from(s.block[0]);
    let m = i64::from(s.merge);
    let block = BLOCK as i64;
    let lanes = LANES as i64;
    debug_assert_eq!(bx * m, block, "checked by is_reduction_schedule");
    let [nz, ny, nx] = ctx.shape;
    let n_dims = kernel.n_dims;
    let ops: Vec<ReduceOp> = kernel.reductions.iter().map(|r| r.op).collect();
    let esz = ctx.esz;
    let fty = ctx.fty;

    ctx.load_args();
    let mut partial_params = Vec::with_capacity(ops.len());
    for r in 0..ops.len() {
        partial_params.push(ctx.b.param(Param {
            name: format!("{}_partials_{r}", ctx.entry_name),
            ty: Type::U64,
        }));
    }
    let mut partial_ptrs = Vec::with_capacity(ops.len());
    for p in partial_params {
        let raw = ctx.b.reg(crate::ptx::RegClass::B64);
        ctx.b.push(Inst::LdParam {
            ty: Type::U64,
            dst: raw,
            param: p,
        });
        let global = ctx.b.reg(crate::ptx::RegClass::B64);
        ctx.b.push(Inst::CvtaGlobal {
            dst: global,
            src: raw,
        });
        partial_ptrs.push(global);
    }
    let mut slots = Vec::with_capacity(ops.len());
    let mut lane_arrays = Vec::with_capacity(ops.len());
    for r in 0..ops.len() {
        let a = ctx.b.shared(SharedArray {
            name: format!("reduce_{r}"),
            align: 16,
            bytes: (block * esz) as u64,
        });
        slots.push(ctx.mov(Type::U64, Operand::Shared(a)));
        let l = ctx.b.shared(SharedArray {
            name: format!("lanes_{r}"),
            align: 16,
            bytes: (lanes * esz) as u64,
        });
        lane_arrays.push(ctx.mov(Type::U64, Operand::Shared(l)));
    }

    let ctaid = Axis::ALL.map(|a| ctx.special(Special::Ctaid(a)));
    let tid = ctx.special(Special::Tid(Axis::X));
    let end = ctx.b.label();
    let per_row = i64::from(blocks(nx, block));
    // The row: its y and z (None on an axis the kernel does not have), and the launch's
    // blocks along y and z.
    let (y, z, grid_y, grid_z) = match n_dims {
        1 => (None, None, 1, 1),
        2 if ny <= GRID_YZ_LIMIT => (Some(ctaid[1]), None, ny, 1),
        2 => {
            let y = ctx.mad_lo(
                Type::U32,
                ctaid[2].into(),
                Operand::Int(GRID_YZ_LIMIT),
                ctaid[1].into(),
            );
            // Uniform over the block: the whole block leaves, before any barrier.
            let past = ctx.setp(Cmp::Ge, Type::U32, y.into(), Operand::Int(ny));
            ctx.branch_to(past, false, end);
            (
                Some(y),
                None,
                GRID_YZ_LIMIT,
                (ny + GRID_YZ_LIMIT - 1) / GRID_YZ_LIMIT,
            )
        }
        _ => (Some(ctaid[1]), Some(ctaid[2]), ny, nz),
    };

    // Every point of the thread: evaluate (when inside the row), store outputs, and write the
    // reductions' values (or identities) to the block's slots.
    let reads = ctx.reads();
    let n_fields = kernel.fields.len();
    let block_x0 = ctx.int(
        IntOp::MulLo,
        Type::U32,
        ctaid[0].into(),
        Operand::Int(block),
    );
    for k in 0..m {
        ctx.b.comment(format!("point {k} of the thread"));
        let pos = match s.merge_kind {
            stencil_core::schedule::MergeKind::Block => {
                ctx.mad_lo(Type::U32, tid.into(), Operand::Int(m), Operand::Int(k))
            }
            stencil_core::schedule::MergeKind::Cyclic => {
                ctx.int(IntOp::Add, Type::U32, tid.into(), Operand::Int(k * bx))
            }
        };
        let x = ctx.int(IntOp::Add, Type::U32, block_x0.into(), pos.into());
        let slot_addrs: Vec<Reg> = slots
            .iter()
            .map(|&base| ctx.mad_wide(Type::U32, pos.into(), Operand::Int(esz), base.into()))
            .collect();
        let outside = ctx.b.label();
        let done = ctx.b.label();
        let past = ctx.setp(Cmp::Ge, Type::U32, x.into(), Operand::Int(nx));
        ctx.branch_to(past, false, outside);
        let mut offsets: Vec<([i64; 3], Reg)> = Vec::new();
        let mut ptrs = Vec::with_capacity(n_fields);
        for f in 0..n_fields {
            let l = ctx.layouts[f];
            let off = match offsets.iter().find(|(st, _)| *st == l.stride) {
                Some(&(_, r)) => r,
                None => {
                    let r = ctx.point_offset(l, [z, y, Some(x)]);
                    offsets.push((l.stride, r));
                    r
                }
            };
            let base = ctx.field_base[f];
            ptrs.push(ctx.int(IntOp::Add, Type::U64, base.into(), off.into()));
        }
        let mut values = ReadValues::new();
        for &(f, d) in &reads {
            let dst = ctx.b.reg(ctx.fclass);
            let offset = ctx.disp_bytes(ctx.layouts[f], d);
            ctx.b.push(Inst::Ld {
                space: Space::Global,
                ty: fty,
                dst,
                addr: Address {
                    base: ptrs[f],
                    offset,
                },
            });
            values.insert((f, d), dst);
        }
        ctx.point = [z, y, Some(x)];
        let (stores, reduced) = ctx.eval_point_reducing(&values)?;
        for (f, v) in stores {
            ctx.b.push(Inst::St {
                space: Space::Global,
                ty: fty,
                addr: Address {
                    base: ptrs[f],
                    offset: 0,
                },
                src: v,
            });
        }
        if reduced.len() != ops.len() {
            return Err(Error::new(
                ErrorKind::BadArgument,
                format!(
                    "kernel `{}` gives {} reduction values for {} reductions",
                    kernel.name,
                    reduced.len(),
                    ops.len()
                ),
            ));
        }
        for (r, v) in reduced {
            ctx.b.push(Inst::St {
                space: Space::Shared,
                ty: fty,
                addr: Address {
                    base: slot_addrs[r],
                    offset: 0,
                },
                src: v,
            });
        }
        ctx.b.push(Inst::Bra {
            target: done,
            uniform: false,
        });
        ctx.b.place(outside);
        for (r, &op) in ops.iter().enumerate() {
            let v = ctx.mov(fty, identity(op, fty));
            ctx.b.push(Inst::St {
                space: Space::Shared,
                ty: fty,
                addr: Address {
                    base: slot_addrs[r],
                    offset: 0,
                },
                src: v,
            });
        }
        ctx.b.place(done);
    }

    // Lanes: thread l < LANES folds slots l, l + LANES, .. from the identity.
    if ctx.planted != PlantedReductionBug::MissingBarrier {
        ctx.b.push(Inst::BarSync);
    }
    let after_lanes = ctx.b.label();
    let not_lane = ctx.setp(Cmp::Ge, Type::U32, tid.into(), Operand::Int(lanes));
    ctx.branch_to(not_lane, false, after_lanes);
    ctx.b.comment("fold this thread's lane of every reduction");
    let (lane_stride, lane_step) = if ctx.planted == PlantedReductionBug::LaneOrder {
        (block / lanes, 1)
    } else {
        (1, lanes)
    };
    for (r, &op) in ops.iter().enumerate() {
        let first = ctx.mad_wide(
            Type::U32,
            tid.into(),
            Operand::Int(lane_stride * esz),
            slots[r].into(),
        );
        let mut acc = ctx.mov(fty, identity(op, fty));
        for j in 0..block / lanes {
            let v = ctx.b.reg(ctx.fclass);
            ctx.b.push(Inst::Ld {
                space: Space::Shared,
                ty: fty,
                dst: v,
                addr: Address {
                    base: first,
                    offset: j * lane_step * esz,
                },
            });
            acc = ctx.combine(op, acc, v);
        }
        let lane_addr = ctx.mad_wide(
            Type::U32,
            tid.into(),
            Operand::Int(esz),
            lane_arrays[r].into(),
        );
        ctx.b.push(Inst::St {
            space: Space::Shared,
            ty: fty,
            addr: Address {
                base: lane_addr,
                offset: 0,
            },
            src: acc,
        });
    }
    ctx.b.place(after_lanes);
    ctx.b.push(Inst::BarSync);

    // Thread 0: the lanes' pairwise tree, stored as the block's value.
    let not_first = ctx.setp(Cmp::Ne, Type::U32, tid.into(), Operand::Int(0));
    ctx.branch_to(not_first, false, end);
    ctx.b
        .comment("combine the lanes and store the block's value");
    let mut offset = ctx.mul_wide(Type::U32, ctaid[0].into(), Operand::Int(esz));
    if let Some(y) = y {
        offset = ctx.mad_wide(
            Type::U32,
            y.into(),
            Operand::Int(per_row * esz),
            offset.into(),
        );
    }
    if let Some(z) = z {
        offset = ctx.mad_wide(
            Type::U32,
            z.into(),
            Operand::Int(ny * per_row * esz),
            offset.into(),
        );
    }
    for (r, &op) in ops.iter().enumerate() {
        let lane: Vec<Reg> = (0..lanes)
            .map(|l| {
                let v = ctx.b.reg(ctx.fclass);
                ctx.b.push(Inst::Ld {
                    space: Space::Shared,
                    ty: fty,
                    dst: v,
                    addr: Address {
                        base: lane_arrays[r],
                        offset: l * esz,
                    },
                });
                v
            })
            .collect();
        let value = ctx.tree(op, &lane);
        let addr = ctx.int(IntOp::Add, Type::U64, partial_ptrs[r].into(), offset.into());
        ctx.b.push(Inst::St {
            space: Space::Global,
            ty: fty,
            addr: Address {
                base: addr,
                offset: 0,
            },
            src: value,
        });
    }
    ctx.b.place(end);
    ctx.b.push(Inst::Ret);
    Ok(LaunchDims {
        grid: [
            u32::try_from(per_row).unwrap_or(u32::MAX),
            u32::try_from(grid_y).unwrap_or(u32::MAX),
            u32::try_from(grid_z).unwrap_or(u32::MAX),
        ],
        block: s.block,
    })
}
