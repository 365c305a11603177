//! The state the variants share while they emit one entry ([`Ctx`]: the kernel, the schedule,
//! the options, the canonical axes and every field's layout), its small emitting helpers, and
//! the plain data every variant returns or reads: launch dimensions, generator options and the
//! planted reduction bugs of the tests.

use std::collections::BTreeSet;

use stencil_core::ir::{Expr, Kernel, Role};
use stencil_core::schedule::{GpuSchedule, GpuVariant, MergeKind};
use stencil_core::{ElemType, Error, ErrorKind, Geometry, Result};

use crate::ptx::{
    EntryBuilder, Guard, Inst, IntOp, Label, Operand, Param, Reg, RegClass, Special, Type,
};

/// Launch configuration of a generated entry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct LaunchDims {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

/// Options of the generator that do not change what a correct kernel computes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct CodegenOptions {
    /// Test-only hook: the thread-per-point variant reads inputs' x-offset 0 at x-offset +1 (a
    /// planted off-by-one that verification must catch; outputs read in place are left alone).
    /// Never set outside tests.
    #[doc(hidden)]
    pub planted_off_by_one: bool,
}

/// Test-only hook: a bug planted in the reduction variant, which the tests must catch. Never
/// set outside tests (see [`generate_planted`] and `EmulatedGpu::with_planted_reduction_bug`).
#[doc(hidden)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum PlantedReductionBug {
    /// No bug.
    #[default]
    None,
    /// The `bar.sync` between the threads' shared-memory writes and the lanes' reads is left
    /// out (a race that thread orders must expose).
    MissingBarrier,
    /// A block's points are dealt to lanes in contiguous runs (`BLOCK / LANES` points each)
    /// instead of by position modulo `LANES` (a wrong combine order that bit-exact comparison
    /// must catch).
    LaneOrder,
}

/// The kernel dimension of each canonical axis `(z, y, x)` under `variant`: thread-per-point
/// right-aligns the dimensions; the streaming variants put dimension 0 on `z` (the streamed
/// axis) and the last dimension on `x`.
pub(crate) fn axis_dims(variant: GpuVariant, n_dims: usize) -> [Option<usize>; 3] {
    match (variant, n_dims) {
        (_, 3) => [Some(0), Some(1), Some(2)],
        (GpuVariant::ThreadPerPoint, 2) => [None, Some(0), Some(1)],
        (_, 2) => [Some(0), None, Some(1)],
        _ => [None, None, Some(0)],
    }
}

/// Storage layout of one field on the canonical axes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Element strides along z, y, x (0 on an axis no kernel dimension maps to).
    pub(crate) stride: [i64; 3],
    /// Halo width along z, y, x (0 on an unmapped axis).
    pub(crate) halo: [i64; 3],
}

/// State shared by the variants while they emit one entry.
pub(crate) struct Ctx<'k> {
    pub(crate) kernel: &'k Kernel,
    pub(crate) schedule: GpuSchedule,
    pub(crate) options: CodegenOptions,
    /// A bug planted in the reduction variant (tests only).
    pub(crate) planted: PlantedReductionBug,
    pub(crate) entry_name: String,
    pub(crate) b: EntryBuilder,
    /// Float type of the kernel.
    pub(crate) fty: Type,
    /// Its register class.
    pub(crate) fclass: RegClass,
    /// Element size in bytes.
    pub(crate) esz: i64,
    /// Kernel dimension of each canonical axis z, y, x.
    pub(crate) axis_dim: [Option<usize>; 3],
    /// Interior extents along z, y, x (1 on an unmapped axis).
    pub(crate) shape: [i64; 3],
    /// Per field, in declaration order.
    pub(crate) layouts: Vec<Layout>,
    /// Per field: the global address of its interior point (0, .., 0) (set by `load_args`).
    pub(crate) field_base: Vec<Reg>,
    /// Scalar parameter values (set by `load_args`).
    pub(crate) params: Vec<Reg>,
    /// Per field: storage index of interior point (0, .., 0).
    pub(crate) origins: Vec<i64>,
    /// The current point's coordinates along z, y, x (u32 registers; `None` on an unmapped
    /// axis or where the variant has not set them), for the kernel's index values.
    pub(crate) point: [Option<Reg>; 3],
    /// The step number as the element type (the entry's last parameter, set by `load_args`
    /// for a kernel that reads it).
    pub(crate) step: Option<Reg>,
}

impl<'k> Ctx<'k> {
    pub(crate) fn new(
        kernel: &'k Kernel,
        schedule: &GpuSchedule,
        geoms: &[Geometry],
        options: CodegenOptions,
        fused: bool,
    ) -> Result<Self> {
        let axis_dim = axis_dims(schedule.variant, kernel.n_dims);
        let (fty, fclass) = match kernel.elem() {
            ElemType::F32 => (Type::F32, RegClass::F32),
            ElemType::F64 => (Type::F64, RegClass::F64),
        };
        let esz = kernel.elem().size_bytes() as i64;
        let first = geoms[0];
        let mut shape = [1i64; 3];
        for (a, d) in axis_dim.iter().enumerate() {
            if let Some(d) = d {
                shape[a] = first.shape[*d] as i64;
            }
        }
        if shape.iter().any(|&v| v > i32::MAX as i64 / 2) {
            return Err(Error::new(
                ErrorKind::InvalidShape,
                format!(
                    "grid shape {:?} is too large for 32-bit GPU indices",
                    first.interior()
                ),
            ));
        }
        let mut layouts = Vec::with_capacity(geoms.len());
        for g in geoms {
            let mut l = Layout {
                stride: [0; 3],
                halo: [0; 3],
            };
            for (a, d) in axis_dim.iter().enumerate() {
                if let Some(d) = d {
                    l.stride[a] = g.strides[*d] as i64;
                    l.halo[a] = g.halo as i64;
                }
            }
            if l.stride.iter().any(|&s| s * esz > i32::MAX as i64) || g.len as i64 * esz < 0 {
                return Err(Error::new(
                    ErrorKind::InvalidShape,
                    format!(
                        "grid {:?} is too large for 32-bit GPU strides",
                        g.interior()
                    ),
                ));
            }
            layouts.push(l);
        }
        let variant = match schedule.variant {
            _ if fused => "fused",
            GpuVariant::ThreadPerPoint => "point",
            GpuVariant::Streaming => "stream",
            GpuVariant::SharedTile => "tile",
        };
        let clean: String = kernel
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let entry_name = format!("stencil_{clean}_{variant}");
        Ok(Ctx {
            kernel,
            schedule: *schedule,
            options,
            planted: PlantedReductionBug::None,
            b: EntryBuilder::new(&entry_name),
            entry_name,
            fty,
            fclass,
            esz,
            axis_dim,
            shape,
            layouts,
            field_base: Vec::new(),
            params: Vec::new(),
            origins: geoms.iter().map(|g| g.origin as i64).collect(),
            point: [None; 3],
            step: None,
        })
    }
}

/// Small emitting helpers: each allocates its destination and appends one instruction.
impl Ctx<'_> {
    /// Declares the kernel arguments and loads them: every field's global base address
    /// (advanced to the field's interior origin), then every scalar parameter.
    pub(crate) fn load_args(&mut self) {
        let kernel = self.kernel;
        let mut ptr_params = Vec::new();
        for i in 0..kernel.fields.len() {
            ptr_params.push(self.b.param(Param {
                name: format!("{}_field_{i}", self.entry_name),
                ty: Type::U64,
            }));
        }
        let mut scalar_params = Vec::new();
        for i in 0..kernel.params.len() {
            scalar_params.push(self.b.param(Param {
                name: format!("{}_param_{i}", self.entry_name),
                ty: self.fty,
            }));
        }
        for (i, p) in ptr_params.into_iter().enumerate() {
            let raw = self.b.reg(RegClass::B64);
            self.b.push(Inst::LdParam {
                ty: Type::U64,
                dst: raw,
                param: p,
            });
            let global = self.b.reg(RegClass::B64);
            self.b.push(Inst::CvtaGlobal {
                dst: global,
                src: raw,
            });
            let base = self.int(
                IntOp::Add,
                Type::U64,
                global.into(),
                Operand::Int(self.origins[i] * self.esz),
            );
            self.field_base.push(base);
        }
        for p in scalar_params {
            let r = self.b.reg(self.fclass);
            self.b.push(Inst::LdParam {
                ty: self.fty,
                dst: r,
                param: p,
            });
            self.params.push(r);
        }
        if kernel.reads_step() {
            let p = self.b.param(Param {
                name: format!("{}_step", self.entry_name),
                ty: self.fty,
            });
            let r = self.b.reg(self.fclass);
            self.b.push(Inst::LdParam {
                ty: self.fty,
                dst: r,
                param: p,
            });
            self.step = Some(r);
        }
    }

    /// The current point's index along kernel dimension `dim`, converted to the element type
    /// (`cvt.rn` from u32: the interpreter's value, the index being below 2^31).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidSchedule`] where the variant does not give its points' coordinates.
    pub(crate) fn index_value(&mut self, dim: usize) -> Result<Reg> {
        let axis = self.axis_dim.iter().position(|&d| d == Some(dim));
        let Some(coordinate) = axis.and_then(|a| self.point[a]) else {
            return Err(Error::new(
                ErrorKind::InvalidSchedule,
                format!(
                    "kernel `{}` reads its point's indices, which GPU variant {:?} does not give",
                    self.kernel.name, self.schedule.variant
                ),
            ));
        };
        let dst = self.b.reg(self.fclass);
        self.b.push(Inst::CvtFloat {
            dst_ty: self.fty,
            src_ty: Type::U32,
            dst,
            src: coordinate,
        });
        Ok(dst)
    }

    /// The step number, as the element type (the entry's step parameter).
    pub(crate) fn step_value(&mut self) -> Result<Reg> {
        self.step.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidSchedule,
                format!(
                    "kernel `{}`: the step number was not loaded (a generator bug)",
                    self.kernel.name
                ),
            )
        })
    }

    /// `mov.u32` of a special register.
    pub(crate) fn special(&mut self, s: Special) -> Reg {
        let r = self.b.reg(RegClass::B32);
        self.b.push(Inst::Mov {
            ty: Type::U32,
            dst: r,
            src: Operand::Special(s),
        });
        r
    }

    /// `mov` of an operand into a fresh register of the type's class.
    pub(crate) fn mov(&mut self, ty: Type, src: Operand) -> Reg {
        let r = self.b.reg(class_of(ty));
        self.b.push(Inst::Mov { ty, dst: r, src });
        r
    }

    /// An integer operation into a fresh register.
    pub(crate) fn int(&mut self, op: IntOp, ty: Type, a: Operand, b: Operand) -> Reg {
        let dst = self.b.reg(class_of(ty));
        self.b.push(Inst::Int { op, ty, dst, a, b });
        dst
    }

    /// `mad.lo` into a fresh register.
    pub(crate) fn mad_lo(&mut self, ty: Type, a: Operand, b: Operand, c: Operand) -> Reg {
        let dst = self.b.reg(class_of(ty));
        self.b.push(Inst::MadLo { ty, dst, a, b, c });
        dst
    }

    /// `mul.wide` (32 x 32 -> 64) into a fresh register.
    pub(crate) fn mul_wide(&mut self, ty: Type, a: Operand, b: Operand) -> Reg {
        let dst = self.b.reg(RegClass::B64);
        self.b.push(Inst::MulWide { ty, dst, a, b });
        dst
    }

    /// `mad.wide` (32 x 32 + 64 -> 64) into a fresh register.
    pub(crate) fn mad_wide(&mut self, ty: Type, a: Operand, b: Operand, c: Operand) -> Reg {
        let dst = self.b.reg(RegClass::B64);
        self.b.push(Inst::MadWide { ty, dst, a, b, c });
        dst
    }

    /// `setp` into a fresh predicate.
    pub(crate) fn setp(&mut self, cmp: crate::ptx::Cmp, ty: Type, a: Operand, b: Operand) -> Reg {
        let dst = self.b.reg(RegClass::Pred);
        self.b.push(Inst::Setp { cmp, ty, dst, a, b });
        dst
    }

    /// Byte offset (u64) of canonical point `(z, y, x)` (u32 registers or `None` for 0) in a
    /// field of layout `l`, relative to the field's interior origin.
    pub(crate) fn point_offset(&mut self, l: Layout, coords: [Option<Reg>; 3]) -> Reg {
        let esz = self.esz;
        let x = coords[2].expect("x coordinate");
        let mut off = self.mul_wide(Type::U32, x.into(), Operand::Int(esz));
        for axis in [1, 0] {
            if let Some(c) = coords[axis]
                && l.stride[axis] != 0
            {
                off = self.mad_wide(
                    Type::U32,
                    c.into(),
                    Operand::Int(l.stride[axis] * esz),
                    off.into(),
                );
            }
        }
        off
    }

    /// The byte offset of canonical displacement `d` in a field of layout `l`.
    pub(crate) fn disp_bytes(&self, l: Layout, d: [i64; 3]) -> i64 {
        (d[0] * l.stride[0] + d[1] * l.stride[1] + d[2] * l.stride[2]) * self.esz
    }

    /// Canonical `(z, y, x)` displacement of an IR offset.
    pub(crate) fn canon(&self, offset: stencil_core::ir::Offset) -> [i64; 3] {
        let mut d = [0i64; 3];
        for (a, dim) in self.axis_dim.iter().enumerate() {
            if let Some(dim) = dim {
                d[a] = i64::from(offset.get(*dim));
            }
        }
        d
    }

    /// Every (field index, canonical displacement) the kernel reads, sorted: inputs, and
    /// outputs read in place (at displacement zero; see [`Ctx::in_place`]).
    pub(crate) fn reads(&self) -> BTreeSet<(usize, [i64; 3])> {
        self.kernel
            .exprs
            .iter()
            .filter_map(|e| match e {
                Expr::Read { field, offset } => Some((field.index(), self.canon(*offset))),
                _ => None,
            })
            .collect()
    }

    /// Whether field `f` is an output (so a read of it is a read in place, at the point the
    /// thread stores: the variants load it from the output's own buffer at the thread's own
    /// point, never through a register queue or a shared tile).
    pub(crate) fn in_place(&self, f: usize) -> bool {
        self.kernel.fields[f].role == Role::Output
    }

    /// x step between the merged points of one thread.
    pub(crate) fn merge_step(&self) -> i64 {
        match self.schedule.merge_kind {
            MergeKind::Block => 1,
            MergeKind::Cyclic => i64::from(self.schedule.block[0]),
        }
    }

    /// The thread's first x coordinate (u32): block merging `(ctaid.x*bx + tid.x)*m`, cyclic
    /// `ctaid.x*bx*m + tid.x`.
    pub(crate) fn thread_x(&mut self, ctaid_x: Reg, tid_x: Reg) -> Reg {
        let bx = i64::from(self.schedule.block[0]);
        let m = i64::from(self.schedule.merge);
        match self.schedule.merge_kind {
            MergeKind::Block => {
                let t = self.mad_lo(Type::U32, ctaid_x.into(), Operand::Int(bx), tid_x.into());
                if m == 1 {
                    t
                } else {
                    self.int(IntOp::MulLo, Type::U32, t.into(), Operand::Int(m))
                }
            }
            MergeKind::Cyclic => self.mad_lo(
                Type::U32,
                ctaid_x.into(),
                Operand::Int(bx * m),
                tid_x.into(),
            ),
        }
    }
}

/// The register class holding values of `ty`.
pub(crate) fn class_of(ty: Type) -> RegClass {
    match ty {
        Type::Pred => RegClass::Pred,
        Type::B32 | Type::U32 | Type::S32 => RegClass::B32,
        Type::B64 | Type::U64 | Type::S64 => RegClass::B64,
        Type::F32 => RegClass::F32,
        Type::F64 => RegClass::F64,
    }
}

/// Blocks needed to cover `n` points with `per_block` points each.
pub(crate) fn blocks(n: i64, per_block: i64) -> u32 {
    u32::try_from((n + per_block - 1) / per_block).unwrap_or(u32::MAX)
}

/// Branches to `target` where `pred` holds (`negated`: where it does not).
pub(crate) fn branch(ctx: &mut Ctx<'_>, pred: Reg, negated: bool, target: Label) {
    ctx.b.guarded(
        Guard { pred, negated },
        Inst::Bra {
            target,
            uniform: false,
        },
    );
}

/// Branches to `target`.
pub(crate) fn bra(ctx: &mut Ctx<'_>, target: Label) {
    ctx.b.push(Inst::Bra {
        target,
        uniform: false,
    });
}

/// Zero of float type `ty`.
pub(crate) fn zero(ty: Type) -> Operand {
    match ty {
        Type::F32 => Operand::F32(0.0),
        _ => Operand::F64(0.0),
    }
}
