//! An instruction statement as the parser reads it ([`RawInstruction`], [`RawOperand`]):
//! opcode and operands as written, before the decoder checks their types.

/// An operand as written, before type checking.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum RawOperand {
    /// `%name`: a declared or special register.
    Register(String),
    /// A literal: `negative` when preceded by `-`; `text` as written (`42`, `0x1F`, `0f3F800000`).
    Immediate { negative: bool, text: String },
    /// A bare name: a label or a shared variable.
    Name(String),
    /// `[base]`, `[base+offset]` or `[base-offset]`; `base` is a register or a name.
    Address { base: String, offset: i64 },
}

/// One instruction statement as written.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct RawInstruction {
    /// `(predicate register, negated)` from `@%p` / `@!%p`.
    pub(crate) guard: Option<(String, bool)>,
    pub(crate) opcode: String,
    pub(crate) operands: Vec<RawOperand>,
    pub(crate) line: usize,
}
