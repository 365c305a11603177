//! The math routines' instruction emitter ([`Emitter`]): appends `f64` and integer
//! instructions to an entry, each allocating its destination, and [`imm`] for `f64` immediates.

use crate::codegen::context::class_of;
use crate::ptx::{
    Cmp, EntryBuilder, FloatOp, FloatUnaryOp, Inst, IntOp, Operand, PredOp, Reg, RegClass, Type,
};

/// An `f64` immediate.
pub(super) fn imm(value: f64) -> Operand {
    Operand::F64(value)
}

/// Appends instructions of the math routines to an entry; every method allocates its
/// destination. Float methods work in `f64`.
pub(super) struct Emitter<'b> {
    pub(super) b: &'b mut EntryBuilder,
}

impl Emitter<'_> {
    pub(super) fn float(
        &mut self,
        op: FloatOp,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Reg {
        let dst = self.b.reg(RegClass::F64);
        self.b.push(Inst::Float {
            op,
            ty: Type::F64,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }

    pub(super) fn add(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Add, a, b)
    }

    pub(super) fn sub(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Sub, a, b)
    }

    pub(super) fn mul(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Mul, a, b)
    }

    pub(super) fn div(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Div, a, b)
    }

    pub(super) fn min(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Min, a, b)
    }

    pub(super) fn max(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.float(FloatOp::Max, a, b)
    }

    /// `a * b + c`, rounded once.
    pub(super) fn fma(
        &mut self,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
        c: impl Into<Operand>,
    ) -> Reg {
        let dst = self.b.reg(RegClass::F64);
        self.b.push(Inst::Fma {
            ty: Type::F64,
            dst,
            a: a.into(),
            b: b.into(),
            c: c.into(),
        });
        dst
    }

    pub(super) fn unary(&mut self, op: FloatUnaryOp, a: Reg) -> Reg {
        let dst = self.b.reg(RegClass::F64);
        self.b.push(Inst::FloatUnary {
            op,
            ty: Type::F64,
            dst,
            a: a.into(),
        });
        dst
    }

    pub(super) fn neg(&mut self, a: Reg) -> Reg {
        self.unary(FloatUnaryOp::Neg, a)
    }

    pub(super) fn abs(&mut self, a: Reg) -> Reg {
        self.unary(FloatUnaryOp::Abs, a)
    }

    /// `setp.cmp.ty` into a fresh predicate.
    pub(super) fn setp_ty(
        &mut self,
        cmp: Cmp,
        ty: Type,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Reg {
        let dst = self.b.reg(RegClass::Pred);
        self.b.push(Inst::Setp {
            cmp,
            ty,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }

    /// `setp.cmp.f64`.
    pub(super) fn setp(&mut self, cmp: Cmp, a: impl Into<Operand>, b: impl Into<Operand>) -> Reg {
        self.setp_ty(cmp, Type::F64, a, b)
    }

    /// Whether `a` is NaN.
    pub(super) fn is_nan(&mut self, a: Reg) -> Reg {
        self.setp(Cmp::Nan, a, a)
    }

    /// `pred ? a : b` in f64.
    pub(super) fn select(
        &mut self,
        pred: Reg,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Reg {
        let dst = self.b.reg(RegClass::F64);
        self.b.push(Inst::Selp {
            ty: Type::F64,
            dst,
            a: a.into(),
            b: b.into(),
            pred,
        });
        dst
    }

    pub(super) fn pred(&mut self, op: PredOp, a: Reg, b: Reg) -> Reg {
        let dst = self.b.reg(RegClass::Pred);
        self.b.push(Inst::Pred { op, dst, a, b });
        dst
    }

    pub(super) fn and(&mut self, a: Reg, b: Reg) -> Reg {
        self.pred(PredOp::And, a, b)
    }

    pub(super) fn or(&mut self, a: Reg, b: Reg) -> Reg {
        self.pred(PredOp::Or, a, b)
    }

    pub(super) fn not(&mut self, a: Reg) -> Reg {
        let dst = self.b.reg(RegClass::Pred);
        self.b.push(Inst::NotPred { dst, a });
        dst
    }

    /// An integer or bit operation of type `ty` into a fresh register of its class.
    pub(super) fn int(
        &mut self,
        op: IntOp,
        ty: Type,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Reg {
        let dst = self.b.reg(class_of(ty));
        self.b.push(Inst::Int {
            op,
            ty,
            dst,
            a: a.into(),
            b: b.into(),
        });
        dst
    }

    /// The bits of an f64 (`mov.b64` into a 64-bit integer register).
    pub(super) fn bits(&mut self, a: Reg) -> Reg {
        let dst = self.b.reg(RegClass::B64);
        self.b.push(Inst::Mov {
            ty: Type::B64,
            dst,
            src: a.into(),
        });
        dst
    }

    /// The f64 with the given bits.
    pub(super) fn float_of_bits(&mut self, a: Reg) -> Reg {
        let dst = self.b.reg(RegClass::F64);
        self.b.push(Inst::Mov {
            ty: Type::B64,
            dst,
            src: a.into(),
        });
        dst
    }

    /// `cvt` between a float type and another type (see [`Inst::CvtFloat`] for rounding).
    pub(super) fn cvt(&mut self, dst_ty: Type, src_ty: Type, src: Reg) -> Reg {
        let dst = self.b.reg(class_of(dst_ty));
        self.b.push(Inst::CvtFloat {
            dst_ty,
            src_ty,
            dst,
            src,
        });
        dst
    }

    /// `cvt` between integer types.
    pub(super) fn cvt_int(&mut self, dst_ty: Type, src_ty: Type, src: Reg) -> Reg {
        let dst = self.b.reg(class_of(dst_ty));
        self.b.push(Inst::CvtInt {
            dst_ty,
            src_ty,
            dst,
            src,
        });
        dst
    }

    /// `sum(coeffs[i] * z^i)` by Horner's rule with `fma` (at least two coefficients).
    pub(super) fn horner(&mut self, z: Reg, coeffs: &[f64]) -> Reg {
        let n = coeffs.len();
        let mut acc = self.fma(z, imm(coeffs[n - 1]), imm(coeffs[n - 2]));
        for &c in coeffs[..n - 2].iter().rev() {
            acc = self.fma(acc, z, imm(c));
        }
        acc
    }

    /// `(s, e)` with `s = fl(a + b)` and `s + e = a + b` exactly (Knuth's TwoSum).
    pub(super) fn two_sum(&mut self, a: Reg, b: Reg) -> (Reg, Reg) {
        let s = self.add(a, b);
        let bb = self.sub(s, a);
        let ab = self.sub(s, bb);
        let da = self.sub(a, ab);
        let db = self.sub(b, bb);
        let e = self.add(da, db);
        (s, e)
    }

    /// TwoSum for `|a| >= |b|` (Dekker's Fast2Sum).
    pub(super) fn fast_two_sum(&mut self, a: Reg, b: Reg) -> (Reg, Reg) {
        let s = self.add(a, b);
        let t = self.sub(s, a);
        let e = self.sub(b, t);
        (s, e)
    }

    /// `(p, e)` with `p = fl(a * b)` and `p + e = a * b` exactly.
    pub(super) fn two_prod(&mut self, a: Reg, b: impl Into<Operand> + Copy) -> (Reg, Reg) {
        let p = self.mul(a, b);
        let np = self.neg(p);
        let e = self.fma(a, b, np);
        (p, e)
    }
}
