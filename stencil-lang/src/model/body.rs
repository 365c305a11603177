//! The kernel's body: statements, expressions and indices, from `syn` syntax.
//!
//! Assumes [`tuple_indices`](crate::parse::tuple_indices) ran, so `u[i, j]` arrives as an
//! index expression whose index is a tuple. Everything outside the kernel language is
//! reported with a message saying what to write instead.

use proc_macro2::Ident;
use stencil_core::{BinaryOp, CmpOp, LogicOp};

use super::types::{BinaryOperator, Expr, ExprKind, Index, IndexKind, Stmt};
use crate::diagnostic::{Diagnostics, SpanRange};

const STATEMENT_FORMS: &str = "a kernel statement is `let name = value;`, `out[i, ...] = value;` \
     or a reduction's `s += value;` / `m = min(m, value);`";
const LOOPS: &str = "loops are not supported: the body already runs once per grid point";

/// The statements of a body; unsupported ones are reported and dropped. Every statement ends
/// with `;`, the last one too (a helper's value is the one expression without it): a store or
/// reduction without its `;` is reported, and kept.
pub(super) fn build_body(statements: &[syn::Stmt], diagnostics: &mut Diagnostics) -> Vec<Stmt> {
    statements
        .iter()
        .filter_map(|s| {
            let built = build_stmt(s, diagnostics);
            if let (Some(_), syn::Stmt::Expr(expr, None)) = (&built, s) {
                diagnostics.error_at(expr, "missing `;`: every kernel statement ends with `;`");
            }
            built
        })
        .collect()
}

fn build_stmt(statement: &syn::Stmt, diagnostics: &mut Diagnostics) -> Option<Stmt> {
    match statement {
        syn::Stmt::Local(local) => build_let(local, diagnostics),
        syn::Stmt::Expr(syn::Expr::Assign(assign), _) => build_store(assign, diagnostics),
        syn::Stmt::Expr(expr, _) => {
            match expr {
                syn::Expr::ForLoop(e) => diagnostics.error_at(&e.for_token, LOOPS),
                syn::Expr::While(e) => diagnostics.error_at(&e.while_token, LOOPS),
                syn::Expr::Loop(e) => diagnostics.error_at(&e.loop_token, LOOPS),
                syn::Expr::Binary(e)
                    if matches!(e.op, syn::BinOp::AddAssign(_))
                        && plain_name(&e.left).is_some() =>
                {
                    return plain_name(&e.left).map(|target| Stmt::AddAssign {
                        target,
                        op: SpanRange::of(&e.op),
                        whole: SpanRange::of(e),
                        value: build_expr(&e.right, diagnostics),
                    });
                }
                syn::Expr::Binary(e) if is_compound_assignment(&e.op) => diagnostics.error_at(
                    &e.op,
                    "compound assignment is not supported: write `out[i, ...] = value;`",
                ),
                _ => diagnostics.error_at(expr, STATEMENT_FORMS),
            }
            None
        }
        syn::Stmt::Item(item) => {
            diagnostics.error_at(item, "items cannot be declared inside a kernel");
            None
        }
        syn::Stmt::Macro(mac) => {
            diagnostics.error_at(mac, "macros cannot be used inside a kernel");
            None
        }
    }
}

fn is_compound_assignment(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

pub(super) fn build_let(local: &syn::Local, diagnostics: &mut Diagnostics) -> Option<Stmt> {
    // A `let` with a fixable mistake keeps its name (with an invalid value if need be), so
    // later uses of the name do not add "unknown name" errors to the real one.
    let name = match &local.pat {
        syn::Pat::Type(typed) => {
            diagnostics.error_at(
                &typed.ty,
                "remove the type: every value in a kernel has the kernel's element type",
            );
            let_name(&typed.pat, diagnostics)?
        }
        other => let_name(other, diagnostics)?,
    };
    let value = match &local.init {
        None => {
            diagnostics.error_at(local, "a `let` needs a value: write `let name = value;`");
            None
        }
        Some(init) => {
            if let Some((else_token, _)) = &init.diverge {
                diagnostics.error_at(else_token, "`let ... else` is not supported in a kernel");
            }
            Some(build_expr(&init.expr, diagnostics))
        }
    };
    let value = value.unwrap_or(Expr {
        kind: ExprKind::Invalid,
        range: SpanRange::of(local),
    });
    Some(Stmt::Let { name, value })
}

fn let_name(pat: &syn::Pat, diagnostics: &mut Diagnostics) -> Option<Ident> {
    match pat {
        syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
            if let Some(mutability) = &p.mutability {
                diagnostics.error_at(mutability, "remove `mut`: temporaries cannot be changed");
            }
            Some(p.ident.clone())
        }
        other => {
            diagnostics.error_at(
                other,
                "a `let` binds one plain name: write `let name = value;`",
            );
            None
        }
    }
}

fn build_store(assign: &syn::ExprAssign, diagnostics: &mut Diagnostics) -> Option<Stmt> {
    let value = build_expr(&assign.right, diagnostics);
    let lhs = SpanRange::of(&assign.left);
    match strip(&assign.left) {
        syn::Expr::Index(index) => {
            let target = plain_name(&index.expr);
            let Some(target) = target else {
                diagnostics.error_at(&index.expr, "expected the name of an output grid");
                return None;
            };
            Some(Stmt::Store {
                target,
                indices: build_indices(&index.index),
                bracket: SpanRange::of(&index.index),
                lhs,
                value,
            })
        }
        left => match plain_name(left) {
            // A `Min` or `Max` reduction's `m = min(m, value);`, or a mistake `validate` names.
            Some(target) => Some(Stmt::AssignName {
                target,
                whole: SpanRange::of(assign),
                value,
            }),
            None => {
                diagnostics.error(
                    lhs,
                    "only a grid point can be assigned, as in `out[i, j] = value;`",
                );
                None
            }
        },
    }
}

/// Removes parentheses and invisible groups.
fn strip(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// The identifier `expr` consists of, if it is a plain one.
fn plain_name(expr: &syn::Expr) -> Option<Ident> {
    match strip(expr) {
        syn::Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
            p.path.get_ident().cloned()
        }
        _ => None,
    }
}

fn build_indices(index: &syn::Expr) -> Vec<Index> {
    match strip(index) {
        syn::Expr::Tuple(tuple) => tuple.elems.iter().map(build_index).collect(),
        single => vec![build_index(single)],
    }
}

fn build_index(expr: &syn::Expr) -> Index {
    let range = SpanRange::of(expr);
    let kind = match strip(expr) {
        e if plain_name(e).is_some() => IndexKind::Var {
            var: plain_name(e).unwrap_or_else(|| unreachable!("checked by the guard")),
            offset: 0,
            half: false,
        },
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_) | syn::BinOp::Sub(_)) => {
            let var = plain_name(&b.left);
            let minus = matches!(b.op, syn::BinOp::Sub(_));
            match (&var, integer_literal(&b.right), odd_half(&b.right)) {
                (Some(var), Some(n), _) => IndexKind::Var {
                    var: var.clone(),
                    offset: if minus { n.saturating_neg() } else { n },
                    half: false,
                },
                // `var + n/2` is `var + (n - 1)/2 + 1/2`; `var - n/2` is
                // `var - (n + 1)/2 + 1/2`.
                (Some(var), None, Some(n)) => IndexKind::Var {
                    var: var.clone(),
                    offset: if minus {
                        (n.saturating_add(1) / 2).saturating_neg()
                    } else {
                        (n - 1) / 2
                    },
                    half: true,
                },
                (Some(_), None, None) => IndexKind::NonConstant {
                    var,
                    at: SpanRange::of(&b.right),
                },
                (None, _, _) => IndexKind::NonConstant {
                    var: None,
                    at: range,
                },
            }
        }
        _ => IndexKind::NonConstant {
            var: None,
            at: range,
        },
    };
    Index { kind, range }
}

/// `n` of `n/2` written with integer literals, `n` odd and positive: a half-cell displacement.
fn odd_half(expr: &syn::Expr) -> Option<i64> {
    match strip(expr) {
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Div(_)) => {
            match (integer_literal(&b.left), integer_literal(&b.right)) {
                (Some(n), Some(2)) if n > 0 && n % 2 == 1 => Some(n),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The value of an integer literal, optionally negated (saturating at the `i64` range, which
/// the verifier's radius check rejects anyway).
fn integer_literal(expr: &syn::Expr) -> Option<i64> {
    match strip(expr) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => Some(int.base10_parse::<i64>().unwrap_or(i64::MAX)),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => integer_literal(expr).map(i64::saturating_neg),
        _ => None,
    }
}

pub(super) fn build_expr(expr: &syn::Expr, diagnostics: &mut Diagnostics) -> Expr {
    let kind = build_expr_kind(expr, diagnostics);
    let range = range_of(expr, &kind);
    Expr { kind, range }
}

/// The range of `expr`, built as `kind`: from the ranges of its parts where it has them, so a
/// long chain (`a + b + c + ...`) costs no more than its length ([`SpanRange::of`] walks every
/// token of what it is given).
fn range_of(expr: &syn::Expr, kind: &ExprKind) -> SpanRange {
    match (expr, kind) {
        (syn::Expr::Binary(_), ExprKind::Binary { lhs, rhs, .. }) => lhs.range.to(rhs.range),
        (syn::Expr::Unary(unary), ExprKind::Neg(arg) | ExprKind::Not(arg)) => {
            SpanRange::of(&unary.op).to(arg.range)
        }
        (syn::Expr::Paren(paren), _) => SpanRange {
            start: paren.paren_token.span.open(),
            end: paren.paren_token.span.close(),
        },
        (syn::Expr::Call(call), ExprKind::Call { func, .. }) => {
            SpanRange::of(func).to(SpanRange::single(call.paren_token.span.close()))
        }
        (syn::Expr::If(e), ExprKind::If { otherwise, .. }) => {
            SpanRange::of(&e.if_token).to(otherwise.range)
        }
        _ => SpanRange::of(expr),
    }
}

fn boxed(expr: &syn::Expr, diagnostics: &mut Diagnostics) -> Box<Expr> {
    Box::new(build_expr(expr, diagnostics))
}

fn build_expr_kind(expr: &syn::Expr, diagnostics: &mut Diagnostics) -> ExprKind {
    let unsupported = |diagnostics: &mut Diagnostics, at: &dyn quote::ToTokens, message: &str| {
        diagnostics.error(SpanRange::of(&at), message);
        ExprKind::Invalid
    };
    match expr {
        syn::Expr::Paren(p) => build_expr_kind(&p.expr, diagnostics),
        syn::Expr::Group(g) => build_expr_kind(&g.expr, diagnostics),
        syn::Expr::Lit(lit) => number(&lit.lit, diagnostics),
        syn::Expr::Path(_) => match plain_name(expr) {
            Some(name) => ExprKind::Name(name),
            None => unsupported(
                diagnostics,
                expr,
                "paths are not supported: use a parameter or `let` name",
            ),
        },
        syn::Expr::Index(index) => match plain_name(&index.expr) {
            Some(base) => ExprKind::Access {
                base,
                indices: build_indices(&index.index),
                bracket: SpanRange::of(&index.index),
            },
            None => unsupported(
                diagnostics,
                &index.expr,
                "expected the name of an input grid",
            ),
        },
        syn::Expr::Unary(unary) => match unary.op {
            syn::UnOp::Neg(_) => ExprKind::Neg(boxed(&unary.expr, diagnostics)),
            syn::UnOp::Not(_) => ExprKind::Not(boxed(&unary.expr, diagnostics)),
            _ => unsupported(
                diagnostics,
                &unary.op,
                "unsupported operator: the kernel language has `-` and `!`",
            ),
        },
        syn::Expr::Binary(binary) => match binary_operator(&binary.op) {
            Some(op) => ExprKind::Binary {
                op,
                lhs: boxed(&binary.left, diagnostics),
                rhs: boxed(&binary.right, diagnostics),
            },
            None => unsupported(
                diagnostics,
                &binary.op,
                "unsupported operator: the kernel language has `+ - * /`, comparisons, `&&` and `||`",
            ),
        },
        syn::Expr::Call(call) => match plain_name(&call.func) {
            Some(func) => ExprKind::Call {
                func,
                args: call
                    .args
                    .iter()
                    .map(|a| build_expr(a, diagnostics))
                    .collect(),
            },
            None => unsupported(
                diagnostics,
                &call.func,
                "unknown function: call math functions by their plain name, as in `sqrt(x)`",
            ),
        },
        syn::Expr::If(e) => build_if(e, diagnostics),
        syn::Expr::MethodCall(call) => {
            diagnostics.error(
                SpanRange::of(&call.dot_token).to(SpanRange::single(call.paren_token.span.close())),
                method_call_hint(&call.method.to_string()),
            );
            ExprKind::Invalid
        }
        syn::Expr::ForLoop(e) => unsupported(diagnostics, &e.for_token, LOOPS),
        syn::Expr::While(e) => unsupported(diagnostics, &e.while_token, LOOPS),
        syn::Expr::Loop(e) => unsupported(diagnostics, &e.loop_token, LOOPS),
        syn::Expr::Match(e) => unsupported(
            diagnostics,
            &e.match_token,
            "`match` is not supported: use `if ... else ...`",
        ),
        syn::Expr::Block(_) | syn::Expr::Unsafe(_) => unsupported(
            diagnostics,
            expr,
            "block expressions are not supported: use parentheses or an `if ... else ...`",
        ),
        syn::Expr::Cast(e) => unsupported(
            diagnostics,
            &e.as_token,
            "casts are not supported: every value has the kernel's element type",
        ),
        syn::Expr::Macro(_) => {
            unsupported(diagnostics, expr, "macros cannot be used inside a kernel")
        }
        syn::Expr::Assign(_) => {
            unsupported(diagnostics, expr, "assignment is a statement, not a value")
        }
        syn::Expr::Field(e) => unsupported(
            diagnostics,
            &e.member,
            "field access is not supported in a kernel",
        ),
        _ => unsupported(diagnostics, expr, "unsupported expression in a kernel"),
    }
}

/// What to write instead of the method call `x.method(..)`: the kernel language's function
/// for it, when there is one.
fn method_call_hint(method: &str) -> String {
    let function = match method {
        "powi" | "powf" => Some("pow"),
        "abs" | "sqrt" | "exp" | "ln" | "sin" | "cos" | "tan" | "tanh" | "floor" | "ceil"
        | "min" | "max" => Some(method),
        _ => None,
    };
    match function {
        Some("pow") => {
            format!("method calls are not supported: write `pow(x, y)` for `x.{method}(y)`")
        }
        Some(binary @ ("min" | "max")) => {
            format!("method calls are not supported: write `{binary}(x, y)` for `x.{binary}(y)`")
        }
        Some(unary) => {
            format!("method calls are not supported: write `{unary}(x)` for `x.{unary}()`")
        }
        None => format!(
            "method calls are not supported, and the kernel language has no `{method}`: its functions are {}",
            crate::functions::function_list()
        ),
    }
}

fn number(lit: &syn::Lit, diagnostics: &mut Diagnostics) -> ExprKind {
    let value = match lit {
        syn::Lit::Float(f) if matches!(f.suffix(), "" | "f32" | "f64") => f.base10_parse::<f64>(),
        syn::Lit::Int(i) if matches!(i.suffix(), "" | "f32" | "f64") => i.base10_parse::<f64>(),
        syn::Lit::Int(_) | syn::Lit::Float(_) => {
            diagnostics.error_at(
                lit,
                "remove the suffix: constants have the kernel's element type",
            );
            return ExprKind::Invalid;
        }
        syn::Lit::Bool(_) => {
            diagnostics.error_at(
                lit,
                "boolean constants are not supported: write a comparison",
            );
            return ExprKind::Invalid;
        }
        _ => {
            diagnostics.error_at(lit, "only numeric constants are supported in a kernel");
            return ExprKind::Invalid;
        }
    };
    match value {
        Ok(v) if v.is_finite() => ExprKind::Number(v),
        _ => {
            diagnostics.error_at(lit, "this constant is out of range of `f64`");
            ExprKind::Invalid
        }
    }
}

fn binary_operator(op: &syn::BinOp) -> Option<BinaryOperator> {
    use BinaryOperator::{Arithmetic, Compare, Logic};
    Some(match op {
        syn::BinOp::Add(_) => Arithmetic(BinaryOp::Add),
        syn::BinOp::Sub(_) => Arithmetic(BinaryOp::Sub),
        syn::BinOp::Mul(_) => Arithmetic(BinaryOp::Mul),
        syn::BinOp::Div(_) => Arithmetic(BinaryOp::Div),
        syn::BinOp::Lt(_) => Compare(CmpOp::Lt),
        syn::BinOp::Le(_) => Compare(CmpOp::Le),
        syn::BinOp::Gt(_) => Compare(CmpOp::Gt),
        syn::BinOp::Ge(_) => Compare(CmpOp::Ge),
        syn::BinOp::Eq(_) => Compare(CmpOp::Eq),
        syn::BinOp::Ne(_) => Compare(CmpOp::Ne),
        syn::BinOp::And(_) => Logic(LogicOp::And),
        syn::BinOp::Or(_) => Logic(LogicOp::Or),
        _ => return None,
    })
}

fn build_if(e: &syn::ExprIf, diagnostics: &mut Diagnostics) -> ExprKind {
    let cond = boxed(&e.cond, diagnostics);
    let then = branch_value(&e.then_branch, diagnostics);
    let Some((_, else_branch)) = &e.else_branch else {
        diagnostics.error_at(
            &e.if_token,
            "`if` needs an `else` branch: the kernel computes a value at every point",
        );
        return ExprKind::Invalid;
    };
    let otherwise = match &**else_branch {
        syn::Expr::Block(block) if block.attrs.is_empty() && block.label.is_none() => {
            branch_value(&block.block, diagnostics)
        }
        other => build_expr(other, diagnostics),
    };
    ExprKind::If {
        cond,
        then: Box::new(then),
        otherwise: Box::new(otherwise),
    }
}

/// The value of an `if` branch, which must hold exactly one expression.
fn branch_value(block: &syn::Block, diagnostics: &mut Diagnostics) -> Expr {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(expr, None)] => build_expr(expr, diagnostics),
        _ => {
            let range = SpanRange::of(block);
            diagnostics.error(
                range,
                "a branch of `if` holds a single value, as in `{ a }`",
            );
            Expr {
                kind: ExprKind::Invalid,
                range,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::testing::summary;
    use crate::model::testing::model_of;

    fn errors_of(body: &str) -> Vec<(String, String)> {
        let source = format!("fn k(u: &Grid2<f64>, out: &mut Grid2<f64>) {{ {body} }}");
        let (_, diagnostics) = model_of(&source);
        summary(&source, &diagnostics)
            .into_iter()
            .map(|(m, t)| (m, t.to_string()))
            .collect()
    }

    fn one_error(body: &str) -> (String, String) {
        let mut errors = errors_of(body);
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors.remove(0)
    }

    #[test]
    fn the_kernel_language_builds_without_errors() {
        let body = "let a = -u[i - 1, j + 2] * 2.5 / (3 - c);
                    let b = if a < 1.0 && !(a >= 0.0) || a == a { sqrt(a) } else if a != 2 { a } else { max(a, 1e3) };
                    out[i, j] = select(a > b, a, b);";
        assert_eq!(errors_of(body), []);
    }

    #[test]
    fn statements_outside_the_language_point_at_their_keyword() {
        assert_eq!(one_error("for x in 0..3 { out[i, j] = 1.0; }").1, "for");
        assert_eq!(one_error("while true {}").1, "while");
        assert_eq!(
            one_error("out[i, j] += 1.0;"),
            (
                "compound assignment is not supported: write `out[i, ...] = value;`".into(),
                "+=".into()
            )
        );
        assert_eq!(one_error("u[i, j];").1, "u[i, j]");
        assert_eq!(
            one_error("fn f() {}").0,
            "items cannot be declared inside a kernel"
        );
        assert_eq!(one_error("println!(\"hi\");").1, "println!(\"hi\");");
        assert_eq!(one_error("x.y = 1.0;").1, "x.y");
        assert_eq!(one_error("s -= 1.0;").1, "-=");
    }

    #[test]
    fn reduction_statements_build_without_errors() {
        // Whether the names are reductions is `validate`'s concern.
        assert_eq!(errors_of("s += u[i, j]; m = min(m, u[i, j]); x = 1.0;"), []);
    }

    #[test]
    fn lets_must_bind_one_name_to_a_value() {
        assert_eq!(one_error("let (a, b) = (1.0, 2.0);").1, "(a, b)");
        assert_eq!(one_error("let a: f64 = 1.0;").1, "f64");
        assert_eq!(one_error("let a;").1, "let a;");
        assert_eq!(one_error("let mut a = 1.0;").1, "mut");
    }

    #[test]
    fn expressions_outside_the_language_are_reported_precisely() {
        assert_eq!(
            one_error("out[i, j] = u[i, j].sqrt();"),
            (
                "method calls are not supported: write `sqrt(x)` for `x.sqrt()`".into(),
                ".sqrt()".into()
            )
        );
        // The hint names a function that exists.
        assert_eq!(
            one_error("out[i, j] = u[i, j].powi(2);").0,
            "method calls are not supported: write `pow(x, y)` for `x.powi(y)`"
        );
        assert_eq!(
            one_error("out[i, j] = u[i, j].max(0.0);").0,
            "method calls are not supported: write `max(x, y)` for `x.max(y)`"
        );
        assert!(
            one_error("out[i, j] = u[i, j].sinh();")
                .0
                .starts_with("method calls are not supported, and the kernel language has no `sinh`: its functions are abs, sqrt,")
        );
        assert_eq!(one_error("out[i, j] = u[i, j] as f64;").1, "as");
        assert_eq!(one_error("out[i, j] = u[i, j] % 2.0;").1, "%");
        assert_eq!(one_error("out[i, j] = { 1.0 };").1, "{ 1.0 }");
        assert_eq!(
            one_error("out[i, j] = if true { 1.0 } else { 2.0 };").1,
            "true"
        );
        assert_eq!(one_error("out[i, j] = if c { 1.0 };").1, "if");
        assert_eq!(
            one_error("out[i, j] = if c { let z = 1.0; z } else { 2.0 };").1,
            "{ let z = 1.0; z }"
        );
        assert_eq!(one_error("out[i, j] = f64::sqrt(2.0);").1, "f64::sqrt");
        assert_eq!(one_error("out[i, j] = 2u8;").1, "2u8");
        assert_eq!(one_error("out[i, j] = 1e999;").1, "1e999");
        assert_eq!(one_error("out[i, j] = match c { _ => 1.0 };").1, "match");
        assert_eq!(one_error("out[i, j] = a.b;").1, "b");
        assert_eq!(one_error("out[i, j] = [1.0, 2.0];").1, "[1.0, 2.0]");
    }
}
