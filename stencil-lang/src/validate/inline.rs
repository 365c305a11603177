//! Inlining a helper call: binding its parameters to the caller's grids (shifted) and values,
//! checking its body in its own scope with the caller's index variables, and composing the
//! offsets of shifted grids within the radius limit.

use stencil_core::MAX_RADIUS;
use syn::ext::IdentExt;

use super::helpers::{self, Helper, ParamKind};
use super::{Binding, Context, Shift, default_names};
use crate::checked::{CheckedExpr, CheckedExprKind, CheckedStmt};
use crate::diagnostic::SpanRange;
use crate::model::{self, ExprKind};

impl Context<'_> {
    /// Inlines a call of `helper` (called `name`): its body checked with its parameters bound
    /// to the arguments, in the caller's index variables.
    pub(super) fn inline(
        &mut self,
        name: &str,
        helper: &Helper,
        args: &[model::Expr],
        range: SpanRange,
    ) -> CheckedExprKind {
        let arity = helper.kinds.len();
        if args.len() != arity {
            let message = helpers::arity_message(name, arity, arity, args.len());
            self.diagnostics.error(range, message);
            return CheckedExprKind::Invalid;
        }
        if helper.broken {
            self.degraded = true;
            return CheckedExprKind::Invalid;
        }
        // Refused before inlining when it cannot fit: inlining 2^40 operations one by one
        // until the budget runs out would take as long as the limit is large.
        if helper.expanded > self.budget() {
            if self.inlining.is_empty() {
                self.outermost_call = Some(range);
            }
            self.inlining.push(name.to_string());
            self.spend(helper.expanded, range);
            self.inlining.pop();
            return CheckedExprKind::Invalid;
        }
        let mut scope = std::collections::HashMap::new();
        let mut bound = true;
        for (position, ((param, kind), arg)) in helper
            .model
            .params
            .iter()
            .zip(&helper.kinds)
            .zip(args)
            .enumerate()
        {
            let param = param.unraw().to_string();
            let binding = match kind {
                ParamKind::Grid => self.grid_argument(name, position, arg),
                ParamKind::Value => self.value_argument(name, position, &param, arg),
            };
            match binding {
                Some(binding) => {
                    scope.insert(param, binding);
                }
                None => bound = false,
            }
        }
        if !bound {
            return CheckedExprKind::Invalid;
        }
        let caller_scope = std::mem::replace(&mut self.scope, scope);
        if self.inlining.is_empty() {
            self.outermost_call = Some(range);
        }
        self.inlining.push(name.to_string());
        for (let_name, value) in &helper.model.lets {
            let value = self.check_expr(value);
            let let_name = let_name.unraw().to_string();
            let index = self.hoist(format!("{name}.{let_name}"), value);
            self.scope.insert(let_name, Binding::Let(index));
        }
        let value = self.check_expr(&helper.model.value);
        self.inlining.pop();
        self.scope = caller_scope;
        value.kind
    }

    /// Adds `let name = value;` before the statement being checked; its number.
    fn hoist(&mut self, name: String, value: CheckedExpr) -> usize {
        let index = self.n_lets;
        self.n_lets += 1;
        self.pending.push(CheckedStmt::Let { name, value });
        index
    }

    /// The binding of a value argument: constants, parameters and `let`s as they are, other
    /// values computed once into a `let`. `None` after reporting a grid given as a value.
    pub(super) fn value_argument(
        &mut self,
        callee: &str,
        position: usize,
        param: &str,
        arg: &model::Expr,
    ) -> Option<Binding> {
        if let ExprKind::Name(ident) = &arg.kind {
            let name = ident.unraw().to_string();
            if let Some(Binding::Field(..)) = self.scope.get(&name) {
                let point = self.point_of(&name);
                self.diagnostics.error(
                    arg.range,
                    format!(
                        "`{callee}` takes a value as argument {}: `{name}` is a grid, read it at a point, as in `{point}`",
                        position + 1
                    ),
                );
                return None;
            }
        }
        let value = self.check_expr(arg);
        Some(match value.kind {
            CheckedExprKind::Const(v) => Binding::Const(v),
            CheckedExprKind::Param(p) => Binding::Param(p),
            CheckedExprKind::Let(l) => Binding::Let(l),
            CheckedExprKind::Invalid => return None,
            _ => Binding::Let(self.hoist(format!("{callee}.{param}"), value)),
        })
    }

    /// The binding of a grid argument: a grid's name, or a grid shifted as in `u[i + 1, j]`.
    /// `None` after reporting anything else.
    pub(super) fn grid_argument(
        &mut self,
        callee: &str,
        position: usize,
        arg: &model::Expr,
    ) -> Option<Binding> {
        let (base, indices) = match &arg.kind {
            ExprKind::Name(base) => (base, None),
            ExprKind::Access {
                base,
                indices,
                bracket,
            } => (base, Some((indices, *bracket))),
            _ => {
                let message = helpers::grid_expected(callee, position);
                self.diagnostics.error(arg.range, message);
                return None;
            }
        };
        let name = base.unraw().to_string();
        let what = match self.scope.get(&name).copied() {
            Some(Binding::Field(field, _)) if self.stagger_of(field).contains(&true) => {
                self.diagnostics.error(
                    arg.range,
                    format!(
                        "`{name}` is staggered: a staggered grid cannot be passed to a helper or \
                         an operator; read its points in the kernel, as in `{}`",
                        self.point_of(&name)
                    ),
                );
                return None;
            }
            Some(Binding::Field(field, shift)) => {
                let Some((indices, bracket)) = indices else {
                    return Some(Binding::Field(field, shift));
                };
                let offset = self.check_indices(&name, indices, bracket)?;
                let mut composed = shift.offset;
                for (total, o) in composed.iter_mut().zip(&offset) {
                    *total += o;
                }
                return Some(Binding::Field(
                    field,
                    Shift {
                        offset: composed,
                        at: Some(arg.range),
                    },
                ));
            }
            Some(Binding::Invalid) => {
                self.degraded = true;
                return None;
            }
            Some(Binding::Param(_)) => "a parameter",
            Some(Binding::Reduction(_)) => "a reduction",
            Some(Binding::Let(_) | Binding::Const(_)) => "a temporary",
            None => {
                self.diagnostics
                    .error_at(base, format!("unknown grid `{name}`"));
                return None;
            }
        };
        self.diagnostics.error(
            arg.range,
            format!(
                "`{callee}` takes a grid as argument {}: `{name}` is {what}, not a grid",
                position + 1
            ),
        );
        None
    }

    /// `offset` plus the shift of the grid it reads, or `None` after reporting a sum past
    /// the radius limit (at the shifted argument). `reader` names what reads, for the message.
    pub(super) fn compose(
        &mut self,
        shift: Shift,
        offset: &[i64],
        reader: &str,
    ) -> Option<Vec<i64>> {
        let Some(at) = shift.at else {
            return Some(offset.to_vec());
        };
        let total: Vec<i64> = offset
            .iter()
            .zip(shift.offset)
            .map(|(o, s)| o.saturating_add(s))
            .collect();
        let limit = i64::from(MAX_RADIUS);
        if total
            .iter()
            .all(|o| o.unsigned_abs() <= limit.unsigned_abs())
        {
            return Some(total);
        }
        let names = self
            .index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims));
        let point: Vec<String> = names
            .iter()
            .zip(&total)
            .map(|(name, &o)| match o {
                0 => name.clone(),
                o if o < 0 => format!("{name} - {}", o.unsigned_abs()),
                o => format!("{name} + {o}"),
            })
            .collect();
        self.diagnostics.error(
            at,
            format!(
                "offsets compose past the radius limit of {MAX_RADIUS}: {reader} reads this shifted grid at `[{}]`",
                point.join(", ")
            ),
        );
        None
    }
}
