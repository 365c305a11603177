//! The kernel language's built-in functions: their names and arities, the finite-difference
//! operators' definitions ([`Operator`], [`ORDERS`]; their expansion is validation's), and the
//! messages that list the functions or suggest the nearest one to an unknown name.

use stencil_core::{BinaryOp, UnaryOp};

use crate::model::{Expr, ExprKind};
use crate::origin::Origin;

/// A finite-difference operator.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operator {
    /// `diff(u, i, h[, order])`
    First,
    /// `diff2(u, i, h[, order])`
    Second,
    /// `laplace(u, h[, order])`
    Laplace,
}

/// The orders available.
pub const ORDERS: [u32; 4] = [2, 4, 6, 8];

impl Operator {
    /// The operator called `name`, if any.
    pub fn from_name(name: &str) -> Option<Operator> {
        match name {
            "diff" => Some(Operator::First),
            "diff2" => Some(Operator::Second),
            "laplace" => Some(Operator::Laplace),
            _ => None,
        }
    }

    /// Its name in the kernel language.
    pub fn name(self) -> &'static str {
        match self {
            Operator::First => "diff",
            Operator::Second => "diff2",
            Operator::Laplace => "laplace",
        }
    }

    /// Whether its second argument is an index variable naming the dimension.
    pub fn takes_dimension(self) -> bool {
        self != Operator::Laplace
    }

    /// Position of the spacing argument (the order follows it, optionally).
    pub fn spacing_position(self) -> usize {
        if self.takes_dimension() { 2 } else { 1 }
    }

    /// How it is called, for messages.
    pub fn usage(self) -> &'static str {
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
    pub fn weights(self, order: u32) -> Vec<f64> {
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

/// Whether `name` is a function the kernel language provides.
pub(crate) fn is_built_in(name: &str) -> bool {
    UnaryOp::from_function_name(name).is_some()
        || BinaryOp::from_function_name(name).is_some()
        || name == "select"
        || name == STEP
        || Operator::from_name(name).is_some()
}

/// `step()`: the number of the step being computed (see the language reference).
pub(crate) const STEP: &str = "step";

/// How many arguments built-in `name` takes (inclusive range), if it is one.
pub(crate) fn built_in_arity(name: &str) -> Option<(usize, usize)> {
    if UnaryOp::from_function_name(name).is_some() {
        Some((1, 1))
    } else if BinaryOp::from_function_name(name).is_some() {
        Some((2, 2))
    } else if name == "select" {
        Some((3, 3))
    } else if name == STEP {
        Some((0, 0))
    } else {
        Operator::from_name(name).map(|op| {
            let n = op.spacing_position() + 1;
            (n, n + 1)
        })
    }
}

/// The order argument of a finite-difference operator: `Ok(order)` or the message.
pub(crate) fn order_of(op: Operator, arg: Option<&Expr>) -> Result<u32, String> {
    let Some(arg) = arg else { return Ok(2) };
    let name = op.name();
    match arg.kind {
        ExprKind::Number(v) if ORDERS.iter().any(|&o| f64::from(o) == v) => Ok(v as u32),
        ExprKind::Number(v) => Err(format!(
            "the order of `{name}` is 2, 4, 6 or 8 (radius 1 to 4), found {v}"
        )),
        _ => Err(format!(
            "the order of `{name}` is an integer literal: 2, 4, 6 or 8"
        )),
    }
}

/// The message for a call of `name`, which is neither a built-in function nor one of
/// `helpers`: the nearest known name, if one is close, and every name the language has.
pub(crate) fn unknown_function(name: &str, helpers: &[&str], origin: Origin) -> String {
    let mut known = built_in_names();
    known.extend(helpers);
    let suggestion = nearest(name, &known)
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    format!(
        "unknown function `{name}`{suggestion}: the kernel language has {}, and the helpers defined in {}",
        function_list(),
        origin.block()
    )
}

/// The name in `known` nearest to `name` by edit distance, if it is close: within a third of
/// `name`'s length (at least 1), or the same but for case.
fn nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    if let Some(same) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(same);
    }
    let length = name.chars().count();
    let limit = length.max(3) / 3;
    known
        .iter()
        // A length further off than the limit is further off in distance too.
        .filter(|k| k.chars().count().abs_diff(length) <= limit)
        .map(|k| (edit_distance(name, k), *k))
        .filter(|&(distance, _)| distance <= limit)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, k)| k)
}

/// Edit distance between `a` and `b`, in characters: insertions, deletions, substitutions
/// and transpositions of neighbours (`lpa` is one from `lap`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitute = rows[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitute.min(rows[i - 1][j] + 1).min(rows[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// The built-in functions' names, in the order [`function_list`] gives them.
fn built_in_names() -> Vec<&'static str> {
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
    names.extend(["select", STEP, "diff", "diff2", "laplace"]);
    names
}

/// `abs, sqrt, ..., min, max, pow, select, step, diff, diff2 and laplace`.
pub fn function_list() -> String {
    let names = built_in_names();
    match names.split_last() {
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}
