//! The one place that spells PTX: `Display` for the AST of `ptx/mod.rs`.
//!
//! Output follows nvcc's conventions (register arrays `%p %r %rd %f %fd` numbered from 1,
//! float immediates in hex so they are exact, negative address offsets as `[%rd1+-8]`) and
//! stays inside the subset of notes/ptx_subset.md.

use std::fmt;

use super::{
    Address, Axis, Cmp, Entry, FloatOp, FloatUnaryOp, Guard, Inst, IntOp, Label, Module, Operand,
    PredOp, Reg, RegClass, Space, Special, Statement, Type,
};

impl RegClass {
    fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B32 => "%r",
            RegClass::B64 => "%rd",
            RegClass::F32 => "%f",
            RegClass::F64 => "%fd",
        }
    }

    fn decl_type(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
            RegClass::F64 => ".f64",
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.class.prefix(), self.index)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Type::Pred => "pred",
            Type::B32 => "b32",
            Type::B64 => "b64",
            Type::U32 => "u32",
            Type::S32 => "s32",
            Type::U64 => "u64",
            Type::S64 => "s64",
            Type::F32 => "f32",
            Type::F64 => "f64",
        })
    }
}

impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, axis) = match *self {
            Special::Tid(a) => ("tid", a),
            Special::Ntid(a) => ("ntid", a),
            Special::Ctaid(a) => ("ctaid", a),
            Special::Nctaid(a) => ("nctaid", a),
        };
        let axis = match axis {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        };
        write!(f, "%{name}.{axis}")
    }
}

/// An operand in the context of its entry (shared arrays print by name).
struct Op<'a>(&'a Entry, Operand);

impl fmt::Display for Op<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Operand::Reg(r) => write!(f, "{r}"),
            Operand::Int(v) => write!(f, "{v}"),
            Operand::F32(v) => write!(f, "0f{:08X}", v.to_bits()),
            Operand::F64(v) => write!(f, "0d{:016X}", v.to_bits()),
            Operand::Special(s) => write!(f, "{s}"),
            Operand::Shared(i) => f.write_str(&self.0.shared[i].name),
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.offset == 0 {
            write!(f, "[{}]", self.base)
        } else {
            write!(f, "[{}+{}]", self.base, self.offset)
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$L{}", self.0)
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negated {
            write!(f, "@!{} ", self.pred)
        } else {
            write!(f, "@{} ", self.pred)
        }
    }
}

fn space(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
    }
}

fn cmp(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "eq",
        Cmp::Ne => "ne",
        Cmp::Lt => "lt",
        Cmp::Le => "le",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
        Cmp::Neu => "neu",
        Cmp::Nan => "nan",
    }
}

/// An instruction in the context of its entry.
struct Line<'a>(&'a Entry, &'a Inst);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let op = |o: Operand| Op(e, o);
        match *self.1 {
            Inst::LdParam { ty, dst, param } => {
                write!(f, "ld.param.{ty} {dst}, [{}];", e.params[param].name)
            }
            Inst::CvtaGlobal { dst, src } => write!(f, "cvta.to.global.u64 {dst}, {src};"),
            Inst::Mov { ty, dst, src } => write!(f, "mov.{ty} {dst}, {};", op(src)),
            Inst::Int {
                op: o,
                ty,
                dst,
                a,
                b,
            } => {
                let name = match o {
                    IntOp::Add => "add",
                    IntOp::Sub => "sub",
                    IntOp::MulLo => "mul.lo",
                    IntOp::Min => "min",
                    IntOp::Max => "max",
                    IntOp::Shl => "shl",
                    IntOp::Shr => "shr",
                    IntOp::And => "and",
                    IntOp::Or => "or",
                };
                write!(f, "{name}.{ty} {dst}, {}, {};", op(a), op(b))
            }
            Inst::MulWide { ty, dst, a, b } => {
                write!(f, "mul.wide.{ty} {dst}, {}, {};", op(a), op(b))
            }
            Inst::MadWide { ty, dst, a, b, c } => {
                write!(f, "mad.wide.{ty} {dst}, {}, {}, {};", op(a), op(b), op(c))
            }
            Inst::MadLo { ty, dst, a, b, c } => {
                write!(f, "mad.lo.{ty} {dst}, {}, {}, {};", op(a), op(b), op(c))
            }
            Inst::Float {
                op: o,
                ty,
                dst,
                a,
                b,
            } => {
                let name = match o {
                    FloatOp::Add => "add.rn",
                    FloatOp::Sub => "sub.rn",
                    FloatOp::Mul => "mul.rn",
                    FloatOp::Div => "div.rn",
                    FloatOp::Min => "min",
                    FloatOp::Max => "max",
                };
                write!(f, "{name}.{ty} {dst}, {}, {};", op(a), op(b))
            }
            Inst::FloatUnary { op: o, ty, dst, a } => match o {
                FloatUnaryOp::Neg => write!(f, "neg.{ty} {dst}, {};", op(a)),
                FloatUnaryOp::Abs => write!(f, "abs.{ty} {dst}, {};", op(a)),
                FloatUnaryOp::Sqrt => write!(f, "sqrt.rn.{ty} {dst}, {};", op(a)),
                FloatUnaryOp::Floor => write!(f, "cvt.rmi.{ty}.{ty} {dst}, {};", op(a)),
                FloatUnaryOp::Ceil => write!(f, "cvt.rpi.{ty}.{ty} {dst}, {};", op(a)),
                FloatUnaryOp::Rint => write!(f, "cvt.rni.{ty}.{ty} {dst}, {};", op(a)),
            },
            Inst::Fma { ty, dst, a, b, c } => {
                write!(f, "fma.rn.{ty} {dst}, {}, {}, {};", op(a), op(b), op(c))
            }
            Inst::CvtFloat {
                dst_ty,
                src_ty,
                dst,
                src,
            } => {
                let rounding = match (dst_ty, src_ty) {
                    (Type::F64, Type::F32) => "",
                    (Type::F32 | Type::F64, _) => ".rn",
                    _ => ".rzi",
                };
                write!(f, "cvt{rounding}.{dst_ty}.{src_ty} {dst}, {src};")
            }
            Inst::CvtInt {
                dst_ty,
                src_ty,
                dst,
                src,
            } => write!(f, "cvt.{dst_ty}.{src_ty} {dst}, {src};"),
            Inst::Setp {
                cmp: c,
                ty,
                dst,
                a,
                b,
            } => write!(f, "setp.{}.{ty} {dst}, {}, {};", cmp(c), op(a), op(b)),
            Inst::Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => write!(f, "selp.{ty} {dst}, {}, {}, {pred};", op(a), op(b)),
            Inst::Pred { op: o, dst, a, b } => {
                let name = match o {
                    PredOp::And => "and",
                    PredOp::Or => "or",
                };
                write!(f, "{name}.pred {dst}, {a}, {b};")
            }
            Inst::NotPred { dst, a } => write!(f, "not.pred {dst}, {a};"),
            Inst::Ld {
                space: s,
                ty,
                dst,
                addr,
            } => write!(f, "ld.{}.{ty} {dst}, {addr};", space(s)),
            Inst::St {
                space: s,
                ty,
                addr,
                src,
            } => write!(f, "st.{}.{ty} {addr}, {src};", space(s)),
            Inst::BarSync => f.write_str("bar.sync 0;"),
            Inst::Bra { target, uniform } => {
                if uniform {
                    write!(f, "bra.uni {target};")
                } else {
                    write!(f, "bra {target};")
                }
            }
            Inst::Ret => f.write_str("ret;"),
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, ".visible .entry {}(", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            let sep = if i + 1 == self.params.len() { "" } else { "," };
            writeln!(f, "\t.param .{} {}{sep}", p.ty, p.name)?;
        }
        writeln!(f, ")")?;
        writeln!(f, "{{")?;
        for class in RegClass::ALL {
            let n = self.reg_counts[class.index()];
            if n > 0 {
                writeln!(
                    f,
                    "\t.reg {} {}<{}>;",
                    class.decl_type(),
                    class.prefix(),
                    n + 1
                )?;
            }
        }
        for s in &self.shared {
            writeln!(
                f,
                "\t.shared .align {} .b8 {}[{}];",
                s.align, s.name, s.bytes
            )?;
        }
        writeln!(f)?;
        for stmt in &self.body {
            match stmt {
                Statement::Inst(guard, inst) => {
                    f.write_str("\t")?;
                    if let Some(g) = guard {
                        write!(f, "{g}")?;
                    }
                    writeln!(f, "{}", Line(self, inst))?;
                }
                Statement::Label(l) => writeln!(f, "{l}:")?,
                Statement::Comment(c) => writeln!(f, "\t// {c}")?,
            }
        }
        writeln!(f, "}}")
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "//")?;
        writeln!(f, "// Generated by stencil-cuda from the stencil IR.")?;
        writeln!(f, "//")?;
        writeln!(f)?;
        writeln!(f, ".version {}.{}", self.version.0, self.version.1)?;
        writeln!(f, ".target sm_{}", self.target)?;
        writeln!(f, ".address_size 64")?;
        for e in &self.entries {
            writeln!(f)?;
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EntryBuilder, Param};
    use super::*;

    #[test]
    fn prints_declarations_guards_and_hex_immediates() {
        let mut b = EntryBuilder::new("k");
        let p = b.param(Param {
            name: "k_param_0".into(),
            ty: Type::F64,
        });
        let x = b.reg(RegClass::F64);
        let y = b.reg(RegClass::F64);
        let pr = b.reg(RegClass::Pred);
        b.push(Inst::LdParam {
            ty: Type::F64,
            dst: x,
            param: p,
        });
        b.push(Inst::Float {
            op: FloatOp::Mul,
            ty: Type::F64,
            dst: y,
            a: Operand::Reg(x),
            b: Operand::F64(0.5),
        });
        b.push(Inst::Setp {
            cmp: Cmp::Neu,
            ty: Type::F64,
            dst: pr,
            a: x.into(),
            b: y.into(),
        });
        let end = b.label();
        b.guarded(
            Guard {
                pred: pr,
                negated: true,
            },
            Inst::Bra {
                target: end,
                uniform: false,
            },
        );
        b.place(end);
        b.push(Inst::Ret);
        let text = b.finish().to_string();
        assert!(text.contains(".param .f64 k_param_0"), "{text}");
        assert!(text.contains(".reg .f64 %fd<3>;"), "{text}");
        assert!(text.contains(".reg .pred %p<2>;"), "{text}");
        assert!(
            text.contains("mul.rn.f64 %fd2, %fd1, 0d3FE0000000000000;"),
            "{text}"
        );
        assert!(text.contains("setp.neu.f64 %p1, %fd1, %fd2;"), "{text}");
        assert!(text.contains("@!%p1 bra $L1;"), "{text}");
        assert!(text.contains("$L1:\n\tret;"), "{text}");
    }

    #[test]
    fn prints_the_math_instructions() {
        let mut b = EntryBuilder::new("m");
        let x = b.reg(RegClass::F64);
        let y = b.reg(RegClass::F64);
        let f = b.reg(RegClass::F32);
        let bits = b.reg(RegClass::B64);
        let k = b.reg(RegClass::B32);
        let p = b.reg(RegClass::Pred);
        let insts = [
            Inst::Fma {
                ty: Type::F64,
                dst: y,
                a: x.into(),
                b: Operand::F64(2.0),
                c: Operand::F64(-1.0),
            },
            Inst::FloatUnary {
                op: FloatUnaryOp::Rint,
                ty: Type::F64,
                dst: y,
                a: x.into(),
            },
            Inst::CvtFloat {
                dst_ty: Type::F32,
                src_ty: Type::F64,
                dst: f,
                src: x,
            },
            Inst::CvtFloat {
                dst_ty: Type::F64,
                src_ty: Type::F32,
                dst: x,
                src: f,
            },
            Inst::CvtFloat {
                dst_ty: Type::S32,
                src_ty: Type::F64,
                dst: k,
                src: x,
            },
            Inst::CvtFloat {
                dst_ty: Type::F64,
                src_ty: Type::S64,
                dst: x,
                src: bits,
            },
            Inst::Mov {
                ty: Type::B64,
                dst: bits,
                src: x.into(),
            },
            Inst::Int {
                op: IntOp::Shl,
                ty: Type::B64,
                dst: bits,
                a: bits.into(),
                b: Operand::Int(52),
            },
            Inst::Int {
                op: IntOp::Shr,
                ty: Type::S32,
                dst: k,
                a: k.into(),
                b: Operand::Int(1),
            },
            Inst::Int {
                op: IntOp::And,
                ty: Type::B64,
                dst: bits,
                a: bits.into(),
                b: Operand::Int(3),
            },
            Inst::Int {
                op: IntOp::Or,
                ty: Type::B64,
                dst: bits,
                a: bits.into(),
                b: Operand::Int(4607182418800017408),
            },
            Inst::Setp {
                cmp: Cmp::Nan,
                ty: Type::F64,
                dst: p,
                a: x.into(),
                b: y.into(),
            },
        ];
        for inst in insts {
            b.push(inst);
        }
        let text = b.finish().to_string();
        for line in [
            "fma.rn.f64 %fd2, %fd1, 0d4000000000000000, 0dBFF0000000000000;",
            "cvt.rni.f64.f64 %fd2, %fd1;",
            "cvt.rn.f32.f64 %f1, %fd1;",
            "cvt.f64.f32 %fd1, %f1;",
            "cvt.rzi.s32.f64 %r1, %fd1;",
            "cvt.rn.f64.s64 %fd1, %rd1;",
            "mov.b64 %rd1, %fd1;",
            "shl.b64 %rd1, %rd1, 52;",
            "shr.s32 %r1, %r1, 1;",
            "and.b64 %rd1, %rd1, 3;",
            "or.b64 %rd1, %rd1, 4607182418800017408;",
            "setp.nan.f64 %p1, %fd1, %fd2;",
        ] {
            assert!(text.contains(&format!("\t{line}\n")), "{line}\n{text}");
        }
    }

    #[test]
    fn negative_offsets_print_as_plus_minus() {
        let a = Address {
            base: Reg {
                class: RegClass::B64,
                index: 3,
            },
            offset: -16,
        };
        assert_eq!(a.to_string(), "[%rd3+-16]");
        assert_eq!(Operand::F32(1.0).to_string_in_test(), "0f3F800000");
    }

    impl Operand {
        fn to_string_in_test(self) -> String {
            let e = EntryBuilder::new("t").finish();
            Op(&e, self).to_string()
        }
    }
}
