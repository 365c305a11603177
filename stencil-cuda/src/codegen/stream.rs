//! The streaming variants (2.5-D blocking): 2-D thread blocks over the canonical `(y, x)`
//! axes; each thread walks the outermost axis `z` in a loop (the whole extent, or a chunk of
//! `stream_chunk` planes per `blockIdx.z`: concurrent streaming), computing `merge` points
//! along x per plane. The loop body is repeated `unroll` times, with a remainder loop.
//!
//! - `Streaming`: every input column `(field, y-offset, x-offset)` the thread reads is kept in
//!   a register queue indexed by z-offset; each plane loads only the newest value of each
//!   column and shifts the queue (Datta's circular queue, in registers).
//! - `SharedTile`: every input's planes `z+zmin ..= z+zmax` live in a shared-memory ring of
//!   tiles covering the block's points plus halo; each plane the block loads the newest tile
//!   cooperatively between two `bar.sync`s, and every read comes from shared memory.
//!   Threads past the interior stay in the loop (they help load and reach every barrier) but
//!   compute nothing.
//!
//! In both, an output read in place has no queue and no tile: each valid point loads it from
//! the output's own buffer at that very point just before evaluating (and storing) it. A
//! cooperative tile would load points that other threads store, safe only as long as every
//! such load stays ordered before those stores; the direct load needs no such argument (only
//! this thread stores that point, after the load), and spares the tile's shared memory.

use std::collections::BTreeMap;

use stencil_core::Result;
use stencil_core::schedule::GpuVariant;

use super::context::{Ctx, LaunchDims, blocks, bra, branch, zero};
use super::eval::ReadValues;
use super::stream_state::{Column, Stream};
use super::tile::{add_mod, build_tiles, load_plane, prologue_tiles};
use crate::ptx::{
    Address, Axis, Cmp, Guard, Inst, IntOp, Operand, PredOp, Reg, RegClass, Space, Special, Type,
};

/// Emits the body; returns the launch dimensions.
pub(crate) fn emit(ctx: &mut Ctx<'_>) -> Result<LaunchDims> {
    let s = ctx.schedule;
    let shared = s.variant == GpuVariant::SharedTile;
    let [bx, by, _] = s.block.map(i64::from);
    let m = i64::from(s.merge);
    let step = ctx.merge_step();
    let chunk = i64::from(s.stream_chunk);
    let [nz, ny, nx] = ctx.shape;
    ctx.load_args();
    let ctaid = Axis::ALL.map(|a| ctx.special(Special::Ctaid(a)));
    let tid_x = ctx.special(Special::Tid(Axis::X));
    let tid_y = ctx.special(Special::Tid(Axis::Y));
    let x0 = ctx.thread_x(ctaid[0], tid_x);
    let y = ctx.mad_lo(Type::U32, ctaid[1].into(), Operand::Int(by), tid_y.into());
    let end = ctx.b.label();
    let y_inside = ctx.setp(Cmp::Lt, Type::U32, y.into(), Operand::Int(ny));
    if !shared {
        // No barrier in this variant: a thread past the interior simply leaves.
        branch(ctx, y_inside, true, end);
    }
    // The planes of this block column.
    let (z0, zend) = if chunk > 0 && chunk < nz {
        let z0 = ctx.int(
            IntOp::MulLo,
            Type::U32,
            ctaid[2].into(),
            Operand::Int(chunk),
        );
        let e = ctx.int(IntOp::Add, Type::U32, z0.into(), Operand::Int(chunk));
        let zend = ctx.int(IntOp::Min, Type::U32, e.into(), Operand::Int(nz));
        (z0, Operand::Reg(zend))
    } else {
        (ctx.mov(Type::U32, Operand::Int(0)), Operand::Int(nz))
    };
    let mut valid = Vec::new();
    for k in 0..m {
        let x = ctx.int(IntOp::Add, Type::U32, x0.into(), Operand::Int(k * step));
        let p = ctx.setp(Cmp::Lt, Type::U32, x.into(), Operand::Int(nx));
        if shared {
            let both = ctx.b.reg(RegClass::Pred);
            ctx.b.push(Inst::Pred {
                op: PredOp::And,
                dst: both,
                a: p,
                b: y_inside,
            });
            valid.push(both);
        } else {
            valid.push(p);
        }
    }
    // Pointers at (z0, y, x0), one offset per distinct layout.
    let mut offsets: Vec<([i64; 3], Reg)> = Vec::new();
    let mut ptrs = Vec::new();
    for f in 0..ctx.kernel.fields.len() {
        let l = ctx.layouts[f];
        let off = match offsets.iter().find(|(st, _)| *st == l.stride) {
            Some(&(_, r)) => r,
            None => {
                let r = ctx.point_offset(l, [Some(z0), Some(y), Some(x0)]);
                offsets.push((l.stride, r));
                r
            }
        };
        let base = ctx.field_base[f];
        ptrs.push(ctx.int(IntOp::Add, Type::U64, base.into(), off.into()));
    }
    let block_x = ctx.int(
        IntOp::MulLo,
        Type::U32,
        ctaid[0].into(),
        Operand::Int(bx * m),
    );
    let block_y = ctx.int(IntOp::MulLo, Type::U32, ctaid[1].into(), Operand::Int(by));
    let mut st = Stream {
        x0,
        z: z0,
        block_x,
        block_y,
        tid_x,
        tid_y,
        valid,
        ptrs,
        columns: Vec::new(),
        tiles: Vec::new(),
    };
    if shared {
        build_tiles(ctx, &mut st);
        prologue_tiles(ctx, &st);
    } else {
        build_columns(ctx, &mut st);
        prologue_columns(ctx, &st);
    }
    // z is advanced in place from here on.
    let z = ctx.mov(Type::U32, z0.into());
    st.z = z;
    let unroll = i64::from(s.unroll);
    if unroll > 1 {
        let main = ctx.b.label();
        let rest = ctx.b.label();
        ctx.b.place(main);
        let last = ctx.int(IntOp::Add, Type::U32, z.into(), Operand::Int(unroll));
        let over = ctx.setp(Cmp::Gt, Type::U32, last.into(), zend);
        branch(ctx, over, false, rest);
        for _ in 0..unroll {
            plane(ctx, &st, shared)?;
        }
        bra(ctx, main);
        ctx.b.place(rest);
    }
    let rem = ctx.b.label();
    ctx.b.place(rem);
    let done = ctx.setp(Cmp::Ge, Type::U32, z.into(), zend);
    branch(ctx, done, false, end);
    plane(ctx, &st, shared)?;
    bra(ctx, rem);
    ctx.b.place(end);
    ctx.b.push(Inst::Ret);
    let chunks = if chunk > 0 && chunk < nz {
        blocks(nz, chunk)
    } else {
        1
    };
    Ok(LaunchDims {
        grid: [blocks(nx, bx * m), blocks(ny, by), chunks],
        block: s.block,
    })
}

/// One column per (input, y-offset, x-offset from the thread's first point) over all merged
/// points (outputs read in place have none); queue registers start at zero so a column outside
/// the storage is never undefined.
fn build_columns(ctx: &mut Ctx<'_>, st: &mut Stream) {
    let step = ctx.merge_step();
    let mut ranges: BTreeMap<(usize, i64, i64), (i64, i64)> = BTreeMap::new();
    for &(f, d) in ctx.reads().iter().filter(|(f, _)| !ctx.in_place(*f)) {
        for k in 0..i64::from(ctx.schedule.merge) {
            let key = (f, d[1], k * step + d[2]);
            let r = ranges.entry(key).or_insert((d[0], d[0]));
            r.0 = r.0.min(d[0]);
            r.1 = r.1.max(d[0]);
        }
    }
    let nx = ctx.shape[2];
    for ((field, dy, cx), (zmin, zmax)) in ranges {
        let queue: Vec<Reg> = (zmin..=zmax)
            .map(|_| ctx.mov(ctx.fty, zero(ctx.fty)))
            .collect();
        let gx = ctx.int(IntOp::Add, Type::S32, st.x0.into(), Operand::Int(cx));
        let limit = nx + ctx.layouts[field].halo[2];
        let inside = ctx.setp(Cmp::Lt, Type::S32, gx.into(), Operand::Int(limit));
        st.columns.push(Column {
            field,
            dy,
            cx,
            zmin,
            queue,
            inside,
        });
    }
}

fn column_load(ctx: &mut Ctx<'_>, st: &Stream, c: &Column, dz: i64) {
    let l = ctx.layouts[c.field];
    let offset = ctx.disp_bytes(l, [dz, c.dy, c.cx]);
    ctx.b.guarded(
        Guard {
            pred: c.inside,
            negated: false,
        },
        Inst::Ld {
            space: Space::Global,
            ty: ctx.fty,
            dst: c.queue[(dz - c.zmin) as usize],
            addr: Address {
                base: st.ptrs[c.field],
                offset,
            },
        },
    );
}

/// Fills every queue but its newest entry, for the first plane.
fn prologue_columns(ctx: &mut Ctx<'_>, st: &Stream) {
    for c in &st.columns {
        let zmax = c.zmin + c.queue.len() as i64 - 1;
        for dz in c.zmin..zmax {
            column_load(ctx, st, c, dz);
        }
    }
}

/// One plane of the loop: get the reads, compute and store every valid point, advance.
fn plane(ctx: &mut Ctx<'_>, st: &Stream, shared: bool) -> Result<()> {
    let esz = ctx.esz;
    let step = ctx.merge_step();
    let reads = ctx.reads();
    // Per tile and z-offset: the address of the thread's cell in that plane's slot.
    let mut slot_bases: Vec<Vec<Reg>> = Vec::new();
    if shared {
        ctx.b.push(Inst::BarSync);
        for t in &st.tiles {
            let newest = add_mod(ctx, t.ring, t.planes - 1, t.planes);
            let zp = ctx.int(
                IntOp::Add,
                Type::S32,
                st.z.into(),
                Operand::Int(t.range[0].1),
            );
            load_plane(ctx, st, t, zp, newest.into());
        }
        ctx.b.push(Inst::BarSync);
        for t in &st.tiles {
            let mut bases = Vec::new();
            for j in 0..t.planes {
                let slot = if j == 0 {
                    t.ring
                } else {
                    add_mod(ctx, t.ring, j, t.planes)
                };
                bases.push(ctx.mad_wide(
                    Type::U32,
                    slot.into(),
                    Operand::Int(t.plane_bytes(esz)),
                    t.thread_base.into(),
                ));
            }
            slot_bases.push(bases);
        }
    } else {
        for c in &st.columns {
            let zmax = c.zmin + c.queue.len() as i64 - 1;
            column_load(ctx, st, c, zmax);
        }
    }
    let skip = ctx.b.label();
    // The plane's y, for a kernel that reads its point's indices (none emitted otherwise).
    let y = ctx.kernel.reads_indices().then(|| {
        ctx.int(
            IntOp::Add,
            Type::U32,
            st.block_y.into(),
            Operand::Reg(st.tid_y),
        )
    });
    for k in 0..i64::from(ctx.schedule.merge) {
        branch(ctx, st.valid[k as usize], true, skip);
        if let Some(y) = y {
            let x = ctx.int(IntOp::Add, Type::U32, st.x0.into(), Operand::Int(k * step));
            ctx.point = [Some(st.z), Some(y), Some(x)];
        }
        let mut values = ReadValues::new();
        for &(f, d) in &reads {
            let reg = if ctx.in_place(f) {
                // The output at this very point, from its own buffer, before the store below.
                let dst = ctx.b.reg(ctx.fclass);
                let offset = ctx.disp_bytes(ctx.layouts[f], d) + k * step * esz;
                ctx.b.push(Inst::Ld {
                    space: Space::Global,
                    ty: ctx.fty,
                    dst,
                    addr: Address {
                        base: st.ptrs[f],
                        offset,
                    },
                });
                dst
            } else if shared {
                let ti = st.tiles.iter().position(|t| t.field == f).expect("tile");
                let t = &st.tiles[ti];
                let base = slot_bases[ti][(d[0] - t.range[0].0) as usize];
                let cell = (d[1] - t.range[1].0) * t.width + k * step + d[2] - t.range[2].0;
                let dst = ctx.b.reg(ctx.fclass);
                ctx.b.push(Inst::Ld {
                    space: Space::Shared,
                    ty: ctx.fty,
                    dst,
                    addr: Address {
                        base,
                        offset: cell * esz,
                    },
                });
                dst
            } else {
                let c = st
                    .columns
                    .iter()
                    .find(|c| c.field == f && c.dy == d[1] && c.cx == k * step + d[2])
                    .expect("column");
                c.queue[(d[0] - c.zmin) as usize]
            };
            values.insert((f, d), reg);
        }
        for (f, v) in ctx.eval_point(&values)? {
            ctx.b.push(Inst::St {
                space: Space::Global,
                ty: ctx.fty,
                addr: Address {
                    base: st.ptrs[f],
                    offset: k * step * esz,
                },
                src: v,
            });
        }
    }
    ctx.b.place(skip);
    if shared {
        for t in &st.tiles {
            if t.planes > 1 {
                let next = add_mod(ctx, t.ring, 1, t.planes);
                ctx.b.push(Inst::Mov {
                    ty: Type::U32,
                    dst: t.ring,
                    src: next.into(),
                });
            }
        }
    } else {
        for c in &st.columns {
            for i in 1..c.queue.len() {
                ctx.b.push(Inst::Mov {
                    ty: ctx.fty,
                    dst: c.queue[i - 1],
                    src: c.queue[i].into(),
                });
            }
        }
    }
    for f in 0..st.ptrs.len() {
        let plane_bytes = ctx.layouts[f].stride[0] * esz;
        if plane_bytes != 0 {
            ctx.b.push(Inst::Int {
                op: IntOp::Add,
                ty: Type::U64,
                dst: st.ptrs[f],
                a: st.ptrs[f].into(),
                b: Operand::Int(plane_bytes),
            });
        }
    }
    ctx.b.push(Inst::Int {
        op: IntOp::Add,
        ty: Type::U32,
        dst: st.z,
        a: st.z.into(),
        b: Operand::Int(1),
    });
    Ok(())
}
