//! The decoded program: a module of entries, each a flat vector of [`Instruction`]s whose
//! operands are resolved register indices, immediates (already truncated to the instruction's
//! width) and absolute shared addresses. Decoded once by the parser, executed many times.
//!
//! Register values are kept as `u64` bit patterns: 32-bit integers and `f32` in the low 32 bits
//! (upper bits zero), predicates as 0 or 1.

/// A PTX scalar type as written in an instruction or a declaration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ty {
    Pred,
    B32,
    U32,
    S32,
    B64,
    U64,
    S64,
    F32,
    F64,
}

impl Ty {
    /// The type named by an instruction or declaration suffix (`f32`, `u64`, `pred`, ...).
    pub(crate) fn from_suffix(suffix: &str) -> Option<Ty> {
        Some(match suffix {
            "pred" => Ty::Pred,
            "b32" => Ty::B32,
            "u32" => Ty::U32,
            "s32" => Ty::S32,
            "b64" => Ty::B64,
            "u64" => Ty::U64,
            "s64" => Ty::S64,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            _ => return None,
        })
    }

    /// The PTX spelling, without the dot.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::Pred => "pred",
            Ty::B32 => "b32",
            Ty::U32 => "u32",
            Ty::S32 => "s32",
            Ty::B64 => "b64",
            Ty::U64 => "u64",
            Ty::S64 => "s64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }

    /// Size in bytes (predicates count as 0: they have no memory form).
    pub(crate) fn size(self) -> u8 {
        match self {
            Ty::Pred => 0,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 4,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 8,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Ty::S32 | Ty::S64)
    }

    fn is_bits(self) -> bool {
        matches!(self, Ty::B32 | Ty::B64)
    }

    fn is_integer(self) -> bool {
        matches!(self, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64)
    }

    /// Whether a register declared `self` may be an operand of an instruction typed `used`
    /// (PTX's operand type rules: same type; same size with a bit type on either side; or two
    /// integer types of the same size).
    pub(crate) fn accepts(self, used: Ty) -> bool {
        self == used
            || (self.size() == used.size()
                && self != Ty::Pred
                && used != Ty::Pred
                && (self.is_bits() || used.is_bits() || (self.is_integer() && used.is_integer())))
    }

    /// Mask keeping the type's bits of a register value.
    pub(crate) fn mask(self) -> u64 {
        match self.size() {
            0 => 1,
            4 => 0xFFFF_FFFF,
            _ => u64::MAX,
        }
    }
}

/// Index of a register in its entry's register file.
pub(crate) type Reg = u32;

/// A special (read-only, per-thread) register; the `u8` is the axis 0..3 for x, y, z.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
}

/// A source operand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Src {
    Reg(Reg),
    /// Bit pattern already truncated to the instruction's width.
    Imm(u64),
    Special(Special),
}

/// Which state space a load or store addresses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Space {
    Global,
    Shared,
}

/// The address of a load or store.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Address {
    /// `[%rd]` or `[%rd+offset]`.
    Reg { base: Reg, offset: i64 },
    /// `[NAME]` or `[NAME+offset]`, resolved to a shared address.
    Absolute(u64),
}

/// Two-operand operations; the instruction's [`Ty`] selects integer or float semantics.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BinaryOp {
    Add,
    Sub,
    MulLo,
    /// `mul.wide`: 32-bit operands, 64-bit full product.
    MulWide,
    /// Float multiply (`mul.rn`).
    Mul,
    Div,
    Min,
    Max,
    Shl,
    Shr,
    And,
    Or,
    Xor,
}

/// One-operand operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum UnaryOp {
    Neg,
    Abs,
    Not,
    Sqrt,
    Rcp,
    Ex2,
    Lg2,
    Sin,
    Cos,
    /// `cvt.rmi.fXX.fXX`.
    Floor,
    /// `cvt.rpi.fXX.fXX`.
    Ceil,
    /// `cvt.rni.fXX.fXX`: nearest integer, ties to even.
    Rint,
}

/// Three-operand operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TernaryOp {
    MadLo,
    MadWide,
    Fma,
}

/// `setp` comparisons; the `u` forms are true when either operand is NaN.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Compare {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// A decoded operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    /// `ld.param`: the parameter's bits.
    LoadParam {
        dst: Reg,
        param: u16,
    },
    /// `mov` and `cvta.to.global` (global addresses are generic addresses here).
    Mov {
        dst: Reg,
        src: Src,
    },
    Unary {
        op: UnaryOp,
        ty: Ty,
        dst: Reg,
        a: Src,
    },
    Binary {
        op: BinaryOp,
        ty: Ty,
        dst: Reg,
        a: Src,
        b: Src,
    },
    Ternary {
        op: TernaryOp,
        ty: Ty,
        dst: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    /// `cvt` between different types (rounding implied by the pair, see the subset).
    Convert {
        to: Ty,
        from: Ty,
        dst: Reg,
        a: Src,
    },
    Setp {
        compare: Compare,
        ty: Ty,
        dst: Reg,
        a: Src,
        b: Src,
    },
    /// `selp d, a, b, p`: `p ? a : b`.
    Select {
        dst: Reg,
        a: Src,
        b: Src,
        predicate: Src,
    },
    Load {
        space: Space,
        size: u8,
        dst: Reg,
        address: Address,
    },
    Store {
        space: Space,
        size: u8,
        address: Address,
        src: Src,
    },
    Barrier,
    Branch {
        target: u32,
    },
    Exit,
}

/// An instruction guard `@%p` (or `@!%p` when `negated`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Guard {
    pub(crate) predicate: Reg,
    pub(crate) negated: bool,
}

/// One decoded instruction and the source line it came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Instruction {
    pub(crate) op: Op,
    pub(crate) guard: Option<Guard>,
    pub(crate) line: u32,
}

/// A kernel parameter's type, as declared by `.param .TYPE NAME` in an entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ParamType {
    /// `.param .u32`.
    U32,
    /// `.param .s32`.
    S32,
    /// `.param .u64` (pointers are passed this way).
    U64,
    /// `.param .f32`.
    F32,
    /// `.param .f64`.
    F64,
}

/// A kernel parameter: its name and type in declaration order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Param {
    /// The parameter's PTX name.
    pub name: String,
    /// The declared type.
    pub ty: ParamType,
}

/// A static `.shared` variable: its byte range in the block's shared memory.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SharedVariable {
    pub(crate) name: String,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

/// One `.entry`: parameters, register file layout, shared memory layout and code.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) params: Vec<Param>,
    /// Name and declared type of each register, indexed by [`Reg`].
    pub(crate) registers: Vec<(String, Ty)>,
    pub(crate) shared: Vec<SharedVariable>,
    pub(crate) shared_bytes: u64,
    pub(crate) code: Vec<Instruction>,
}
