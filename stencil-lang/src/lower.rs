//! Lowering: the checked kernel to core IR through [`KernelBuilder`], then core's verifier.
//!
//! The verifier is the one definition of a valid kernel; this stage only translates its
//! [`Location`]s back to the source ranges kept while building. Each expression node pushed
//! to the builder's arena gets an entry in a parallel list of ranges, each statement likewise.
//!
//! When earlier stages already reported errors (or replaced something by a placeholder), the
//! kernel is still lowered and verified, but only verifier errors that cannot be consequences
//! of a placeholder are kept, so the user sees each mistake once.

use std::collections::HashMap;

use stencil_core::{
    Expr, ExprId, FieldId, Kernel, KernelBuilder, LetId, Location, MAX_DIMS, ParamId, ReductionId,
    VerifyError, VerifyErrorKind,
};

use crate::checked::{CheckedExpr, CheckedExprKind, CheckedKernel, CheckedStmt};
use crate::diagnostic::{Diagnostics, SpanRange};

/// Lowers and verifies `checked`. Returns the kernel when it is valid and nothing was reported
/// before; otherwise reports the verifier's errors and returns `None`.
pub fn lower(checked: &CheckedKernel, diagnostics: &mut Diagnostics) -> Option<Kernel> {
    let earlier_errors = !diagnostics.is_empty() || checked.degraded;
    if checked.n_dims > MAX_DIMS {
        // Reported as the verifier would, without a builder, which holds a name per dimension
        // (`Grid16397105843297379213<f64>` would not fit in memory).
        let kind = VerifyErrorKind::BadDimensionCount(checked.n_dims);
        diagnostics.error(checked.dims_range, kind.to_string());
        return None;
    }
    let mut lowering = Lowering {
        builder: KernelBuilder::new(&checked.name, checked.n_dims, checked.elem),
        fields: Vec::new(),
        params: Vec::new(),
        reductions: Vec::new(),
        lets: Vec::new(),
        expr_ranges: Vec::new(),
        stmt_ranges: Vec::new(),
    };
    let names: Vec<&str> = checked.index_names.iter().map(String::as_str).collect();
    lowering.builder.index_names(&names);
    lowering.builder.fma(checked.fma);
    for field in &checked.fields {
        let id = lowering.builder.field(&field.name, field.role, field.elem);
        lowering.fields.push(id);
    }
    for param in &checked.params {
        let id = lowering.builder.param_typed(&param.name, param.elem);
        lowering.params.push(id);
    }
    for reduction in &checked.reductions {
        let id = lowering.builder.reduction(&reduction.name, reduction.op);
        lowering.reductions.push(id);
    }
    for statement in &checked.body {
        lowering.statement(statement);
    }
    let unverified = lowering.builder.peek().clone();
    match lowering.builder.finish() {
        Ok(kernel) => (!earlier_errors).then_some(kernel),
        Err(errors) => {
            let mut mapper = LocationMapper {
                checked,
                kernel: &unverified,
                expr_ranges: &lowering.expr_ranges,
                stmt_ranges: &lowering.stmt_ranges,
                seen: HashMap::new(),
            };
            for error in &errors.errors {
                if earlier_errors && !stands_alone(&error.kind) {
                    continue;
                }
                let range = mapper.range_of(error);
                diagnostics.error(range, error.kind.to_string());
            }
            None
        }
    }
}

/// Whether a verifier error is about the source itself, never a consequence of a placeholder
/// (an expression replaced by a constant, a statement dropped).
fn stands_alone(kind: &VerifyErrorKind) -> bool {
    matches!(
        kind,
        VerifyErrorKind::BadDimensionCount(_)
            | VerifyErrorKind::DuplicateName(_)
            | VerifyErrorKind::MixedElementTypes { .. }
            | VerifyErrorKind::ReadOfOutput(_)
            | VerifyErrorKind::WriteToInput(_)
            | VerifyErrorKind::OutputWrittenTwice(_)
            | VerifyErrorKind::ReductionTwice(_)
            | VerifyErrorKind::RadiusTooLarge { .. }
    )
}

/// Source ranges of one statement.
struct StmtRanges {
    /// The left-hand side of a store (the value, for a `let`).
    target: SpanRange,
    /// The value.
    value: SpanRange,
}

/// Source ranges of one expression node.
struct ExprRanges {
    /// The whole expression.
    whole: SpanRange,
    /// Each index of a read.
    indices: Vec<SpanRange>,
}

struct Lowering {
    builder: KernelBuilder,
    fields: Vec<FieldId>,
    params: Vec<ParamId>,
    reductions: Vec<ReductionId>,
    lets: Vec<LetId>,
    expr_ranges: Vec<ExprRanges>,
    stmt_ranges: Vec<StmtRanges>,
}

impl Lowering {
    fn statement(&mut self, statement: &CheckedStmt) {
        match statement {
            CheckedStmt::Let { name, value } => {
                let id = self.expr(value);
                let var = self.builder.let_(name, id);
                self.lets.push(var);
                self.stmt_ranges.push(StmtRanges {
                    target: value.range,
                    value: value.range,
                });
            }
            CheckedStmt::Store { field, lhs, value } => {
                let id = self.expr(value);
                self.builder.store(self.fields[*field], id);
                self.stmt_ranges.push(StmtRanges {
                    target: *lhs,
                    value: value.range,
                });
            }
            CheckedStmt::Reduce {
                reduction,
                lhs,
                value,
            } => {
                let id = self.expr(value);
                self.builder.reduce(self.reductions[*reduction], id);
                self.stmt_ranges.push(StmtRanges {
                    target: *lhs,
                    value: value.range,
                });
            }
        }
    }

    /// Pushes `expr`'s nodes (operands first) and returns the root's id.
    fn expr(&mut self, expr: &CheckedExpr) -> ExprId {
        use CheckedExprKind as K;
        let mut indices = Vec::new();
        let node = match &expr.kind {
            K::Const(value) => Expr::Const(*value),
            K::Invalid => Expr::Const(0.0),
            K::Param(param) => Expr::Param(self.params[*param]),
            K::Let(var) => Expr::Let(self.lets[*var]),
            K::Index(dim) => Expr::Index(*dim),
            K::Step => Expr::Step,
            K::Read {
                field,
                offset,
                index_ranges,
            } => {
                indices.clone_from(index_ranges);
                let entries: Vec<i32> = offset
                    .iter()
                    .take(MAX_DIMS)
                    .map(|&o| i32::try_from(o).unwrap_or(if o < 0 { i32::MIN } else { i32::MAX }))
                    .collect();
                Expr::Read {
                    field: self.fields[*field],
                    offset: stencil_core::Offset::from_slice(&entries),
                }
            }
            K::Unary(op, arg) => Expr::Unary {
                op: *op,
                arg: self.expr(arg),
            },
            K::Not(arg) => Expr::Not(self.expr(arg)),
            K::Binary(op, lhs, rhs) => Expr::Binary {
                op: *op,
                lhs: self.expr(lhs),
                rhs: self.expr(rhs),
            },
            K::Compare(op, lhs, rhs) => Expr::Compare {
                op: *op,
                lhs: self.expr(lhs),
                rhs: self.expr(rhs),
            },
            K::Logic(op, lhs, rhs) => Expr::Logic {
                op: *op,
                lhs: self.expr(lhs),
                rhs: self.expr(rhs),
            },
            K::Select(cond, then, otherwise) => Expr::Select {
                cond: self.expr(cond),
                then: self.expr(then),
                otherwise: self.expr(otherwise),
            },
        };
        let id = self.builder.expr(node);
        debug_assert_eq!(id.index(), self.expr_ranges.len());
        self.expr_ranges.push(ExprRanges {
            whole: expr.range,
            indices,
        });
        id
    }
}

/// Maps verifier [`Location`]s to source ranges.
struct LocationMapper<'a> {
    checked: &'a CheckedKernel,
    kernel: &'a Kernel,
    expr_ranges: &'a [ExprRanges],
    stmt_ranges: &'a [StmtRanges],
    /// How many errors of each (node, expects-boolean) were mapped so far, so a node with two
    /// wrong operands points at each in turn.
    seen: HashMap<(usize, bool), usize>,
}

impl LocationMapper<'_> {
    fn range_of(&mut self, error: &VerifyError) -> SpanRange {
        let checked = self.checked;
        match (error.location, &error.kind) {
            (Location::Kernel, VerifyErrorKind::EmptyKernel) => checked.body_range,
            (Location::Kernel, VerifyErrorKind::BadDimensionCount(_)) => checked.dims_range,
            (Location::Kernel, _) => checked.name_range,
            (Location::Field(id), VerifyErrorKind::MixedElementTypes { .. }) => {
                checked.fields[id.index()].elem_range
            }
            (Location::Field(id), _) => checked.fields[id.index()].name_range,
            (Location::Param(id), VerifyErrorKind::MixedElementTypes { .. }) => {
                checked.params[id.index()].type_range
            }
            (Location::Param(id), _) => checked.params[id.index()].name_range,
            (Location::Reduction(id), VerifyErrorKind::MixedElementTypes { .. }) => {
                checked.reductions[id.index()].type_range
            }
            (Location::Reduction(id), _) => checked.reductions[id.index()].name_range,
            (Location::Expr(id), VerifyErrorKind::RadiusTooLarge { dim, .. }) => {
                let ranges = &self.expr_ranges[id.index()];
                ranges.indices.get(*dim).copied().unwrap_or(ranges.whole)
            }
            (Location::Expr(id), VerifyErrorKind::ExpectedBoolean) => self.operand(id, true),
            (Location::Expr(id), VerifyErrorKind::ExpectedReal) => self.operand(id, false),
            (Location::Expr(id), _) => self.expr_ranges[id.index()].whole,
            (Location::Stmt(s), VerifyErrorKind::ExpectedReal) => self.stmt_ranges[s].value,
            (Location::Stmt(s), _) => self.stmt_ranges[s].target,
        }
    }

    /// The range of the operand of node `id` that should be boolean (`want_boolean`) or real
    /// and is not; the n-th such operand for the n-th error at this node.
    fn operand(&mut self, id: ExprId, want_boolean: bool) -> SpanRange {
        let node = self.kernel.expr(id);
        let wants: Vec<(ExprId, bool)> = match *node {
            Expr::Logic { lhs, rhs, .. } => vec![(lhs, true), (rhs, true)],
            Expr::Not(arg) => vec![(arg, true)],
            Expr::Select {
                cond,
                then,
                otherwise,
            } => vec![(cond, true), (then, false), (otherwise, false)],
            _ => node.operands().map(|o| (o, false)).collect(),
        };
        let wrong: Vec<ExprId> = wants
            .into_iter()
            .filter(|&(o, boolean)| {
                boolean == want_boolean && self.kernel.expr(o).is_boolean() != boolean
            })
            .map(|(o, _)| o)
            .collect();
        let seen = self.seen.entry((id.index(), want_boolean)).or_insert(0);
        let pick = wrong.get(*seen).or(wrong.last()).copied();
        *seen += 1;
        pick.map_or(self.expr_ranges[id.index()].whole, |o| {
            self.expr_ranges[o.index()].whole
        })
    }
}

#[cfg(test)]
mod tests;
