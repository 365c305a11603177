//! Where in a kernel a problem is: what [`super::VerifyError`] points at, and what the text of
//! an error describes.

use crate::ir::{ExprId, FieldId, ParamId, ReductionId};

/// Where in a kernel a problem is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Location {
    /// The kernel as a whole (its name, dimension count, or what it lacks).
    Kernel,
    /// A field declaration.
    Field(FieldId),
    /// A parameter declaration.
    Param(ParamId),
    /// A reduction declaration.
    Reduction(ReductionId),
    /// An expression node.
    Expr(ExprId),
    /// A statement, by position in [`Kernel::body`](crate::ir::Kernel::body).
    Stmt(usize),
}
