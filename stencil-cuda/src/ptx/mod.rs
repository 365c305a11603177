//! A typed PTX abstract syntax tree: modules, entries, parameters, typed virtual registers,
//! instructions as enum variants with typed operands, and labels.
//!
//! Only the subset of PTX that the code generator needs (and the emulator executes, see
//! notes/ptx_subset.md) is representable. Text is produced in exactly one place, the
//! [`Display`](std::fmt::Display) implementations in `printer.rs`; nothing else in the crate
//! spells an instruction.

mod builder;
mod printer;

pub use builder::EntryBuilder;

/// A register class: PTX declares one `.reg` array per class.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum RegClass {
    /// `.pred`, printed `%p<n>`.
    Pred,
    /// `.b32`, printed `%r<n>`.
    B32,
    /// `.b64`, printed `%rd<n>`.
    B64,
    /// `.f32`, printed `%f<n>`.
    F32,
    /// `.f64`, printed `%fd<n>`.
    F64,
}

impl RegClass {
    /// Every class, in declaration order.
    pub const ALL: [RegClass; 5] = [
        RegClass::Pred,
        RegClass::B32,
        RegClass::B64,
        RegClass::F32,
        RegClass::F64,
    ];

    /// Position in [`RegClass::ALL`].
    pub const fn index(self) -> usize {
        match self {
            RegClass::Pred => 0,
            RegClass::B32 => 1,
            RegClass::B64 => 2,
            RegClass::F32 => 3,
            RegClass::F64 => 4,
        }
    }
}

/// A typed virtual register.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Reg {
    /// Its class.
    pub class: RegClass,
    /// Its number within the class (from 1, as nvcc numbers them).
    pub index: u32,
}

/// An instruction type suffix.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    /// `.pred`
    Pred,
    /// `.b32`
    B32,
    /// `.b64`
    B64,
    /// `.u32`
    U32,
    /// `.s32`
    S32,
    /// `.u64`
    U64,
    /// `.s64`
    S64,
    /// `.f32`
    F32,
    /// `.f64`
    F64,
}

/// An axis of a special register.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Axis {
    /// `.x`
    X,
    /// `.y`
    Y,
    /// `.z`
    Z,
}

impl Axis {
    /// The axes in order x, y, z.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];
}

/// A special (read-only, u32) register.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Special {
    /// `%tid`: thread index in the block.
    Tid(Axis),
    /// `%ntid`: block dimensions.
    Ntid(Axis),
    /// `%ctaid`: block index in the grid.
    Ctaid(Axis),
    /// `%nctaid`: grid dimensions.
    Nctaid(Axis),
}

/// An instruction source operand.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Operand {
    /// A register.
    Reg(Reg),
    /// An integer immediate.
    Int(i64),
    /// An `f32` immediate (printed in hex, exact).
    F32(f32),
    /// An `f64` immediate (printed in hex, exact).
    F64(f64),
    /// A special register.
    Special(Special),
    /// The address of a shared-memory array of the entry (index into [`Entry::shared`]).
    Shared(usize),
}

impl From<Reg> for Operand {
    fn from(reg: Reg) -> Self {
        Operand::Reg(reg)
    }
}

/// A state space of a memory access.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Space {
    /// `.global`
    Global,
    /// `.shared`
    Shared,
}

/// A memory address `[base + offset]` (offset in bytes, may be negative).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Address {
    /// A 64-bit register holding the base address.
    pub base: Reg,
    /// Byte offset added to it.
    pub offset: i64,
}

/// Integer operations of two operands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IntOp {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul.lo`
    MulLo,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `shl` (type b32 or b64; the shift amount is a u32 operand).
    Shl,
    /// `shr` (arithmetic for s32/s64, logical for u32/u64/b32/b64).
    Shr,
    /// `and` (type b32 or b64).
    And,
    /// `or` (type b32 or b64).
    Or,
}

/// Float operations of two operands (round to nearest even where rounding applies).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FloatOp {
    /// `add.rn`
    Add,
    /// `sub.rn`
    Sub,
    /// `mul.rn`
    Mul,
    /// `div.rn`
    Div,
    /// `min` (IEEE minNum)
    Min,
    /// `max` (IEEE maxNum)
    Max,
}

/// Float operations of one operand.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FloatUnaryOp {
    /// `neg`
    Neg,
    /// `abs`
    Abs,
    /// `sqrt.rn`
    Sqrt,
    /// `cvt.rmi` (floor)
    Floor,
    /// `cvt.rpi` (ceil)
    Ceil,
    /// `cvt.rni` (round to the nearest integer, ties to even)
    Rint,
}

/// Comparison of `setp`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Cmp {
    /// `eq` (ordered)
    Eq,
    /// `ne` (ordered: false on NaN)
    Ne,
    /// `lt`
    Lt,
    /// `le`
    Le,
    /// `gt`
    Gt,
    /// `ge`
    Ge,
    /// `neu` (unordered: true on NaN)
    Neu,
    /// `nan` (true when either operand is NaN)
    Nan,
}

/// Connectives of predicates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PredOp {
    /// `and.pred`
    And,
    /// `or.pred`
    Or,
}

/// A branch target.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Label(pub u32);

/// One instruction (without its guard).
#[derive(Clone, PartialEq, Debug)]
pub enum Inst {
    /// `ld.param.ty dst, [name]` (index into [`Entry::params`]).
    LdParam {
        /// Type.
        ty: Type,
        /// Destination.
        dst: Reg,
        /// The parameter.
        param: usize,
    },
    /// `cvta.to.global.u64 dst, src`
    CvtaGlobal {
        /// Destination.
        dst: Reg,
        /// Generic address.
        src: Reg,
    },
    /// `mov.ty dst, src`
    Mov {
        /// Type.
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Source.
        src: Operand,
    },
    /// `add/sub/mul.lo/min/max.ty dst, a, b`
    Int {
        /// Operation.
        op: IntOp,
        /// Type (s32, u32, s64, u64).
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// `mul.wide.ty dst, a, b` (ty: s32 or u32; dst is 64-bit).
    MulWide {
        /// Source type.
        ty: Type,
        /// Destination (64-bit).
        dst: Reg,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// `mad.wide.ty dst, a, b, c` (dst and c are 64-bit).
    MadWide {
        /// Source type (s32 or u32).
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Factor.
        a: Operand,
        /// Factor.
        b: Operand,
        /// Addend (64-bit).
        c: Operand,
    },
    /// `mad.lo.ty dst, a, b, c`
    MadLo {
        /// Type.
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Factor.
        a: Operand,
        /// Factor.
        b: Operand,
        /// Addend.
        c: Operand,
    },
    /// Float arithmetic of two operands.
    Float {
        /// Operation.
        op: FloatOp,
        /// Type (f32 or f64).
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// Float operation of one operand.
    FloatUnary {
        /// Operation.
        op: FloatUnaryOp,
        /// Type (f32 or f64).
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Operand.
        a: Operand,
    },
    /// `fma.rn.ty dst, a, b, c`: `a * b + c` with one rounding (f32 or f64).
    Fma {
        /// Type (f32 or f64).
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Factor.
        a: Operand,
        /// Factor.
        b: Operand,
        /// Addend.
        c: Operand,
    },
    /// `cvt` from or to a float type, with the rounding PTX requires: `.rn` for f64 to f32
    /// and for integer to float, `.rzi` (truncation) for float to integer, none for f32 to
    /// f64 (exact).
    CvtFloat {
        /// Destination type.
        dst_ty: Type,
        /// Source type.
        src_ty: Type,
        /// Destination.
        dst: Reg,
        /// Source.
        src: Reg,
    },
    /// `cvt.dst_ty.src_ty dst, src` between integer types.
    CvtInt {
        /// Destination type.
        dst_ty: Type,
        /// Source type.
        src_ty: Type,
        /// Destination.
        dst: Reg,
        /// Source.
        src: Reg,
    },
    /// `setp.cmp.ty dst, a, b`
    Setp {
        /// Comparison.
        cmp: Cmp,
        /// Operand type.
        ty: Type,
        /// Destination predicate.
        dst: Reg,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// `selp.ty dst, a, b, pred` (a if pred else b).
    Selp {
        /// Type.
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Value when the predicate holds.
        a: Operand,
        /// Value otherwise.
        b: Operand,
        /// The predicate.
        pred: Reg,
    },
    /// `and/or.pred dst, a, b`
    Pred {
        /// Connective.
        op: PredOp,
        /// Destination.
        dst: Reg,
        /// Left operand.
        a: Reg,
        /// Right operand.
        b: Reg,
    },
    /// `not.pred dst, a`
    NotPred {
        /// Destination.
        dst: Reg,
        /// Operand.
        a: Reg,
    },
    /// `ld.space.ty dst, [addr]`
    Ld {
        /// State space.
        space: Space,
        /// Type.
        ty: Type,
        /// Destination.
        dst: Reg,
        /// Address.
        addr: Address,
    },
    /// `st.space.ty [addr], src`
    St {
        /// State space.
        space: Space,
        /// Type.
        ty: Type,
        /// Address.
        addr: Address,
        /// Value.
        src: Reg,
    },
    /// `bar.sync 0`
    BarSync,
    /// `bra label` / `bra.uni label`
    Bra {
        /// Target.
        target: Label,
        /// Whether every thread of the warp is known to branch together.
        uniform: bool,
    },
    /// `ret`
    Ret,
}

/// A guard `@p` / `@!p` on an instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Guard {
    /// The predicate register.
    pub pred: Reg,
    /// Whether the instruction runs when the predicate is false.
    pub negated: bool,
}

/// A statement of an entry body.
#[derive(Clone, PartialEq, Debug)]
pub enum Statement {
    /// An instruction with an optional guard.
    Inst(Option<Guard>, Inst),
    /// A label definition.
    Label(Label),
    /// A comment line.
    Comment(String),
}

/// A kernel parameter.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type (u64 for pointers, f32/f64 for scalars).
    pub ty: Type,
}

/// A static shared-memory array.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedArray {
    /// Its name.
    pub name: String,
    /// Alignment in bytes.
    pub align: u32,
    /// Size in bytes.
    pub bytes: u64,
}

/// A `.visible .entry`.
#[derive(Clone, PartialEq, Debug)]
pub struct Entry {
    /// Symbol name.
    pub name: String,
    /// Parameters, in order.
    pub params: Vec<Param>,
    /// Static shared arrays.
    pub shared: Vec<SharedArray>,
    /// Registers used per class (indexed by [`RegClass::index`]).
    pub reg_counts: [u32; 5],
    /// The body.
    pub body: Vec<Statement>,
}

impl Entry {
    /// Total static shared memory in bytes.
    pub fn shared_bytes(&self) -> u64 {
        self.shared.iter().map(|s| s.bytes).sum()
    }
}

/// A PTX module: header plus entries.
#[derive(Clone, PartialEq, Debug)]
pub struct Module {
    /// PTX ISA version (major, minor), at most 8.8.
    pub version: (u32, u32),
    /// Target architecture number (70, 80, 90).
    pub target: u32,
    /// Entries.
    pub entries: Vec<Entry>,
}
