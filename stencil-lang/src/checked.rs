//! The checked kernel: the output of [`validate`](crate::validate), the input of
//! [`lower`](crate::lower).
//!
//! Names are resolved to positions (fields and parameters in declaration order, `let`s in
//! definition order, as [`KernelBuilder`](stencil_core::KernelBuilder) numbers them), indices
//! to constant offsets. Every node keeps the source range the verifier's locations map back to.
//! What validation could not make sense of is [`CheckedExprKind::Invalid`] (lowered as a
//! constant so the rest of the kernel can still be verified).

use stencil_core::{BinaryOp, CmpOp, ElemType, LogicOp, ReduceOp, Role, UnaryOp};

use crate::diagnostic::SpanRange;

/// A kernel whose names and indices are resolved.
pub struct CheckedKernel {
    /// The kernel's name (the function's, without `r#`).
    pub name: String,
    /// Where the name is written.
    pub name_range: SpanRange,
    /// Where the body is written.
    pub body_range: SpanRange,
    /// Number of dimensions (of the first grid parameter).
    pub n_dims: usize,
    /// Where the dimension count is written.
    pub dims_range: SpanRange,
    /// The element type (of the first grid parameter).
    pub elem: ElemType,
    /// Index variable names, one per dimension.
    pub index_names: Vec<String>,
    /// Grid parameters in declaration order.
    pub fields: Vec<FieldDecl>,
    /// Scalar parameters in declaration order.
    pub params: Vec<ParamDecl>,
    /// Reductions in declaration order.
    pub reductions: Vec<ReductionDecl>,
    /// The statements.
    pub body: Vec<CheckedStmt>,
    /// Whether something was replaced by a placeholder without an error of its own (the
    /// verifier reports it), so errors that follow from the placeholder must be dropped.
    pub degraded: bool,
    /// Whether the kernel asks for fused multiply-add (`#[fma]`).
    pub fma: bool,
}

/// A grid parameter.
pub struct FieldDecl {
    /// Its name.
    pub name: String,
    /// Input or output.
    pub role: Role,
    /// Its element type as declared.
    pub elem: ElemType,
    /// Where its name is written.
    pub name_range: SpanRange,
    /// Where its element type is written.
    pub elem_range: SpanRange,
}

/// A scalar parameter.
pub struct ParamDecl {
    /// Its name.
    pub name: String,
    /// Its type as declared.
    pub elem: ElemType,
    /// Where its name is written.
    pub name_range: SpanRange,
    /// Where its type is written.
    pub type_range: SpanRange,
}

/// A reduction parameter (`s: &mut Sum<f64>`); its element type is the kernel's (checked).
pub struct ReductionDecl {
    /// Its name.
    pub name: String,
    /// How its values combine.
    pub op: ReduceOp,
    /// Where its name is written.
    pub name_range: SpanRange,
    /// Where its type is written.
    pub type_range: SpanRange,
}

/// A statement.
pub enum CheckedStmt {
    /// `let name = value;`
    Let {
        /// The temporary's name.
        name: String,
        /// Its value.
        value: CheckedExpr,
    },
    /// `field[i, ...] = value;`
    Store {
        /// Position of the field among all fields.
        field: usize,
        /// Where the left-hand side is written.
        lhs: SpanRange,
        /// The value.
        value: CheckedExpr,
    },
    /// `s += value;` or `m = min(m, value);`: the point's value of a reduction.
    Reduce {
        /// Position of the reduction among all reductions.
        reduction: usize,
        /// Where the reduction's name is written in the statement.
        lhs: SpanRange,
        /// The value.
        value: CheckedExpr,
    },
}

/// An expression with its source range.
pub struct CheckedExpr {
    /// What it is.
    pub kind: CheckedExprKind,
    /// Where it is written.
    pub range: SpanRange,
}

/// A resolved expression.
pub enum CheckedExprKind {
    /// A constant.
    Const(f64),
    /// Parameter number `.0`.
    Param(usize),
    /// A read of field number `field` (among all fields).
    Read {
        /// The field.
        field: usize,
        /// The offset, one entry per dimension.
        offset: Vec<i64>,
        /// Where each index is written.
        index_ranges: Vec<SpanRange>,
    },
    /// The value of `let` number `.0`.
    Let(usize),
    /// The point's index along dimension `.0`.
    Index(usize),
    /// `step()`: the number of the step being computed.
    Step,
    /// A unary operation.
    Unary(UnaryOp, Box<CheckedExpr>),
    /// A binary operation.
    Binary(BinaryOp, Box<CheckedExpr>, Box<CheckedExpr>),
    /// A comparison.
    Compare(CmpOp, Box<CheckedExpr>, Box<CheckedExpr>),
    /// A boolean connective.
    Logic(LogicOp, Box<CheckedExpr>, Box<CheckedExpr>),
    /// Boolean negation.
    Not(Box<CheckedExpr>),
    /// `if cond { then } else { otherwise }`.
    Select(Box<CheckedExpr>, Box<CheckedExpr>, Box<CheckedExpr>),
    /// Something already reported (or reported by the verifier).
    Invalid,
}
