//! [`to_macro_source`]: any verified kernel as a `stencil!` invocation.
//!
//! The text uses the kernel language of `stencil!` (docs/guide.md, "Kernels"): fields typed `&GridN<T>` /
//! `&mut GridN<T>` (inputs and outputs in declaration order), then scalar parameters typed
//! `T`; statements `let name = expr;` and `out[i, j, k] = expr;`; reads `u[i-1, j+2, k]`;
//! calls `sqrt(x)`, `min(a, b)`, `pow(a, b)`, ...; `if c { a } else { b }`; comparisons,
//! `&&`, `||`, `!`; infix operators printed with the fewest parentheses that keep the IR's
//! tree (so `a - (b - c)` and `(a + b) + c` stay as built; no reassociation).
//!
//! To print *any* verified kernel:
//! - names that are not plain ASCII identifiers, or that are Rust keywords, kernel-language
//!   function names, or already taken, are adjusted (`_2` suffixes, `_` for bad characters);
//!   `let`s sharing a name get distinct names, since the IR refers to them by id;
//! - a real-valued node used more than once (other than a leaf) becomes a `let eN = ...;` just
//!   before the first statement that needs it, so the text stays linear in the IR's size even
//!   for deeply shared DAGs (boolean nodes cannot be `let`-bound and are repeated instead);
//! - a kernel with fused multiply-add gets `#[fma]`, and each fused node prints as
//!   `a * b + c`, which the language contracts back into the same node (a kernel the builder
//!   finished has no addition of a product left unfused, so nothing else contracts);
//! - constants print with `{:?}` of `f64`, which parses back to the same bits; infinities
//!   print as `(1.0 / 0.0)` / `(-1.0 / 0.0)` and NaN as `(0.0 / 0.0)` (same values, one more
//!   node each).

use std::collections::HashSet;
use std::fmt::Write;

use crate::ir::{BinaryOp, Expr, ExprId, FieldId, Kernel, LetId, LogicOp, Role, Stmt, UnaryOp};

/// `kernel` as a `stencil! { pub fn ... }` invocation (see the module documentation).
///
/// # Panics
/// If `kernel` fails [`verify`](crate::verify::verify) (the printer relies on its invariants).
pub fn to_macro_source(kernel: &Kernel) -> String {
    if let Err(e) = crate::verify(kernel) {
        panic!("to_macro_source: the kernel is invalid: {e}\n{kernel}");
    }
    Printer::new(kernel).print()
}

/// Binding strength of a printed expression: an operand is parenthesized when it binds less
/// tightly than its position requires.
const SELECT: u8 = 0;
const OR: u8 = 1;
const AND: u8 = 2;
const COMPARE: u8 = 3;
const SUM: u8 = 4;
const PRODUCT: u8 = 5;
const PREFIX: u8 = 6;
const ATOM: u8 = 7;

const KEYWORDS: [&str; 52] = [
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

const FUNCTIONS: [&str; 13] = [
    "abs", "sqrt", "exp", "ln", "sin", "cos", "tan", "tanh", "floor", "ceil", "min", "max", "pow",
];

/// Chooses unique, valid identifiers.
#[derive(Default)]
struct NameTable {
    taken: HashSet<String>,
}

impl NameTable {
    /// A fresh identifier as close to `wanted` as possible.
    fn claim(&mut self, wanted: &str) -> String {
        let mut base: String = wanted
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, '_');
        }
        if base == "_" {
            base.push('v');
        }
        let reserved = |s: &str| KEYWORDS.contains(&s) || FUNCTIONS.contains(&s);
        let mut name = base.clone();
        let mut n = 2;
        while reserved(&name) || self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

struct Printer<'k> {
    kernel: &'k Kernel,
    index_names: Vec<String>,
    field_names: Vec<String>,
    param_names: Vec<String>,
    reduction_names: Vec<String>,
    let_names: Vec<String>,
    /// Per expression: the temporary it is printed through, if hoisted.
    hoisted: Vec<Option<String>>,
    /// Per expression: whether its hoisted `let` has been printed.
    emitted: Vec<bool>,
}

impl<'k> Printer<'k> {
    fn new(kernel: &'k Kernel) -> Self {
        let mut names = NameTable::default();
        let index_names: Vec<String> = kernel.index_names.iter().map(|n| names.claim(n)).collect();
        let field_names = kernel.fields.iter().map(|f| names.claim(&f.name)).collect();
        let param_names = kernel.params.iter().map(|p| names.claim(&p.name)).collect();
        let reduction_names = kernel
            .reductions
            .iter()
            .map(|r| names.claim(&r.name))
            .collect();
        let let_names = kernel.lets.iter().map(|l| names.claim(&l.name)).collect();
        // Uses of each node by the statements and by nodes those reach (a `let` reference is a
        // leaf here: it prints as the let's name).
        let mut uses = vec![0usize; kernel.exprs.len()];
        let mut reached = vec![false; kernel.exprs.len()];
        let mut stack = Vec::new();
        for stmt in &kernel.body {
            let value = stmt.value();
            uses[value.index()] += 1;
            stack.push(value);
        }
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut reached[id.index()], true) {
                continue;
            }
            for operand in kernel.expr(id).operands() {
                uses[operand.index()] += 1;
                stack.push(operand);
            }
        }
        let hoisted = kernel
            .exprs
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let leaf = matches!(
                    e,
                    Expr::Const(_)
                        | Expr::Param(_)
                        | Expr::Read { .. }
                        | Expr::Let(_)
                        | Expr::Index(_)
                        | Expr::Step
                );
                (uses[i] > 1 && !leaf && !e.is_boolean()).then(|| names.claim(&format!("e{i}")))
            })
            .collect();
        Printer {
            kernel,
            index_names,
            field_names,
            param_names,
            reduction_names,
            let_names,
            hoisted,
            emitted: vec![false; kernel.exprs.len()],
        }
    }

    fn print(mut self) -> String {
        let k = self.kernel;
        let elem = k.elem().rust_name();
        let grid = format!("Grid{}<{elem}>", k.n_dims);
        let mut args: Vec<String> = k
            .fields
            .iter()
            .zip(&self.field_names)
            .map(|(f, name)| match f.role {
                Role::Input => format!("{name}: &{grid}"),
                Role::Output => format!("{name}: &mut {grid}"),
            })
            .collect();
        args.extend(self.param_names.iter().map(|p| format!("{p}: {elem}")));
        args.extend(
            self.reduction_names
                .iter()
                .zip(&k.reductions)
                .map(|(name, r)| format!("{name}: &mut {}<{elem}>", r.op.type_name())),
        );
        let fn_name = NameTable::default().claim(&k.name);
        let mut out = String::new();
        out.push_str("stencil! {\n");
        if k.fma {
            out.push_str("    #[fma]\n");
        }
        let _ = writeln!(out, "    pub fn {fn_name}({}) {{", args.join(", "));
        for stmt in &k.body {
            let value = stmt.value();
            self.emit_hoisted(value, &mut out);
            let rhs = self.render(value, SELECT);
            match *stmt {
                Stmt::Let { var, .. } => {
                    let _ = writeln!(out, "        let {} = {rhs};", self.let_name(var));
                }
                Stmt::Store { field, .. } => {
                    let _ = writeln!(out, "        {} = {rhs};", self.at_centre(field));
                }
                Stmt::Reduce { reduction, .. } => {
                    let mut r = k.reductions[reduction.index()].clone();
                    r.name = self.reduction_names[reduction.index()].clone();
                    let _ = writeln!(
                        out,
                        "        {}",
                        crate::printer::reduce_statement(&r, &rhs)
                    );
                }
            }
        }
        out.push_str("    }\n}\n");
        out
    }

    fn let_name(&self, var: LetId) -> &str {
        &self.let_names[var.index()]
    }

    fn at_centre(&self, field: FieldId) -> String {
        format!(
            "{}[{}]",
            self.field_names[field.index()],
            self.index_names.join(", ")
        )
    }

    /// Prints, in dependency order, the `let`s of hoisted nodes `root` needs that are not
    /// printed yet (`root` included when hoisted: a statement then names it).
    fn emit_hoisted(&mut self, root: ExprId, out: &mut String) {
        let mut stack = vec![(root, false)];
        let mut visited = HashSet::new();
        while let Some((id, expanded)) = stack.pop() {
            if self.emitted[id.index()] {
                continue;
            }
            if expanded {
                if let Some(name) = self.hoisted[id.index()].clone() {
                    let rhs = self.render_inline(id);
                    let _ = writeln!(out, "        let {name} = {rhs};");
                    self.emitted[id.index()] = true;
                }
            } else if visited.insert(id) {
                stack.push((id, true));
                stack.extend(self.kernel.expr(id).operands().map(|o| (o, false)));
            }
        }
    }

    /// `id` as an operand that must bind at least as tightly as `min`.
    fn render(&self, id: ExprId, min: u8) -> String {
        if self.emitted[id.index()] {
            return self.hoisted[id.index()]
                .clone()
                .expect("emitted nodes are hoisted");
        }
        let (text, strength) = self.render_node(id);
        if strength < min {
            format!("({text})")
        } else {
            text
        }
    }

    /// `id` itself, even when hoisted (the right-hand side of its own `let`).
    fn render_inline(&self, id: ExprId) -> String {
        self.render_node(id).0
    }

    fn render_node(&self, id: ExprId) -> (String, u8) {
        match *self.kernel.expr(id) {
            Expr::Const(c) => constant(c),
            Expr::Param(p) => (self.param_names[p.index()].clone(), ATOM),
            Expr::Read { field, offset } => {
                let entries: Vec<String> = self
                    .index_names
                    .iter()
                    .enumerate()
                    .map(|(d, name)| match offset.get(d) {
                        0 => name.clone(),
                        o if o > 0 => format!("{name}+{o}"),
                        o => format!("{name}{o}"),
                    })
                    .collect();
                let name = &self.field_names[field.index()];
                (format!("{name}[{}]", entries.join(", ")), ATOM)
            }
            Expr::Let(var) => (self.let_name(var).to_string(), ATOM),
            Expr::Index(dim) => (self.index_names[dim].clone(), ATOM),
            Expr::Step => ("step()".to_string(), ATOM),
            Expr::Unary {
                op: UnaryOp::Neg,
                arg,
            } => (format!("-{}", self.render(arg, ATOM)), PREFIX),
            Expr::Unary { op, arg } => {
                (format!("{}({})", op.name(), self.render(arg, SELECT)), ATOM)
            }
            Expr::Binary { op, lhs, rhs } => match op {
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => {
                    let (symbol, strength) = match op {
                        BinaryOp::Add => ("+", SUM),
                        BinaryOp::Sub => ("-", SUM),
                        BinaryOp::Mul => ("*", PRODUCT),
                        _ => ("/", PRODUCT),
                    };
                    self.infix(lhs, symbol, rhs, strength, strength + 1)
                }
                BinaryOp::Min | BinaryOp::Max | BinaryOp::Pow => (
                    format!(
                        "{}({}, {})",
                        op.name(),
                        self.render(lhs, SELECT),
                        self.render(rhs, SELECT)
                    ),
                    ATOM,
                ),
            },
            Expr::Compare { op, lhs, rhs } => {
                let symbol = op.symbol();
                // Comparisons do not chain: both sides bind tighter.
                let (text, _) = self.infix(lhs, symbol, rhs, COMPARE + 1, COMPARE + 1);
                (text, COMPARE)
            }
            Expr::Logic { op, lhs, rhs } => {
                let (symbol, strength) = match op {
                    LogicOp::And => ("&&", AND),
                    LogicOp::Or => ("||", OR),
                };
                self.infix(lhs, symbol, rhs, strength, strength + 1)
            }
            Expr::Not(arg) => (format!("!{}", self.render(arg, ATOM)), PREFIX),
            // `a * b + c` in an `#[fma]` kernel contracts to this node again (the rule of
            // `passes::contract`): the product is an operand node of the addition.
            Expr::Fma { a, b, c } => {
                let (product, _) = self.infix(a, "*", b, PRODUCT, PRODUCT + 1);
                (format!("{product} + {}", self.render(c, SUM + 1)), SUM)
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => (
                format!(
                    "if {} {{ {} }} else {{ {} }}",
                    self.render(cond, OR),
                    self.render(then, SELECT),
                    self.render(otherwise, SELECT)
                ),
                SELECT,
            ),
        }
    }

    /// `lhs symbol rhs`, the left side binding at least `left`, the right at least `right`.
    fn infix(&self, lhs: ExprId, symbol: &str, rhs: ExprId, left: u8, right: u8) -> (String, u8) {
        let text = format!(
            "{} {symbol} {}",
            self.render(lhs, left),
            self.render(rhs, right)
        );
        (text, left.min(right))
    }
}

/// A constant as a literal that parses back to the same `f64` (or an expression of the same
/// value for NaN and infinities).
fn constant(c: f64) -> (String, u8) {
    if c.is_nan() {
        ("(0.0 / 0.0)".to_string(), ATOM)
    } else if c.is_infinite() {
        let sign = if c < 0.0 { "-" } else { "" };
        (format!("({sign}1.0 / 0.0)"), ATOM)
    } else if c.is_sign_negative() {
        (format!("{c:?}"), PREFIX)
    } else {
        (format!("{c:?}"), ATOM)
    }
}

#[cfg(test)]
mod tests {
    //! The printed text of the 7-point heat kernel. Whether printed text parses back to the
    //! same kernel is checked through the language's own parser, in stencil-lang's
    //! `tests/round_trip.rs` (this crate cannot depend on the parser).

    use expect_test::expect;

    use super::*;
    use crate::element::ElemType;
    use crate::interp::testing::seven_point;

    #[test]
    fn heat_snapshot() {
        expect![[r#"
            stencil! {
                pub fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c0: f64, c1: f64) {
                    out[i, j, k] = c0 * u[i, j, k] + c1 * (u[i-1, j, k] + u[i+1, j, k] + u[i, j-1, k] + u[i, j+1, k] + u[i, j, k-1] + u[i, j, k+1]);
                }
            }
        "#]]
        .assert_eq(&to_macro_source(&seven_point(ElemType::F64)));
    }
}
