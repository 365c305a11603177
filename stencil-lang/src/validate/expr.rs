//! Validation of expressions and indices: name resolution, function calls, index variables.
//! Calls of helpers go to [`inline`](super::inline), of operators to
//! [`finite_difference`](super::finite_difference).

use proc_macro2::Ident;
use stencil_core::{BinaryOp, MAX_DIMS, UnaryOp};
use syn::ext::IdentExt;

use super::{Binding, Context, MAX_EXPANDED_OPERATIONS, default_names};
use crate::checked::{CheckedExpr, CheckedExprKind};
use crate::diagnostic::SpanRange;
use crate::functions::{Operator, STEP, built_in_arity, unknown_function};
use crate::model::{self, BinaryOperator, ExprKind, IndexKind};

impl Context<'_> {
    /// Resolves `expr`, reporting unknown names, bad indices and bad calls.
    pub(super) fn check_expr(&mut self, expr: &model::Expr) -> CheckedExpr {
        use CheckedExprKind as K;
        if !self.spend(1, expr.range) {
            return CheckedExpr {
                kind: K::Invalid,
                range: expr.range,
            };
        }
        let kind = match &expr.kind {
            ExprKind::Number(value) => K::Const(*value),
            ExprKind::Name(ident) => self.value_of(ident),
            ExprKind::Access {
                base,
                indices,
                bracket,
            } => self.read(base, indices, *bracket),
            ExprKind::Neg(arg) => K::Unary(UnaryOp::Neg, Box::new(self.check_expr(arg))),
            ExprKind::Not(arg) => K::Not(Box::new(self.check_expr(arg))),
            ExprKind::Binary { op, lhs, rhs } => {
                let lhs = Box::new(self.check_expr(lhs));
                let rhs = Box::new(self.check_expr(rhs));
                match *op {
                    BinaryOperator::Arithmetic(op) => K::Binary(op, lhs, rhs),
                    BinaryOperator::Compare(op) => K::Compare(op, lhs, rhs),
                    BinaryOperator::Logic(op) => K::Logic(op, lhs, rhs),
                }
            }
            ExprKind::Call { func, args } => self.call(func, args, expr.range),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => K::Select(
                Box::new(self.check_expr(cond)),
                Box::new(self.check_expr(then)),
                Box::new(self.check_expr(otherwise)),
            ),
            ExprKind::Invalid => K::Invalid,
        };
        CheckedExpr {
            kind,
            range: expr.range,
        }
    }

    /// How many more operations the kernel may expand to.
    pub(super) fn budget(&self) -> usize {
        if self.exhausted { 0 } else { self.budget }
    }

    /// Takes `operations` from the expansion budget ([`MAX_EXPANDED_OPERATIONS`]); `false`
    /// once it has run out, after reporting that once, at the outermost helper call being
    /// inlined (else at `at`).
    pub(super) fn spend(&mut self, operations: usize, at: SpanRange) -> bool {
        if self.exhausted {
            return false;
        }
        if let Some(rest) = self.budget.checked_sub(operations) {
            self.budget = rest;
            return true;
        }
        self.exhausted = true;
        self.degraded = true;
        let limit = MAX_EXPANDED_OPERATIONS;
        let (range, message) = match (self.outermost_call, self.inlining.first()) {
            (Some(call), Some(helper)) => (
                call,
                format!(
                    "inlining `{helper}` expands the kernel past {limit} operations: a helper is \
                     inlined in full at every call, so helpers that call others more than once \
                     grow exponentially; call them fewer times"
                ),
            ),
            _ => (
                at,
                format!(
                    "the kernel expands past {limit} operations: split it into several kernels"
                ),
            ),
        };
        self.diagnostics.error(range, message);
        false
    }

    fn value_of(&mut self, ident: &Ident) -> CheckedExprKind {
        let name = ident.unraw().to_string();
        match self.scope.get(&name).copied() {
            Some(Binding::Param(param)) => return CheckedExprKind::Param(param),
            Some(Binding::Let(var)) => return CheckedExprKind::Let(var),
            Some(Binding::Const(value)) => return CheckedExprKind::Const(value),
            Some(Binding::Invalid) => {
                self.degraded = true;
                return CheckedExprKind::Invalid;
            }
            Some(Binding::Reduction(_)) => self
                .diagnostics
                .error_at(ident, format!("reduction `{name}` cannot be read")),
            Some(Binding::Field(..)) => {
                let point = self.point_of(&name);
                self.diagnostics.error_at(
                    ident,
                    format!("`{name}` is a grid: read it at a point, as in `{point}`"),
                );
            }
            None if self.dims_supported() => {
                if let Some(dim) = self.index_names().iter().position(|n| *n == name) {
                    return CheckedExprKind::Index(dim);
                }
                self.diagnostics
                    .error_at(ident, self.unknown_name_message(&name));
            }
            None => self
                .diagnostics
                .error_at(ident, format!("unknown name `{name}`")),
        }
        CheckedExprKind::Invalid
    }

    /// The kernel's index variables, one per dimension.
    fn index_names(&self) -> Vec<String> {
        self.index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims))
    }

    /// The message for `name`, which is no parameter, grid, temporary or index variable of
    /// the kernel; where it is an index variable of a kernel with more dimensions, it says so.
    fn unknown_name_message(&self, name: &str) -> String {
        if default_names(stencil_core::MAX_DIMS)
            .iter()
            .any(|n| n == name)
        {
            format!(
                "unknown name `{name}`: the kernel is {}-dimensional, its index variables are `{}`",
                self.n_dims,
                self.index_names().join("`, `")
            )
        } else {
            format!("unknown name `{name}`")
        }
    }

    fn read(
        &mut self,
        base: &Ident,
        indices: &[model::Index],
        bracket: SpanRange,
    ) -> CheckedExprKind {
        let name = base.unraw().to_string();
        let what = match self.scope.get(&name).copied() {
            Some(Binding::Field(field, shift)) => {
                let reader = self.inlining.last().cloned().unwrap_or_default();
                return match self
                    .check_indices(&name, indices, bracket)
                    .and_then(|offset| self.compose(shift, &offset, &format!("`{reader}`")))
                {
                    Some(offset) => CheckedExprKind::Read {
                        field,
                        offset,
                        index_ranges: indices.iter().map(|i| i.range).collect(),
                    },
                    None => CheckedExprKind::Invalid,
                };
            }
            Some(Binding::Invalid) => {
                self.degraded = true;
                return CheckedExprKind::Invalid;
            }
            Some(Binding::Param(_)) => "a parameter",
            Some(Binding::Let(_) | Binding::Const(_)) => "a temporary",
            Some(Binding::Reduction(_)) => {
                self.diagnostics
                    .error_at(base, format!("reduction `{name}` cannot be read"));
                return CheckedExprKind::Invalid;
            }
            None => {
                self.diagnostics
                    .error_at(base, format!("unknown grid `{name}`"));
                return CheckedExprKind::Invalid;
            }
        };
        self.diagnostics.error(
            bracket,
            format!("`{name}` is {what}, not a grid: use it without indices"),
        );
        CheckedExprKind::Invalid
    }

    /// The offsets of an access to grid `name`, or `None` (after reporting) when the indices
    /// are not this kernel's index variables, in order, each plus or minus an integer constant.
    pub(super) fn check_indices(
        &mut self,
        name: &str,
        indices: &[model::Index],
        bracket: SpanRange,
    ) -> Option<Vec<i64>> {
        let var_names: Option<Vec<String>> = indices
            .iter()
            .map(|index| match &index.kind {
                IndexKind::Var { var, .. } => Some(var.unraw().to_string()),
                IndexKind::NonConstant { .. } => None,
            })
            .collect();
        if !self.dims_supported() {
            // The verifier reports the dimension count; checking indices would only add noise.
            self.degraded = true;
            return None;
        }
        if indices.len() != self.n_dims {
            let point = self.point_of(name);
            self.diagnostics.error(
                bracket,
                format!(
                    "wrong number of indices: `{name}` is {}-dimensional, as in `{point}`",
                    self.n_dims
                ),
            );
            return None;
        }
        let expected = self
            .index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims));
        if let (Some(names), Some(vars)) = (&self.index_names, &var_names)
            && vars != names
            && is_permutation(vars, names)
        {
            self.diagnostics.error(
                bracket,
                format!(
                    "index variables must appear in the order `{}`",
                    names.join(", ")
                ),
            );
            return None;
        }
        let staggered = match self.scope.get(name) {
            Some(Binding::Field(field, _)) => self.stagger_of(*field),
            _ => [false; MAX_DIMS],
        };
        let mut offsets = Vec::with_capacity(indices.len());
        let mut valid = true;
        for (dim, index) in indices.iter().enumerate() {
            match &index.kind {
                IndexKind::Var { var, offset, half } => {
                    let found = var.unraw().to_string();
                    if self.index_names.is_some() && found != expected[dim] {
                        self.diagnostics.error_at(
                            var,
                            format!(
                                "expected index variable `{}`, found `{found}`",
                                expected[dim]
                            ),
                        );
                        valid = false;
                    } else if *half != staggered[dim] {
                        let message = if *half {
                            format!(
                                "`{name}` is not staggered along `{found}`: its points are at \
                                 whole indices, as in `{found} + 1` (declare `#[stagger({found})]` \
                                 on a grid whose points sit half a cell off)"
                            )
                        } else {
                            format!(
                                "`{name}` is staggered along `{found}`: its points sit half a \
                                 cell off, as in `{found} + 1/2` or `{found} - 1/2`"
                            )
                        };
                        self.diagnostics.error(index.range, message);
                        valid = false;
                    }
                    offsets.push(*offset);
                }
                IndexKind::NonConstant { var: Some(var), at } => {
                    let var = var.unraw();
                    let message = if staggered[dim] {
                        format!(
                            "`{name}` is staggered along `{var}`: the offset is a constant half, \
                             as in `{var} + 1/2` or `{var} - 3/2`"
                        )
                    } else {
                        format!(
                            "offset must be an integer constant: write `{var} + 1` or `{var} - 1`"
                        )
                    };
                    self.diagnostics.error(*at, message);
                    valid = false;
                }
                IndexKind::NonConstant { var: None, at } => {
                    let var = &expected[dim];
                    self.diagnostics.error(
                        *at,
                        format!(
                            "an index is `{var}` plus or minus an integer constant, as in `{var} + 1`"
                        ),
                    );
                    valid = false;
                }
            }
        }
        valid.then_some(offsets)
    }

    fn call(&mut self, func: &Ident, args: &[model::Expr], range: SpanRange) -> CheckedExprKind {
        use CheckedExprKind as K;
        let name = func.unraw().to_string();
        let all_helpers = self.helpers;
        if let Some(helper) = all_helpers.get(&name) {
            return self.inline(&name, helper, args, range);
        }
        if let Some(op) = Operator::from_name(&name) {
            return self.derivative(op, args, range);
        }
        let Some((arity, _)) = built_in_arity(&name) else {
            // The arguments are not checked: what they should be is unknown.
            let message = unknown_function(&name, &all_helpers.names(), all_helpers.origin());
            self.diagnostics.error_at(func, message);
            return K::Invalid;
        };
        let mut args: Vec<Box<CheckedExpr>> =
            args.iter().map(|a| Box::new(self.check_expr(a))).collect();
        if args.len() != arity {
            let plural = if arity == 1 { "" } else { "s" };
            self.diagnostics.error(
                range,
                format!(
                    "`{name}` takes {arity} argument{plural}, found {}",
                    args.len()
                ),
            );
            return K::Invalid;
        }
        let mut next = || args.remove(0);
        if name == STEP {
            K::Step
        } else if let Some(op) = UnaryOp::from_function_name(&name) {
            K::Unary(op, next())
        } else if let Some(op) = BinaryOp::from_function_name(&name) {
            K::Binary(op, next(), next())
        } else {
            K::Select(next(), next(), next())
        }
    }
}

/// Whether `a` holds the same names as `b`, in any order.
fn is_permutation(a: &[String], b: &[String]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    a == b
}
