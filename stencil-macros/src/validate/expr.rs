//! Validation of expressions and indices: name resolution, function calls, index variables.

use proc_macro2::Ident;
use stencil_core::{BinaryOp, MAX_DIMS, MAX_RADIUS, UnaryOp};
use syn::ext::IdentExt;

use super::finite_difference::Operator;
use super::helpers::{self, Helper, ParamKind};
use super::{Binding, Context, Shift, default_names};
use crate::checked::{CheckedExpr, CheckedExprKind, CheckedStmt};
use crate::diagnostic::SpanRange;
use crate::model::{self, BinaryOperator, ExprKind, IndexKind};

impl Context<'_> {
    /// Resolves `expr`, reporting unknown names, bad indices and bad calls.
    pub(super) fn check_expr(&mut self, expr: &model::Expr) -> CheckedExpr {
        use CheckedExprKind as K;
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
            Some(Binding::Field(..)) => {
                let point = self.point_of(&name);
                self.diagnostics.error_at(
                    ident,
                    format!("`{name}` is a grid: read it at a point, as in `{point}`"),
                );
            }
            None if self.is_index_name(&name) => self.diagnostics.error_at(
                ident,
                format!("`{name}` is an index variable, not a value: it can only index a grid"),
            ),
            None => self
                .diagnostics
                .error_at(ident, format!("unknown name `{name}`")),
        }
        CheckedExprKind::Invalid
    }

    fn is_index_name(&self, name: &str) -> bool {
        self.index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims))
            .iter()
            .any(|n| n == name)
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
        let mut offsets = Vec::with_capacity(indices.len());
        let mut valid = true;
        for (dim, index) in indices.iter().enumerate() {
            match &index.kind {
                IndexKind::Var { var, offset } => {
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
                    }
                    offsets.push(*offset);
                }
                IndexKind::NonConstant { var: Some(var), at } => {
                    let var = var.unraw();
                    self.diagnostics.error(
                        *at,
                        format!(
                            "offset must be an integer constant: write `{var} + 1` or `{var} - 1`"
                        ),
                    );
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
        let Some((arity, _)) = helpers::built_in_arity(&name) else {
            // The arguments are not checked: what they should be is unknown.
            self.diagnostics.error_at(
                func,
                format!(
                    "unknown function `{name}`: the kernel language has {}, and the helpers defined in this `stencil!` block",
                    function_list()
                ),
            );
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
        if let Some(op) = UnaryOp::from_function_name(&name) {
            K::Unary(op, next())
        } else if let Some(op) = BinaryOp::from_function_name(&name) {
            K::Binary(op, next(), next())
        } else {
            K::Select(next(), next(), next())
        }
    }
}

impl Context<'_> {
    /// Inlines a call of `helper` (called `name`): its body checked with its parameters bound
    /// to the arguments, in the caller's index variables.
    fn inline(
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
    fn value_argument(
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
    fn grid_argument(
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
    fn compose(&mut self, shift: Shift, offset: &[i64], reader: &str) -> Option<Vec<i64>> {
        let Some(at) = shift.at else {
            return Some(offset.to_vec());
        };
        let total: Vec<i64> = offset
            .iter()
            .zip(shift.offset)
            .map(|(o, s)| o.saturating_add(s))
            .collect();
        let limit = i64::from(MAX_RADIUS);
        if total.iter().all(|o| o.abs() <= limit) {
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

    /// Expands a finite-difference operator into reads and arithmetic.
    fn derivative(
        &mut self,
        op: Operator,
        args: &[model::Expr],
        range: SpanRange,
    ) -> CheckedExprKind {
        use CheckedExprKind as K;
        let name = op.name();
        let spacing_at = op.spacing_position();
        if !(spacing_at + 1..=spacing_at + 2).contains(&args.len()) {
            self.diagnostics.error(
                range,
                format!(
                    "{}: `{name}` takes {} or {} arguments, found {}",
                    op.usage(),
                    spacing_at + 1,
                    spacing_at + 2,
                    args.len()
                ),
            );
            return K::Invalid;
        }
        if !self.dims_supported() {
            // The verifier reports the dimension count; expanding would only add noise.
            self.degraded = true;
            return K::Invalid;
        }
        let grid = self.grid_argument(name, 0, &args[0]);
        let dims: Option<Vec<usize>> = if op.takes_dimension() {
            self.dimension_argument(op, &args[1]).map(|d| vec![d])
        } else {
            Some((0..self.n_dims.min(MAX_DIMS)).collect())
        };
        let order = match helpers::order_of(op, args.get(spacing_at + 1)) {
            Ok(order) => Some(order),
            Err(message) => {
                self.diagnostics.error(args[spacing_at + 1].range, message);
                None
            }
        };
        let spacing = self.value_argument(name, spacing_at, "h", &args[spacing_at]);
        let (Some(Binding::Field(field, shift)), Some(dims), Some(order), Some(spacing)) =
            (grid, dims, order, spacing)
        else {
            return K::Invalid;
        };
        let node = |kind| Box::new(CheckedExpr { kind, range });
        let weights = op.weights(order);
        let mut reads_ok = true;
        let mut read = |context: &mut Self, dim: usize, distance: i64| {
            let mut offset = vec![0; context.n_dims];
            offset[dim] = distance;
            let reader = format!("`{name}` of order {order}");
            match context.compose(shift, &offset, &reader) {
                Some(offset) if reads_ok => node(K::Read {
                    field,
                    offset,
                    index_ranges: vec![range; context.n_dims],
                }),
                Some(_) => node(K::Invalid),
                None => {
                    reads_ok = false;
                    node(K::Invalid)
                }
            }
        };
        let mut terms: Vec<Box<CheckedExpr>> = Vec::new();
        if op != Operator::First {
            #[allow(clippy::cast_precision_loss)] // at most 4 dimensions
            let centre = weights[0] * dims.len() as f64;
            let at_point = read(self, dims[0], 0);
            terms.push(node(K::Binary(
                BinaryOp::Mul,
                node(K::Const(centre)),
                at_point,
            )));
        }
        for &dim in &dims {
            for (k, &weight) in weights.iter().enumerate().skip(1) {
                let k = i64::try_from(k).unwrap_or(i64::MAX);
                let ahead = read(self, dim, k);
                let behind = read(self, dim, -k);
                let combine = if op == Operator::First {
                    BinaryOp::Sub
                } else {
                    BinaryOp::Add
                };
                let pair = node(K::Binary(combine, ahead, behind));
                // A weight of one (order 2's second derivative) costs no multiplication.
                terms.push(if weight == 1.0 {
                    pair
                } else {
                    node(K::Binary(BinaryOp::Mul, node(K::Const(weight)), pair))
                });
            }
        }
        if !reads_ok {
            return K::Invalid;
        }
        let sum = terms
            .into_iter()
            .reduce(|a, b| node(K::Binary(BinaryOp::Add, a, b)))
            .unwrap_or_else(|| node(K::Const(0.0)));
        let h = || {
            node(match spacing {
                Binding::Const(v) => K::Const(v),
                Binding::Param(p) => K::Param(p),
                Binding::Let(l) => K::Let(l),
                Binding::Field(..) | Binding::Invalid => K::Invalid,
            })
        };
        let denominator = if op == Operator::First {
            h()
        } else {
            node(K::Binary(BinaryOp::Mul, h(), h()))
        };
        K::Binary(BinaryOp::Div, sum, denominator)
    }

    /// The dimension an operator's index-variable argument names, or `None` after reporting.
    fn dimension_argument(&mut self, op: Operator, arg: &model::Expr) -> Option<usize> {
        let names = self
            .index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims));
        if let ExprKind::Name(ident) = &arg.kind {
            let name = ident.unraw().to_string();
            if let Some(dim) = names.iter().position(|n| *n == name) {
                return Some(dim);
            }
        }
        let name = op.name();
        let first = names.first().map_or("i", String::as_str);
        self.diagnostics.error(
            arg.range,
            format!(
                "the second argument of `{name}` is the index variable of a dimension: one of `{}`, as in `{name}(u, {first}, h)`",
                names.join("`, `"),
            ),
        );
        None
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

/// `abs, sqrt, ..., min, max, pow, select, diff, diff2 and laplace`.
pub(crate) fn function_list() -> String {
    let mut names: Vec<&str> = UnaryOp::ALL
        .iter()
        .filter(|op| UnaryOp::from_function_name(op.name()).is_some())
        .map(|op| op.name())
        .collect();
    names.extend(
        BinaryOp::ALL
            .iter()
            .filter(|op| BinaryOp::from_function_name(op.name()).is_some())
            .map(|op| op.name()),
    );
    format!("{}, select, diff, diff2 and laplace", names.join(", "))
}
