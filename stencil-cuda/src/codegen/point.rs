//! The thread-per-point variant: a 3-D grid of blocks over the canonical `(z, y, x)` axes;
//! each thread computes `merge` points along x (block or cyclic layout), each reading its
//! inputs straight from global memory, and an output read in place from the output's own
//! buffer at the point before storing it there (no other thread touches that point). Threads
//! past the interior return early, so blocks that do not divide the shape are masked.

use stencil_core::Result;

use super::context::{Ctx, LaunchDims, blocks};
use super::eval::ReadValues;
use crate::ptx::{Address, Axis, Cmp, Guard, Inst, IntOp, Operand, Space, Special, Type};

/// Emits the body; returns the launch dimensions.
pub(crate) fn emit(ctx: &mut Ctx<'_>) -> Result<LaunchDims> {
    let s = ctx.schedule;
    let [bx, by, bz] = s.block.map(i64::from);
    let m = i64::from(s.merge);
    ctx.load_args();
    let ctaid = Axis::ALL.map(|a| ctx.special(Special::Ctaid(a)));
    let tid = Axis::ALL.map(|a| ctx.special(Special::Tid(a)));
    let x0 = ctx.thread_x(ctaid[0], tid[0]);
    let y = ctx.mad_lo(Type::U32, ctaid[1].into(), Operand::Int(by), tid[1].into());
    let z = ctx.mad_lo(Type::U32, ctaid[2].into(), Operand::Int(bz), tid[2].into());
    let end = ctx.b.label();
    for (coord, n) in [(y, ctx.shape[1]), (z, ctx.shape[0])] {
        let out = ctx.setp(Cmp::Ge, Type::U32, coord.into(), Operand::Int(n));
        ctx.b.guarded(
            Guard {
                pred: out,
                negated: false,
            },
            Inst::Bra {
                target: end,
                uniform: false,
            },
        );
    }
    let reads = ctx.reads();
    let step = ctx.merge_step();
    let n_fields = ctx.kernel.fields.len();
    for k in 0..m {
        ctx.b.comment(format!("point {k} of the thread"));
        let x = if k == 0 {
            x0
        } else {
            ctx.int(IntOp::Add, Type::U32, x0.into(), Operand::Int(k * step))
        };
        // Merged points move right with k, so the first one past the row ends the thread.
        let out = ctx.setp(Cmp::Ge, Type::U32, x.into(), Operand::Int(ctx.shape[2]));
        ctx.b.guarded(
            Guard {
                pred: out,
                negated: false,
            },
            Inst::Bra {
                target: end,
                uniform: false,
            },
        );
        // One byte offset per distinct layout, one pointer per field.
        let mut offsets: Vec<([i64; 3], crate::ptx::Reg)> = Vec::new();
        let mut ptrs = Vec::with_capacity(n_fields);
        for f in 0..n_fields {
            let l = ctx.layouts[f];
            let off = match offsets.iter().find(|(st, _)| *st == l.stride) {
                Some(&(_, r)) => r,
                None => {
                    let r = ctx.point_offset(l, [Some(z), Some(y), Some(x)]);
                    offsets.push((l.stride, r));
                    r
                }
            };
            let base = ctx.field_base[f];
            ptrs.push(ctx.int(IntOp::Add, Type::U64, base.into(), off.into()));
        }
        ctx.point = [Some(z), Some(y), Some(x)];
        let mut values = ReadValues::new();
        for &(f, d) in &reads {
            let mut disp = d;
            if ctx.options.planted_off_by_one && d[2] == 0 && !ctx.in_place(f) {
                disp[2] = 1;
            }
            let dst = ctx.b.reg(ctx.fclass);
            let offset = ctx.disp_bytes(ctx.layouts[f], disp);
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
    }
    ctx.b.place(end);
    ctx.b.push(Inst::Ret);
    Ok(LaunchDims {
        grid: [
            blocks(ctx.shape[2], bx * m),
            blocks(ctx.shape[1], by),
            blocks(ctx.shape[0], bz),
        ],
        block: s.block,
    })
}
