//! The shared-memory side of the `SharedTile` streaming variant: one ring of tiles per input
//! (outputs read in place have none; planes `z+zmin ..= z+zmax`, each covering the block's points plus the input's halo
//! along y and x), and the cooperative copy of one plane into a ring slot. Points outside the
//! field's storage are skipped: no valid point reads them.

use std::collections::BTreeMap;

use super::context::{Ctx, bra, branch, zero};
use super::stream_state::{Stream, Tile};
use crate::ptx::{
    Address, Cmp, Guard, Inst, IntOp, Operand, PredOp, Reg, RegClass, SharedArray, Space, Type,
};

/// One shared ring per input, sized from the input's displacement ranges (outputs read in
/// place have none: they are read from global memory at the thread's own point, as
/// [`codegen::shared_bytes`](super::shared_bytes) counts).
pub(super) fn build_tiles(ctx: &mut Ctx<'_>, st: &mut Stream) {
    let [bx, by, _] = ctx.schedule.block.map(i64::from);
    let m = i64::from(ctx.schedule.merge);
    let mut ranges: BTreeMap<usize, [(i64, i64); 3]> = BTreeMap::new();
    for &(f, d) in ctx.reads().iter().filter(|(f, _)| !ctx.in_place(*f)) {
        let r = ranges.entry(f).or_insert([(0, 0); 3]);
        for a in 0..3 {
            r[a].0 = r[a].0.min(d[a]);
            r[a].1 = r[a].1.max(d[a]);
        }
    }
    let esz = ctx.esz;
    // Tile-local x of the thread's first point.
    let lx = match ctx.schedule.merge_kind {
        stencil_core::schedule::MergeKind::Block => {
            ctx.int(IntOp::MulLo, Type::U32, st.tid_x.into(), Operand::Int(m))
        }
        stencil_core::schedule::MergeKind::Cyclic => st.tid_x,
    };
    for (field, range) in ranges {
        let width = bx * m + range[2].1 - range[2].0;
        let height = by + range[1].1 - range[1].0;
        let planes = range[0].1 - range[0].0 + 1;
        let bytes = planes * width * height * esz;
        let array = ctx.b.shared(SharedArray {
            name: format!("tile_{field}"),
            align: 16,
            bytes: bytes as u64,
        });
        let array_base = ctx.mov(Type::U64, Operand::Shared(array));
        let cell = ctx.mad_lo(Type::U32, st.tid_y.into(), Operand::Int(width), lx.into());
        let thread_base =
            ctx.mad_wide(Type::U32, cell.into(), Operand::Int(esz), array_base.into());
        let ring = ctx.mov(Type::U32, Operand::Int(0));
        st.tiles.push(Tile {
            field,
            range,
            width,
            height,
            planes,
            thread_base,
            array_base,
            ring,
        });
    }
}

/// Loads the first `planes - 1` planes of every ring into slots `0 ..`.
pub(super) fn prologue_tiles(ctx: &mut Ctx<'_>, st: &Stream) {
    for t in &st.tiles {
        for j in 0..t.planes - 1 {
            let zp = ctx.int(
                IntOp::Add,
                Type::S32,
                st.z.into(),
                Operand::Int(t.range[0].0 + j),
            );
            load_plane(ctx, st, t, zp, Operand::Int(j));
        }
    }
}

/// The block copies plane `zp` (s32) of tile `t`'s field into ring slot `slot` (u32): rows
/// strided by the block's y threads, columns by its x threads; points outside the field's
/// storage are skipped (no valid point reads them).
pub(super) fn load_plane(ctx: &mut Ctx<'_>, st: &Stream, t: &Tile, zp: Reg, slot: Operand) {
    let esz = ctx.esz;
    let [bx, by, _] = ctx.schedule.block.map(i64::from);
    let l = ctx.layouts[t.field];
    let [_, ny, nx] = ctx.shape;
    ctx.b.comment(format!(
        "load a plane of field {} into shared memory",
        t.field
    ));
    let slot_base = ctx.mad_wide(
        Type::U32,
        slot,
        Operand::Int(t.plane_bytes(esz)),
        t.array_base.into(),
    );
    let plane_base = ctx.mad_wide(
        Type::S32,
        zp.into(),
        Operand::Int(l.stride[0] * esz),
        ctx.field_base[t.field].into(),
    );
    let value = ctx.mov(ctx.fty, zero(ctx.fty));
    let row = ctx.mov(Type::U32, st.tid_y.into());
    let row_loop = ctx.b.label();
    let row_end = ctx.b.label();
    ctx.b.place(row_loop);
    let row_done = ctx.setp(Cmp::Ge, Type::U32, row.into(), Operand::Int(t.height));
    branch(ctx, row_done, false, row_end);
    let gy0 = ctx.int(IntOp::Add, Type::S32, row.into(), st.block_y.into());
    let gy = ctx.int(
        IntOp::Add,
        Type::S32,
        gy0.into(),
        Operand::Int(t.range[1].0),
    );
    let y_lo = ctx.setp(Cmp::Ge, Type::S32, gy.into(), Operand::Int(-l.halo[1]));
    let y_hi = ctx.setp(Cmp::Lt, Type::S32, gy.into(), Operand::Int(ny + l.halo[1]));
    let row_ok = ctx.b.reg(RegClass::Pred);
    ctx.b.push(Inst::Pred {
        op: PredOp::And,
        dst: row_ok,
        a: y_lo,
        b: y_hi,
    });
    let row_global = if l.stride[1] != 0 {
        ctx.mad_wide(
            Type::S32,
            gy.into(),
            Operand::Int(l.stride[1] * esz),
            plane_base.into(),
        )
    } else {
        plane_base
    };
    let row_shared = ctx.mad_wide(
        Type::U32,
        row.into(),
        Operand::Int(t.width * esz),
        slot_base.into(),
    );
    let col = ctx.mov(Type::U32, st.tid_x.into());
    let col_loop = ctx.b.label();
    let col_end = ctx.b.label();
    ctx.b.place(col_loop);
    let col_done = ctx.setp(Cmp::Ge, Type::U32, col.into(), Operand::Int(t.width));
    branch(ctx, col_done, false, col_end);
    let gx0 = ctx.int(IntOp::Add, Type::S32, col.into(), st.block_x.into());
    let gx = ctx.int(
        IntOp::Add,
        Type::S32,
        gx0.into(),
        Operand::Int(t.range[2].0),
    );
    let x_lo = ctx.setp(Cmp::Ge, Type::S32, gx.into(), Operand::Int(-l.halo[2]));
    let x_hi = ctx.setp(Cmp::Lt, Type::S32, gx.into(), Operand::Int(nx + l.halo[2]));
    let x_ok = ctx.b.reg(RegClass::Pred);
    ctx.b.push(Inst::Pred {
        op: PredOp::And,
        dst: x_ok,
        a: x_lo,
        b: x_hi,
    });
    let ok = ctx.b.reg(RegClass::Pred);
    ctx.b.push(Inst::Pred {
        op: PredOp::And,
        dst: ok,
        a: x_ok,
        b: row_ok,
    });
    let global = ctx.mad_wide(Type::S32, gx.into(), Operand::Int(esz), row_global.into());
    let shared = ctx.mad_wide(Type::U32, col.into(), Operand::Int(esz), row_shared.into());
    let guard = Guard {
        pred: ok,
        negated: false,
    };
    ctx.b.guarded(
        guard,
        Inst::Ld {
            space: Space::Global,
            ty: ctx.fty,
            dst: value,
            addr: Address {
                base: global,
                offset: 0,
            },
        },
    );
    ctx.b.guarded(
        guard,
        Inst::St {
            space: Space::Shared,
            ty: ctx.fty,
            addr: Address {
                base: shared,
                offset: 0,
            },
            src: value,
        },
    );
    ctx.b.push(Inst::Int {
        op: IntOp::Add,
        ty: Type::U32,
        dst: col,
        a: col.into(),
        b: Operand::Int(bx),
    });
    bra(ctx, col_loop);
    ctx.b.place(col_end);
    ctx.b.push(Inst::Int {
        op: IntOp::Add,
        ty: Type::U32,
        dst: row,
        a: row.into(),
        b: Operand::Int(by),
    });
    bra(ctx, row_loop);
    ctx.b.place(row_end);
}

/// `dst = (a + add) mod n` for `a < n`, in place on a fresh u32 register.
pub(super) fn add_mod(ctx: &mut Ctx<'_>, a: Reg, add: i64, n: i64) -> Reg {
    let s = ctx.int(IntOp::Add, Type::U32, a.into(), Operand::Int(add));
    let wrap = ctx.setp(Cmp::Ge, Type::U32, s.into(), Operand::Int(n));
    ctx.b.guarded(
        Guard {
            pred: wrap,
            negated: false,
        },
        Inst::Int {
            op: IntOp::Sub,
            ty: Type::U32,
            dst: s,
            a: s.into(),
            b: Operand::Int(n),
        },
    );
    s
}
