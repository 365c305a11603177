//! Turns one [`RawInstruction`] into a typed [`Op`]: checks the opcode and its modifiers against
//! the subset, the operand count, and each operand against the instruction type (PTX's operand
//! type rules), and resolves registers, labels, parameters and shared variables to indices and
//! addresses.

use std::collections::HashMap;

use super::error::{EmulatorError, EmulatorErrorKind};
use super::lexer::parse_unsigned;
use super::program::{
    Address, BinaryOp, Compare, Guard, Op, Param, ParamType, Reg, SharedVariable, Space, Special,
    Src, TernaryOp, Ty, UnaryOp,
};
use super::raw::{RawInstruction, RawOperand};

/// What the decoder may resolve names against.
pub(crate) struct DecodeContext<'a> {
    pub(crate) registers: &'a HashMap<String, Reg>,
    pub(crate) register_types: &'a [(String, Ty)],
    pub(crate) labels: &'a HashMap<String, u32>,
    pub(crate) shared: &'a [SharedVariable],
    pub(crate) params: &'a [Param],
}

const INTEGER: &[Ty] = &[Ty::S32, Ty::U32, Ty::S64, Ty::U64];
const FLOAT: &[Ty] = &[Ty::F32, Ty::F64];
const MEMORY: &[Ty] = &[Ty::F32, Ty::F64, Ty::U32, Ty::S32, Ty::U64];
const MOVE: &[Ty] = &[
    Ty::U32,
    Ty::S32,
    Ty::U64,
    Ty::S64,
    Ty::B32,
    Ty::B64,
    Ty::F32,
    Ty::F64,
    Ty::Pred,
];
const SELECT: &[Ty] = &[
    Ty::B32,
    Ty::B64,
    Ty::F32,
    Ty::F64,
    Ty::S32,
    Ty::U32,
    Ty::S64,
    Ty::U64,
];

/// Decodes `raw` into its operation and guard.
pub(crate) fn decode(
    raw: &RawInstruction,
    context: &DecodeContext<'_>,
) -> Result<(Op, Option<Guard>), EmulatorError> {
    let decoder = Decoder { raw, context };
    let guard = match &raw.guard {
        Some((name, negated)) => Some(Guard {
            predicate: decoder.register(name, Ty::Pred)?,
            negated: *negated,
        }),
        None => None,
    };
    Ok((decoder.op()?, guard))
}

struct Decoder<'a> {
    raw: &'a RawInstruction,
    context: &'a DecodeContext<'a>,
}

impl Decoder<'_> {
    fn error(&self, message: impl Into<String>) -> EmulatorError {
        EmulatorError::at_line(
            EmulatorErrorKind::Parse,
            self.raw.line,
            format!("`{}`: {}", self.raw.opcode, message.into()),
        )
    }

    fn unsupported(&self) -> EmulatorError {
        EmulatorError::at_line(
            EmulatorErrorKind::Parse,
            self.raw.line,
            format!(
                "unsupported instruction `{}` (outside the PTX subset the emulator executes)",
                self.raw.opcode
            ),
        )
    }

    fn ty(&self, suffix: &str, allowed: &[Ty]) -> Result<Ty, EmulatorError> {
        match Ty::from_suffix(suffix) {
            Some(ty) if allowed.contains(&ty) => Ok(ty),
            _ => Err(self.unsupported()),
        }
    }

    fn operands<const N: usize>(&self) -> Result<[&RawOperand; N], EmulatorError> {
        let operands: Vec<&RawOperand> = self.raw.operands.iter().collect();
        operands.try_into().map_err(|_| {
            self.error(format!(
                "expected {N} operands, found {}",
                self.raw.operands.len()
            ))
        })
    }

    fn register(&self, name: &str, ty: Ty) -> Result<Reg, EmulatorError> {
        let Some(&reg) = self.context.registers.get(name) else {
            return Err(self.error(format!("undeclared register `{name}`")));
        };
        let declared = self.context.register_types[reg as usize].1;
        if !declared.accepts(ty) {
            return Err(self.error(format!(
                "register `{name}` is declared .{} but used as .{}",
                declared.name(),
                ty.name()
            )));
        }
        Ok(reg)
    }

    fn destination(&self, operand: &RawOperand, ty: Ty) -> Result<Reg, EmulatorError> {
        match operand {
            RawOperand::Register(name) => self.register(name, ty),
            _ => Err(self.error("the destination must be a register")),
        }
    }

    fn source(&self, operand: &RawOperand, ty: Ty) -> Result<Src, EmulatorError> {
        match operand {
            RawOperand::Register(name) => {
                if let Some(special) = special_register(name) {
                    if matches!(ty, Ty::U32 | Ty::S32 | Ty::B32) {
                        return Ok(Src::Special(special));
                    }
                    return Err(self.error(format!(
                        "special register `{name}` is .u32, used as .{}",
                        ty.name()
                    )));
                }
                Ok(Src::Reg(self.register(name, ty)?))
            }
            RawOperand::Immediate { negative, text } => self.immediate(*negative, text, ty),
            RawOperand::Name(name) => Err(self.error(format!("`{name}` is not a value here"))),
            RawOperand::Address { .. } => Err(self.error("an address is not a value here")),
        }
    }

    fn immediate(&self, negative: bool, text: &str, ty: Ty) -> Result<Src, EmulatorError> {
        let bad = || self.error(format!("bad .{} literal `{text}`", ty.name()));
        if ty.is_float() {
            let hex_f32 = text.strip_prefix("0f").or_else(|| text.strip_prefix("0F"));
            let hex_f64 = text.strip_prefix("0d").or_else(|| text.strip_prefix("0D"));
            let value = match (hex_f32, hex_f64) {
                (Some(hex), _) if hex.len() == 8 && !negative => f64::from(f32::from_bits(
                    u32::from_str_radix(hex, 16).map_err(|_| bad())?,
                )),
                (_, Some(hex)) if hex.len() == 16 && !negative => {
                    f64::from_bits(u64::from_str_radix(hex, 16).map_err(|_| bad())?)
                }
                _ => return Err(bad()),
            };
            return Ok(Src::Imm(match ty {
                Ty::F32 => u64::from((value as f32).to_bits()),
                _ => value.to_bits(),
            }));
        }
        let magnitude = parse_unsigned(text).ok_or_else(bad)?;
        if ty == Ty::Pred {
            return match (negative, magnitude) {
                (false, 0 | 1) => Ok(Src::Imm(magnitude)),
                _ => Err(bad()),
            };
        }
        let fits = match (ty.size(), negative) {
            (4, false) => magnitude <= u64::from(u32::MAX),
            (4, true) => magnitude <= 1 << 31,
            (_, false) => true,
            (_, true) => magnitude <= 1 << 63,
        };
        if !fits {
            return Err(self.error(format!("literal `{text}` does not fit .{}", ty.name())));
        }
        let bits = if negative {
            magnitude.wrapping_neg()
        } else {
            magnitude
        };
        Ok(Src::Imm(bits & ty.mask()))
    }

    fn address(&self, operand: &RawOperand, space: Space) -> Result<Address, EmulatorError> {
        let RawOperand::Address { base, offset } = operand else {
            return Err(self.error("expected an address `[...]`"));
        };
        if base.starts_with('%') {
            return Ok(Address::Reg {
                base: self.register(base, Ty::U64)?,
                offset: *offset,
            });
        }
        if space == Space::Shared {
            if let Some(variable) = self.shared_variable(base) {
                return Ok(Address::Absolute(
                    variable.offset.wrapping_add_signed(*offset),
                ));
            }
            return Err(self.error(format!("undeclared shared variable `{base}`")));
        }
        Err(self.error(format!(
            "global addresses must be registers, found `{base}`"
        )))
    }

    fn shared_variable(&self, name: &str) -> Option<&SharedVariable> {
        self.context
            .shared
            .iter()
            .find(|variable| variable.name == name)
    }

    fn op(&self) -> Result<Op, EmulatorError> {
        let parts: Vec<&str> = self.raw.opcode.split('.').collect();
        let (mnemonic, modifiers) = (parts[0], &parts[1..]);
        match (mnemonic, modifiers) {
            ("ld", ["param", suffix]) => self.load_param(suffix),
            ("ld", [space @ ("global" | "shared"), suffix]) => {
                let ty = self.ty(suffix, MEMORY)?;
                let [dst, address] = self.operands()?;
                let space = memory_space(space);
                Ok(Op::Load {
                    space,
                    size: ty.size(),
                    dst: self.destination(dst, ty)?,
                    address: self.address(address, space)?,
                })
            }
            ("st", [space @ ("global" | "shared"), suffix]) => {
                let ty = self.ty(suffix, MEMORY)?;
                let [address, src] = self.operands()?;
                let space = memory_space(space);
                Ok(Op::Store {
                    space,
                    size: ty.size(),
                    address: self.address(address, space)?,
                    src: self.source(src, ty)?,
                })
            }
            ("cvta", ["to", "global", "u64"]) => {
                let [dst, src] = self.operands()?;
                Ok(Op::Mov {
                    dst: self.destination(dst, Ty::U64)?,
                    src: Src::Reg(match src {
                        RawOperand::Register(name) => self.register(name, Ty::U64)?,
                        _ => return Err(self.error("the source must be a register")),
                    }),
                })
            }
            ("mov", [suffix]) => {
                let ty = self.ty(suffix, MOVE)?;
                let [dst, src] = self.operands()?;
                let src = match src {
                    RawOperand::Name(name) if ty.size() == 8 && !ty.is_float() => {
                        match self.shared_variable(name) {
                            Some(variable) => Src::Imm(variable.offset),
                            None => {
                                return Err(
                                    self.error(format!("undeclared shared variable `{name}`"))
                                );
                            }
                        }
                    }
                    _ => self.source(src, ty)?,
                };
                Ok(Op::Mov {
                    dst: self.destination(dst, ty)?,
                    src,
                })
            }
            ("add" | "sub", [suffix]) => self.binary(
                binary_op(mnemonic),
                self.ty(suffix, &[INTEGER, FLOAT].concat())?,
            ),
            ("add" | "sub", ["rn", suffix]) => {
                self.binary(binary_op(mnemonic), self.ty(suffix, FLOAT)?)
            }
            ("mul", ["lo", suffix]) => self.binary(BinaryOp::MulLo, self.ty(suffix, INTEGER)?),
            ("mul", ["rn", suffix]) => self.binary(BinaryOp::Mul, self.ty(suffix, FLOAT)?),
            ("mul", ["wide", suffix]) => {
                let ty = self.ty(suffix, &[Ty::S32, Ty::U32])?;
                let [dst, a, b] = self.operands()?;
                Ok(Op::Binary {
                    op: BinaryOp::MulWide,
                    ty,
                    dst: self.destination(dst, wide(ty))?,
                    a: self.source(a, ty)?,
                    b: self.source(b, ty)?,
                })
            }
            ("mad", ["lo", suffix]) => self.ternary(TernaryOp::MadLo, self.ty(suffix, INTEGER)?),
            ("mad", ["wide", suffix]) => {
                let ty = self.ty(suffix, &[Ty::S32, Ty::U32])?;
                let [dst, a, b, c] = self.operands()?;
                Ok(Op::Ternary {
                    op: TernaryOp::MadWide,
                    ty,
                    dst: self.destination(dst, wide(ty))?,
                    a: self.source(a, ty)?,
                    b: self.source(b, ty)?,
                    c: self.source(c, wide(ty))?,
                })
            }
            ("fma", ["rn", suffix]) => self.ternary(TernaryOp::Fma, self.ty(suffix, FLOAT)?),
            ("div", ["rn", suffix]) => self.binary(BinaryOp::Div, self.ty(suffix, FLOAT)?),
            ("min", [suffix]) => self.binary(
                BinaryOp::Min,
                self.ty(suffix, &[Ty::S32, Ty::U32, Ty::F32, Ty::F64])?,
            ),
            ("max", [suffix]) => self.binary(
                BinaryOp::Max,
                self.ty(suffix, &[Ty::S32, Ty::U32, Ty::F32, Ty::F64])?,
            ),
            ("neg", [suffix]) => {
                self.unary(UnaryOp::Neg, self.ty(suffix, &[Ty::S32, Ty::F32, Ty::F64])?)
            }
            ("abs", [suffix]) => self.unary(UnaryOp::Abs, self.ty(suffix, FLOAT)?),
            ("sqrt", ["rn", suffix]) => self.unary(UnaryOp::Sqrt, self.ty(suffix, FLOAT)?),
            ("rcp", ["rn", suffix]) => self.unary(UnaryOp::Rcp, self.ty(suffix, FLOAT)?),
            ("ex2", ["approx", "f32"]) => self.unary(UnaryOp::Ex2, Ty::F32),
            ("lg2", ["approx", "f32"]) => self.unary(UnaryOp::Lg2, Ty::F32),
            ("sin", ["approx", "f32"]) => self.unary(UnaryOp::Sin, Ty::F32),
            ("cos", ["approx", "f32"]) => self.unary(UnaryOp::Cos, Ty::F32),
            ("cvt", _) => self.convert(modifiers),
            ("shl", [suffix]) => self.shift(BinaryOp::Shl, self.ty(suffix, &[Ty::B32, Ty::B64])?),
            ("shr", [suffix]) => self.shift(
                BinaryOp::Shr,
                self.ty(suffix, &[INTEGER, &[Ty::B32, Ty::B64]].concat())?,
            ),
            ("and" | "or" | "xor", [suffix]) => {
                let op = match mnemonic {
                    "and" => BinaryOp::And,
                    "or" => BinaryOp::Or,
                    _ => BinaryOp::Xor,
                };
                self.binary(op, self.ty(suffix, &[Ty::B32, Ty::B64, Ty::Pred])?)
            }
            ("not", [suffix]) => self.unary(
                UnaryOp::Not,
                self.ty(suffix, &[Ty::B32, Ty::B64, Ty::Pred])?,
            ),
            ("setp", [compare, suffix]) => self.setp(compare, suffix),
            ("selp", [suffix]) => {
                let ty = self.ty(suffix, SELECT)?;
                let [dst, a, b, predicate] = self.operands()?;
                Ok(Op::Select {
                    dst: self.destination(dst, ty)?,
                    a: self.source(a, ty)?,
                    b: self.source(b, ty)?,
                    predicate: self.source(predicate, Ty::Pred)?,
                })
            }
            ("bar", ["sync"]) => match self.operands()? {
                [
                    RawOperand::Immediate {
                        negative: false,
                        text,
                    },
                ] if text == "0" => Ok(Op::Barrier),
                _ => Err(self.error("only `bar.sync 0` is supported")),
            },
            ("bra", [] | ["uni"]) => match self.operands()? {
                [RawOperand::Name(label)] => match self.context.labels.get(label) {
                    Some(&target) => Ok(Op::Branch { target }),
                    None => Err(self.error(format!("undefined label `{label}`"))),
                },
                _ => Err(self.error("expected a label")),
            },
            ("ret" | "exit", []) => {
                self.operands::<0>()?;
                Ok(Op::Exit)
            }
            _ => Err(self.unsupported()),
        }
    }

    fn load_param(&self, suffix: &str) -> Result<Op, EmulatorError> {
        let ty = self.ty(suffix, &[Ty::U32, Ty::S32, Ty::U64, Ty::F32, Ty::F64])?;
        let [dst, address] = self.operands()?;
        let RawOperand::Address { base, offset: 0 } = address else {
            return Err(self.error("expected `[PARAM_NAME]`"));
        };
        let Some(index) = self
            .context
            .params
            .iter()
            .position(|param| &param.name == base)
        else {
            return Err(self.error(format!("undeclared parameter `{base}`")));
        };
        let declared = param_ty(self.context.params[index].ty);
        if !declared.accepts(ty) {
            return Err(self.error(format!(
                "parameter `{base}` is declared .{}, loaded as .{}",
                declared.name(),
                ty.name()
            )));
        }
        Ok(Op::LoadParam {
            dst: self.destination(dst, ty)?,
            param: index as u16,
        })
    }

    fn unary(&self, op: UnaryOp, ty: Ty) -> Result<Op, EmulatorError> {
        let [dst, a] = self.operands()?;
        Ok(Op::Unary {
            op,
            ty,
            dst: self.destination(dst, ty)?,
            a: self.source(a, ty)?,
        })
    }

    fn binary(&self, op: BinaryOp, ty: Ty) -> Result<Op, EmulatorError> {
        let [dst, a, b] = self.operands()?;
        Ok(Op::Binary {
            op,
            ty,
            dst: self.destination(dst, ty)?,
            a: self.source(a, ty)?,
            b: self.source(b, ty)?,
        })
    }

    fn shift(&self, op: BinaryOp, ty: Ty) -> Result<Op, EmulatorError> {
        let [dst, a, b] = self.operands()?;
        Ok(Op::Binary {
            op,
            ty,
            dst: self.destination(dst, ty)?,
            a: self.source(a, ty)?,
            b: self.source(b, Ty::U32)?,
        })
    }

    fn ternary(&self, op: TernaryOp, ty: Ty) -> Result<Op, EmulatorError> {
        let [dst, a, b, c] = self.operands()?;
        Ok(Op::Ternary {
            op,
            ty,
            dst: self.destination(dst, ty)?,
            a: self.source(a, ty)?,
            b: self.source(b, ty)?,
            c: self.source(c, ty)?,
        })
    }

    fn convert(&self, modifiers: &[&str]) -> Result<Op, EmulatorError> {
        use Ty::{F32, F64, S32, S64, U32, U64};
        let types = |to: &str, from: &str| Some((Ty::from_suffix(to)?, Ty::from_suffix(from)?));
        let (rounding, to, from) = match modifiers {
            [rounding, to, from] => (Some(*rounding), to, from),
            [to, from] => (None, to, from),
            _ => return Err(self.unsupported()),
        };
        let Some((to, from)) = types(to, from) else {
            return Err(self.unsupported());
        };
        let [dst, a] = self.operands()?;
        let unary = |op| {
            Ok(Op::Unary {
                op,
                ty: to,
                dst: self.destination(dst, to)?,
                a: self.source(a, from)?,
            })
        };
        let supported = match (rounding, to, from) {
            (Some("rmi"), F32, F32) | (Some("rmi"), F64, F64) => return unary(UnaryOp::Floor),
            (Some("rpi"), F32, F32) | (Some("rpi"), F64, F64) => return unary(UnaryOp::Ceil),
            (Some("rni"), F32, F32) | (Some("rni"), F64, F64) => return unary(UnaryOp::Rint),
            (Some("rn"), F32, F64) | (None, F64, F32) => true,
            (None, S64, S32) | (None, U64, U32) | (None, S32, S64) | (None, U32, U64) => true,
            (Some("rn"), F32 | F64, S32 | U32 | S64) => true,
            (Some("rzi"), S32 | S64, F32 | F64) => true,
            _ => false,
        };
        if !supported {
            return Err(self.unsupported());
        }
        Ok(Op::Convert {
            to,
            from,
            dst: self.destination(dst, to)?,
            a: self.source(a, from)?,
        })
    }

    fn setp(&self, compare: &str, suffix: &str) -> Result<Op, EmulatorError> {
        let compare = match compare {
            "eq" => Compare::Eq,
            "ne" => Compare::Ne,
            "lt" => Compare::Lt,
            "le" => Compare::Le,
            "gt" => Compare::Gt,
            "ge" => Compare::Ge,
            "equ" => Compare::Equ,
            "neu" => Compare::Neu,
            "ltu" => Compare::Ltu,
            "leu" => Compare::Leu,
            "gtu" => Compare::Gtu,
            "geu" => Compare::Geu,
            "num" => Compare::Num,
            "nan" => Compare::Nan,
            _ => return Err(self.unsupported()),
        };
        let float_only = !matches!(
            compare,
            Compare::Eq | Compare::Ne | Compare::Lt | Compare::Le | Compare::Gt | Compare::Ge
        );
        let ty = if float_only {
            self.ty(suffix, FLOAT)?
        } else {
            self.ty(suffix, &[INTEGER, FLOAT].concat())?
        };
        let [dst, a, b] = self.operands()?;
        Ok(Op::Setp {
            compare,
            ty,
            dst: self.destination(dst, Ty::Pred)?,
            a: self.source(a, ty)?,
            b: self.source(b, ty)?,
        })
    }
}

fn memory_space(space: &str) -> Space {
    if space == "global" {
        Space::Global
    } else {
        Space::Shared
    }
}

fn binary_op(mnemonic: &str) -> BinaryOp {
    if mnemonic == "add" {
        BinaryOp::Add
    } else {
        BinaryOp::Sub
    }
}

fn wide(ty: Ty) -> Ty {
    if ty == Ty::S32 { Ty::S64 } else { Ty::U64 }
}

fn param_ty(ty: ParamType) -> Ty {
    match ty {
        ParamType::U32 => Ty::U32,
        ParamType::S32 => Ty::S32,
        ParamType::U64 => Ty::U64,
        ParamType::F32 => Ty::F32,
        ParamType::F64 => Ty::F64,
    }
}

fn special_register(name: &str) -> Option<Special> {
    let (register, axis) = name.split_once('.')?;
    let axis = match axis {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => return None,
    };
    Some(match register {
        "%tid" => Special::Tid(axis),
        "%ntid" => Special::Ntid(axis),
        "%ctaid" => Special::Ctaid(axis),
        "%nctaid" => Special::Nctaid(axis),
        _ => return None,
    })
}
