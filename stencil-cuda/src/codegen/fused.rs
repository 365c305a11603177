//! The fused-steps variant: two steps of a ping-pong time loop (`out -> u`) in one launch,
//! the step in between held in shared memory (GSTuner's temporal blocking on the GPU).
//!
//! Each block owns a box of `block` output points (the thread-per-point mapping). It first
//! computes the middle step over its box grown by the kernel's reach into `u` along every
//! axis (`r`), into a shared tile: at interior points by the kernel's own arithmetic from `u`
//! (global memory) and the coefficients, and at points outside the interior the value the
//! middle step's halo holds there, which is `out`'s halo: the fused variant requires every
//! face of `out` to keep constant halo values (Dirichlet or user-managed, filled before the
//! launch), so the middle step's halo, written into `out` by a plain step, would hold exactly
//! those values. After a `bar.sync`, each thread computes the second step at its point,
//! reading the middle step from the tile and the coefficients from global memory, and
//! stores it into `out`. `u` is only read and `out` is written at interior points only
//! (never read there), so blocks do not race. Every point is computed by the instructions a
//! plain launch uses, so two fused steps give the bits of two plain ones.

use stencil_core::{Error, ErrorKind, Result};

use super::context::{Ctx, LaunchDims, Layout, blocks, bra, branch, zero};
use super::eval::ReadValues;
use crate::ptx::{
    Address, Axis, Cmp, Inst, IntOp, Operand, PredOp, Reg, RegClass, SharedArray, Space, Special,
    Type,
};

/// The ping-pong pair a fused launch advances: the kernel's output field and the input field
/// it becomes (field indices in declaration order).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FusedPair {
    /// The output (`out`).
    pub output: usize,
    /// The input it becomes (`u`).
    pub input: usize,
}

/// Emits the body; returns the launch dimensions.
///
/// # Errors
/// [`ErrorKind::InvalidSchedule`] when the kernel has another output besides `pair.output`,
/// or the schedule merges points.
pub(crate) fn emit(ctx: &mut Ctx<'_>, pair: FusedPair) -> Result<LaunchDims> {
    let kernel = ctx.kernel;
    let outputs: Vec<usize> = (0..kernel.fields.len())
        .filter(|&f| kernel.fields[f].role == stencil_core::Role::Output)
        .collect();
    if outputs != [pair.output] || ctx.schedule.merge != 1 {
        return Err(Error::new(
            ErrorKind::InvalidSchedule,
            format!(
                "fused steps need a kernel with one output, the rotation's, and no merging; \
                 `{}` has {} outputs, merge {}",
                kernel.name,
                outputs.len(),
                ctx.schedule.merge
            ),
        ));
    }
    let s = ctx.schedule;
    let block = [s.block[2], s.block[1], s.block[0]].map(i64::from); // z, y, x
    // The reach of the reads of `u` along each canonical axis.
    let mut reach = [0i64; 3];
    for &(f, d) in &ctx.reads() {
        if f == pair.input {
            for a in 0..3 {
                reach[a] = reach[a].max(d[a].abs());
            }
        }
    }
    let grown: [i64; 3] = std::array::from_fn(|a| block[a] + 2 * reach[a]);
    let esz = ctx.esz;
    let tile = ctx.b.shared(SharedArray {
        name: "middle".into(),
        align: 16,
        bytes: (grown.iter().product::<i64>() * esz) as u64,
    });
    ctx.load_args();
    let tile_base = ctx.mov(Type::U64, Operand::Shared(tile));
    let ctaid = Axis::ALL.map(|a| ctx.special(Special::Ctaid(a)));
    let tid = Axis::ALL.map(|a| ctx.special(Special::Tid(a)));
    // Canonical (z, y, x) registers of the block's first point and of the thread.
    let origin: [Reg; 3] = std::array::from_fn(|a| {
        let axis = 2 - a;
        ctx.int(
            IntOp::MulLo,
            Type::U32,
            ctaid[axis].into(),
            Operand::Int(block[a]),
        )
    });
    let thread: [Reg; 3] = std::array::from_fn(|a| tid[2 - a]);

    ctx.b
        .comment("the middle step over the block's points and the reach around them");
    middle_step(
        ctx,
        pair,
        (&origin, &thread),
        (block, reach, grown),
        tile_base,
    )?;
    ctx.b.push(Inst::BarSync);

    ctx.b.comment("the second step at the thread's point");
    let end = ctx.b.label();
    let point: [Reg; 3] =
        std::array::from_fn(|a| ctx.int(IntOp::Add, Type::U32, origin[a].into(), thread[a].into()));
    for (a, &p) in point.iter().enumerate() {
        let out = ctx.setp(Cmp::Ge, Type::U32, p.into(), Operand::Int(ctx.shape[a]));
        branch(ctx, out, false, end);
    }
    let ptrs = field_pointers(ctx, point.map(Some));
    // This thread's middle-step point in the tile, at displacement 0.
    let cell = tile_cell(ctx, &thread, reach, grown);
    let cell_addr = ctx.mad_wide(Type::U32, cell.into(), Operand::Int(esz), tile_base.into());
    let mut values = ReadValues::new();
    for &(f, d) in &ctx.reads() {
        let dst = ctx.b.reg(ctx.fclass);
        let (space, addr) = if f == pair.input {
            let offset = ((d[0] * grown[1] + d[1]) * grown[2] + d[2]) * esz;
            (
                Space::Shared,
                Address {
                    base: cell_addr,
                    offset,
                },
            )
        } else {
            (
                Space::Global,
                Address {
                    base: ptrs[f],
                    offset: ctx.disp_bytes(ctx.layouts[f], d),
                },
            )
        };
        ctx.b.push(Inst::Ld {
            space,
            ty: ctx.fty,
            dst,
            addr,
        });
        values.insert((f, d), dst);
    }
    for (f, v) in ctx.eval_point(&values)? {
        ctx.b.push(Inst::St {
            space: Space::Global,
            ty: ctx.fty,
            addr: Address {
                base: ptrs[f],
                offset: 0,
            },
            src: v,
        });
    }
    ctx.b.place(end);
    ctx.b.push(Inst::Ret);
    Ok(LaunchDims {
        grid: [
            blocks(ctx.shape[2], block[2]),
            blocks(ctx.shape[1], block[1]),
            blocks(ctx.shape[0], block[0]),
        ],
        block: s.block,
    })
}

/// The middle step into the tile: the block's threads walk the grown box (strided by the
/// block's extents along each axis).
fn middle_step(
    ctx: &mut Ctx<'_>,
    pair: FusedPair,
    (origin, thread): (&[Reg; 3], &[Reg; 3]),
    (block, reach, grown): ([i64; 3], [i64; 3], [i64; 3]),
    tile_base: Reg,
) -> Result<()> {
    let esz = ctx.esz;
    let out_layout = ctx.layouts[pair.output];
    // Tile coordinates, one loop per axis (z outermost).
    let local: [Reg; 3] = std::array::from_fn(|a| ctx.mov(Type::U32, thread[a].into()));
    let heads: [crate::ptx::Label; 3] = std::array::from_fn(|_| ctx.b.label());
    let ends: [crate::ptx::Label; 3] = std::array::from_fn(|_| ctx.b.label());
    for a in 0..3 {
        if a > 0 {
            ctx.b.push(Inst::Mov {
                ty: Type::U32,
                dst: local[a],
                src: thread[a].into(),
            });
        }
        ctx.b.place(heads[a]);
        let done = ctx.setp(Cmp::Ge, Type::U32, local[a].into(), Operand::Int(grown[a]));
        branch(ctx, done, false, ends[a]);
    }
    // The point: origin + local - reach (s32), and whether it is interior, or in the output's
    // storage at all.
    let mut coords = [local[0]; 3];
    let mut inside: Option<Reg> = None;
    let mut stored: Option<Reg> = None;
    for a in 0..3 {
        let p0 = ctx.int(IntOp::Add, Type::S32, origin[a].into(), local[a].into());
        let p = ctx.int(IntOp::Sub, Type::S32, p0.into(), Operand::Int(reach[a]));
        coords[a] = p;
        let n = ctx.shape[a];
        let h = out_layout.halo[a];
        for (lo, hi, acc) in [(0, n, &mut inside), (-h, n + h, &mut stored)] {
            let ge = ctx.setp(Cmp::Ge, Type::S32, p.into(), Operand::Int(lo));
            let lt = ctx.setp(Cmp::Lt, Type::S32, p.into(), Operand::Int(hi));
            let both = ctx.b.reg(RegClass::Pred);
            ctx.b.push(Inst::Pred {
                op: PredOp::And,
                dst: both,
                a: ge,
                b: lt,
            });
            *acc = Some(match *acc {
                None => both,
                Some(prev) => {
                    let r = ctx.b.reg(RegClass::Pred);
                    ctx.b.push(Inst::Pred {
                        op: PredOp::And,
                        dst: r,
                        a: prev,
                        b: both,
                    });
                    r
                }
            });
        }
    }
    let (inside, stored) = (inside.expect("three axes"), stored.expect("three axes"));
    let cell = {
        let zy = ctx.mad_lo(
            Type::U32,
            local[0].into(),
            Operand::Int(grown[1]),
            local[1].into(),
        );
        ctx.mad_lo(
            Type::U32,
            zy.into(),
            Operand::Int(grown[2]),
            local[2].into(),
        )
    };
    let cell_addr = ctx.mad_wide(Type::U32, cell.into(), Operand::Int(esz), tile_base.into());
    let value = ctx.mov(ctx.fty, zero(ctx.fty));
    let outside = ctx.b.label();
    let store = ctx.b.label();
    let next = ctx.b.label();
    branch(ctx, inside, true, outside);
    {
        // Interior: the kernel at the point, from `u` and the coefficients.
        let ptrs = field_pointers(ctx, coords.map(Some));
        let mut values = ReadValues::new();
        for &(f, d) in &ctx.reads() {
            let dst = ctx.b.reg(ctx.fclass);
            let offset = ctx.disp_bytes(ctx.layouts[f], d);
            ctx.b.push(Inst::Ld {
                space: Space::Global,
                ty: ctx.fty,
                dst,
                addr: Address {
                    base: ptrs[f],
                    offset,
                },
            });
            values.insert((f, d), dst);
        }
        let stores = ctx.eval_point(&values)?;
        let (_, v) = stores
            .into_iter()
            .find(|&(f, _)| f == pair.output)
            .unwrap_or_else(|| unreachable!("codegen fused: the output is stored"));
        ctx.b.push(Inst::Mov {
            ty: ctx.fty,
            dst: value,
            src: v.into(),
        });
        bra(ctx, store);
    }
    ctx.b.place(outside);
    {
        // Outside the interior: the middle step's halo value, which `out`'s halo holds; no
        // point reads beyond the storage.
        branch(ctx, stored, true, next);
        let offset = signed_offset(ctx, out_layout, coords);
        let addr = ctx.int(
            IntOp::Add,
            Type::U64,
            ctx.field_base[pair.output].into(),
            offset.into(),
        );
        ctx.b.push(Inst::Ld {
            space: Space::Global,
            ty: ctx.fty,
            dst: value,
            addr: Address {
                base: addr,
                offset: 0,
            },
        });
    }
    ctx.b.place(store);
    ctx.b.push(Inst::St {
        space: Space::Shared,
        ty: ctx.fty,
        addr: Address {
            base: cell_addr,
            offset: 0,
        },
        src: value,
    });
    ctx.b.place(next);
    for a in (0..3).rev() {
        ctx.b.push(Inst::Int {
            op: IntOp::Add,
            ty: Type::U32,
            dst: local[a],
            a: local[a].into(),
            b: Operand::Int(block[a]),
        });
        bra(ctx, heads[a]);
        ctx.b.place(ends[a]);
    }
    Ok(())
}

/// The tile cell of the thread's own point (`thread + reach`, row-major over `grown`).
fn tile_cell(ctx: &mut Ctx<'_>, thread: &[Reg; 3], reach: [i64; 3], grown: [i64; 3]) -> Reg {
    let z = ctx.int(
        IntOp::Add,
        Type::U32,
        thread[0].into(),
        Operand::Int(reach[0]),
    );
    let y = ctx.int(
        IntOp::Add,
        Type::U32,
        thread[1].into(),
        Operand::Int(reach[1]),
    );
    let x = ctx.int(
        IntOp::Add,
        Type::U32,
        thread[2].into(),
        Operand::Int(reach[2]),
    );
    let zy = ctx.mad_lo(Type::U32, z.into(), Operand::Int(grown[1]), y.into());
    ctx.mad_lo(Type::U32, zy.into(), Operand::Int(grown[2]), x.into())
}

/// One global pointer per field at interior point `coords` (u32 registers).
fn field_pointers(ctx: &mut Ctx<'_>, coords: [Option<Reg>; 3]) -> Vec<Reg> {
    let mut offsets: Vec<([i64; 3], Reg)> = Vec::new();
    let mut ptrs = Vec::with_capacity(ctx.kernel.fields.len());
    for f in 0..ctx.kernel.fields.len() {
        let l = ctx.layouts[f];
        let off = match offsets.iter().find(|(st, _)| *st == l.stride) {
            Some(&(_, r)) => r,
            None => {
                let r = ctx.point_offset(l, coords);
                offsets.push((l.stride, r));
                r
            }
        };
        let base = ctx.field_base[f];
        ptrs.push(ctx.int(IntOp::Add, Type::U64, base.into(), off.into()));
    }
    ptrs
}

/// Byte offset (s64) of point `coords` (s32 registers, possibly negative) in a field of
/// layout `l`, relative to the field's interior origin.
fn signed_offset(ctx: &mut Ctx<'_>, l: Layout, coords: [Reg; 3]) -> Reg {
    let esz = ctx.esz;
    let mut off = ctx.mul_wide(Type::S32, coords[2].into(), Operand::Int(esz));
    for axis in [1, 0] {
        if l.stride[axis] != 0 {
            off = ctx.mad_wide(
                Type::S32,
                coords[axis].into(),
                Operand::Int(l.stride[axis] * esz),
                off.into(),
            );
        }
    }
    off
}
