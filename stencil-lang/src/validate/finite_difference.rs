//! The built-in finite-difference operators: `diff`, `diff2` and `laplace`.
//!
//! Central differences of order 2, 4, 6 or 8 (radius `order / 2`) with the standard
//! coefficients (Fornberg's tables), the spacing given as an argument:
//!
//! - `diff(u, i, h)` / `diff(u, i, h, order)`: first derivative of grid `u` along the
//!   dimension of index variable `i`;
//! - `diff2(u, i, h)` / `diff2(u, i, h, order)`: second derivative along `i`;
//! - `laplace(u, h)` / `laplace(u, h, order)`: the sum of the second derivatives along every
//!   dimension, the same spacing `h` in each.
//!
//! The order defaults to 2. The operators and their tables are built-in functions
//! ([`Operator`], defined with the others); this module owns the checks of the arguments and
//! the expressions the operators expand to.

use stencil_core::{BinaryOp, MAX_DIMS};
use syn::ext::IdentExt;

use super::{Binding, Context, default_names};
use crate::checked::{CheckedExpr, CheckedExprKind};
use crate::diagnostic::SpanRange;
use crate::functions::order_of;
use crate::model::{self, ExprKind};

pub use crate::functions::{ORDERS, Operator};

impl Context<'_> {
    /// Expands a finite-difference operator into reads and arithmetic.
    pub(super) fn derivative(
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
        let order = match order_of(op, args.get(spacing_at + 1)) {
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
        let weights = op.weights(order);
        // Each distance adds two reads, their sum or difference, a weight and its product
        // and the sum of terms; the centre and the spacing a few more.
        if !self.spend(6 * dims.len() * weights.len() + 6, range) {
            return K::Invalid;
        }
        let node = |kind| Box::new(CheckedExpr { kind, range });
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
                Binding::Field(..) | Binding::Reduction(_) | Binding::Invalid => K::Invalid,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `sum_k w_k * x_k^power` over the stencil's points for operator `op` and `order`,
    /// evaluated on the monomial `x^power` at `x = 0` with unit spacing.
    fn apply_to_monomial(op: Operator, order: u32, power: u32) -> f64 {
        let weights = op.weights(order);
        let monomial = |x: f64| x.powi(power.try_into().unwrap());
        let mut sum = weights[0] * monomial(0.0);
        for (k, w) in weights.iter().enumerate().skip(1) {
            let k = k as f64;
            sum += match op {
                Operator::First => w * (monomial(k) - monomial(-k)),
                _ => w * (monomial(k) + monomial(-k)),
            };
        }
        sum
    }

    #[test]
    fn weights_differentiate_polynomials_up_to_their_order_exactly() {
        for order in ORDERS {
            assert_eq!(Operator::First.weights(order).len(), order as usize / 2 + 1);
            // d/dx x^p at 0 is 1 for p = 1 and 0 otherwise; d2/dx2 x^p at 0 is 2 for p = 2.
            for power in 0..=order {
                let first = apply_to_monomial(Operator::First, order, power);
                let want = if power == 1 { 1.0 } else { 0.0 };
                assert!(
                    (first - want).abs() < 1e-12,
                    "diff o{order} x^{power}: {first}"
                );
                let second = apply_to_monomial(Operator::Second, order, power);
                let want = if power == 2 { 2.0 } else { 0.0 };
                assert!(
                    (second - want).abs() < 1e-12,
                    "diff2 o{order} x^{power}: {second}"
                );
            }
            // And not beyond: the error term is of degree order + 1 (+ 2 for the second).
            assert!(apply_to_monomial(Operator::First, order, order + 1).abs() > 1e-6);
            assert!(apply_to_monomial(Operator::Second, order, order + 2).abs() > 1e-6);
        }
    }

    #[test]
    fn names_round_trip() {
        for op in [Operator::First, Operator::Second, Operator::Laplace] {
            assert_eq!(Operator::from_name(op.name()), Some(op));
        }
        assert_eq!(Operator::from_name("dx"), None);
    }
}
