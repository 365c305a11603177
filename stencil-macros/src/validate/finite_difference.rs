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
//! The order defaults to 2. This module owns the tables and the expressions they expand to;
//! argument checking is in [`expr`](super::expr).

/// Which operator.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Operator {
    /// `diff(u, i, h[, order])`
    First,
    /// `diff2(u, i, h[, order])`
    Second,
    /// `laplace(u, h[, order])`
    Laplace,
}

/// The orders available.
pub(crate) const ORDERS: [u32; 4] = [2, 4, 6, 8];

impl Operator {
    /// The operator called `name`, if any.
    pub(crate) fn from_name(name: &str) -> Option<Operator> {
        match name {
            "diff" => Some(Operator::First),
            "diff2" => Some(Operator::Second),
            "laplace" => Some(Operator::Laplace),
            _ => None,
        }
    }

    /// Its name in the kernel language.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Operator::First => "diff",
            Operator::Second => "diff2",
            Operator::Laplace => "laplace",
        }
    }

    /// Whether its second argument is an index variable naming the dimension.
    pub(crate) fn takes_dimension(self) -> bool {
        self != Operator::Laplace
    }

    /// Position of the spacing argument (the order follows it, optionally).
    pub(crate) fn spacing_position(self) -> usize {
        if self.takes_dimension() { 2 } else { 1 }
    }

    /// How it is called, for messages.
    pub(crate) fn usage(self) -> &'static str {
        match self {
            Operator::First => "`diff(u, i, h)` or `diff(u, i, h, order)`",
            Operator::Second => "`diff2(u, i, h)` or `diff2(u, i, h, order)`",
            Operator::Laplace => "`laplace(u, h)` or `laplace(u, h, order)`",
        }
    }

    /// The weights `c_0, c_1, ..., c_r` of the central difference of `order` (one of
    /// [`ORDERS`]), for the point itself and each distance `k` on both sides: the first
    /// derivative is `sum c_k (u[+k] - u[-k]) / h` (`c_0 = 0`), the second
    /// `(c_0 u[0] + sum c_k (u[+k] + u[-k])) / h^2`.
    pub(crate) fn weights(self, order: u32) -> Vec<f64> {
        let table: &[(f64, f64)] = match (self, order) {
            (Operator::First, 2) => &[(0.0, 1.0), (1.0, 2.0)],
            (Operator::First, 4) => &[(0.0, 1.0), (2.0, 3.0), (-1.0, 12.0)],
            (Operator::First, 6) => &[(0.0, 1.0), (3.0, 4.0), (-3.0, 20.0), (1.0, 60.0)],
            (Operator::First, 8) => &[
                (0.0, 1.0),
                (4.0, 5.0),
                (-1.0, 5.0),
                (4.0, 105.0),
                (-1.0, 280.0),
            ],
            (_, 2) => &[(-2.0, 1.0), (1.0, 1.0)],
            (_, 4) => &[(-5.0, 2.0), (4.0, 3.0), (-1.0, 12.0)],
            (_, 6) => &[(-49.0, 18.0), (3.0, 2.0), (-3.0, 20.0), (1.0, 90.0)],
            (_, 8) => &[
                (-205.0, 72.0),
                (8.0, 5.0),
                (-1.0, 5.0),
                (8.0, 315.0),
                (-1.0, 560.0),
            ],
            _ => unreachable!("stencil!: bug in validate: order {order} was not checked"),
        };
        table.iter().map(|(p, q)| p / q).collect()
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
