//! The model's types: a kernel's arguments, statements, expressions and indices as written,
//! each with its span.

use proc_macro2::{Ident, Span};
use stencil_core::{BinaryOp, CmpOp, ElemType, LogicOp, ReduceOp};

use super::rotate::Rotate;
use crate::diagnostic::SpanRange;

/// One kernel of the invocation.
pub struct Kernel {
    /// Outer attributes as written (doc comments included).
    pub attrs: Vec<syn::Attribute>,
    /// Visibility as written.
    pub vis: syn::Visibility,
    /// The function's name.
    pub name: Ident,
    /// The parameters, in declaration order.
    pub args: Vec<Arg>,
    /// The statements that survived model building, in order.
    pub body: Vec<Stmt>,
    /// Span of the body's braces.
    pub body_span: Span,
    /// The `#[rotate(..)]` attribute, taken off `attrs`.
    pub rotate: Option<Rotate>,
    /// Whether `#[fma]` asks for fused multiply-add (the attribute taken off `attrs`).
    pub fma: bool,
}

/// One parameter of the kernel function.
pub struct Arg {
    /// The parameter's name.
    pub name: Ident,
    /// What it is.
    pub kind: ArgKind,
    /// The type as written (for the fallback stub when the type is not understood).
    pub ty: syn::Type,
    /// The `#[stagger(..)]` attribute of a grid parameter, when it has one.
    pub stagger: Option<Stagger>,
}

/// A grid parameter's `#[stagger(i, ..)]`: the index variables along which its points sit
/// half a cell after the cell-centred points of the same index.
pub struct Stagger {
    /// The index variables named, in the order written.
    pub dims: Vec<Ident>,
    /// The whole attribute.
    pub range: SpanRange,
}

/// What a parameter is, as far as its type says.
pub enum ArgKind {
    /// A grid: `&GridN<T>` (input) or `&mut GridN<T>` (output).
    Field {
        /// Whether it is `&mut` (an output).
        output: bool,
        /// The grid's element type.
        elem: ElemSpec,
        /// The grid's dimension count and where it is written.
        dims: (usize, SpanRange),
    },
    /// A scalar: its type (`None` when it is not `f32`/`f64`) and where it is written.
    Scalar(ElemSpec),
    /// A reduction: `&mut Sum<T>`, `&mut Min<T>` or `&mut Max<T>`.
    Reduction {
        /// How its points' values combine (the type's name).
        op: ReduceOp,
        /// Its element type.
        elem: ElemSpec,
    },
    /// Something that is neither (already reported).
    Invalid,
}

/// An element type as written: `None` when it is not `f32` or `f64`.
#[derive(Clone, Copy)]
pub struct ElemSpec {
    /// The type, when it is one the kernel language knows.
    pub elem: Option<ElemType>,
    /// Where it is written.
    pub range: SpanRange,
}

/// One statement of the body.
pub enum Stmt {
    /// `let name = value;`
    Let {
        /// The temporary's name.
        name: Ident,
        /// Its value.
        value: Expr,
    },
    /// `target[indices] = value;`
    Store {
        /// The grid written.
        target: Ident,
        /// The indices.
        indices: Vec<Index>,
        /// The range of the brackets and their content.
        bracket: SpanRange,
        /// The range of the whole left-hand side.
        lhs: SpanRange,
        /// The value written.
        value: Expr,
    },
    /// `s += value;`: a value for a `Sum` reduction (or a mistake on another name).
    AddAssign {
        /// The name before `+=`.
        target: Ident,
        /// The `+=` operator.
        op: SpanRange,
        /// The range of the whole statement's expression.
        whole: SpanRange,
        /// The value added.
        value: Expr,
    },
    /// `name = value;` with a plain name: `m = min(m, value);` for a `Min` or `Max` reduction
    /// (or a mistake).
    AssignName {
        /// The name assigned.
        target: Ident,
        /// The range of the whole assignment.
        whole: SpanRange,
        /// The value assigned, as written (`min(m, value)` for a reduction).
        value: Expr,
    },
}

/// An expression with its source range.
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is written.
    pub range: SpanRange,
}

/// An expression of the kernel language.
pub enum ExprKind {
    /// A numeric literal.
    Number(f64),
    /// A bare name: a parameter or a `let` (or an error).
    Name(Ident),
    /// `base[indices]`: a grid read (or an error).
    Access {
        /// The indexed name.
        base: Ident,
        /// The indices.
        indices: Vec<Index>,
        /// The range of the brackets and their content.
        bracket: SpanRange,
    },
    /// `-arg`
    Neg(Box<Expr>),
    /// `!arg`
    Not(Box<Expr>),
    /// A binary operator.
    Binary {
        /// The operator.
        op: BinaryOperator,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `func(args)`
    Call {
        /// The function's name.
        func: Ident,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `if cond { then } else { otherwise }`
    If {
        /// The condition.
        cond: Box<Expr>,
        /// Value when it holds.
        then: Box<Expr>,
        /// Value otherwise.
        otherwise: Box<Expr>,
    },
    /// Syntax the kernel language lacks (already reported).
    Invalid,
}

/// A binary operator of the kernel language.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinaryOperator {
    /// `+ - * /`
    Arithmetic(BinaryOp),
    /// `< <= > >= == !=`
    Compare(CmpOp),
    /// `&& ||`
    Logic(LogicOp),
}

/// One index of an access, such as `i`, `j + 1` or `k - 2`.
pub struct Index {
    /// What it is.
    pub kind: IndexKind,
    /// Where it is written.
    pub range: SpanRange,
}

/// The forms an index can take.
pub enum IndexKind {
    /// `var`, `var + n` or `var - n` with an integer literal `n` (`offset` is `±n`); or a
    /// half-cell displacement `var + n/2` or `var - n/2` with an odd `n` (`half`, and
    /// `offset` the displacement rounded down: `i + 1/2` is offset 0, `i - 1/2` offset -1).
    Var {
        /// The index variable.
        var: Ident,
        /// The constant displacement (rounded down when `half`).
        offset: i64,
        /// Whether the displacement is `offset + 1/2`.
        half: bool,
    },
    /// Anything else; `var` is the index variable when one is recognisable (`i + c`) and
    /// `at` the part that is not an integer constant.
    NonConstant {
        /// The index variable, when the index has the shape `var ± something`.
        var: Option<Ident>,
        /// The offending part.
        at: SpanRange,
    },
}
