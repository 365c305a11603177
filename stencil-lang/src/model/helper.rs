//! Helpers: user-defined expression functions of the kernel language, as written.
//!
//! A helper is `fn name(a, b, ...) { let t = ...; ...; value }`: bare parameter names, `let`s,
//! and a final expression (no `;`). It is not a Rust item: calls to it are inlined into each
//! kernel that makes them (see [`validate`](crate::validate)). Everything else a body can hold
//! (stores, loops, ...) is reported here with a message saying what to write instead.

use proc_macro2::Ident;

use super::body::{build_expr, build_let};
use super::types::{Expr, ExprKind, Stmt};
use crate::diagnostic::{Diagnostics, SpanRange};
use crate::origin::Origin;
use crate::parse::HelperItem;

const HELPER_BODY: &str =
    "a helper's body is `let`s followed by its value, as in `{ let a = u[i, j]; a * a }`";

/// One helper of the invocation.
pub struct Helper {
    /// Its name.
    pub name: Ident,
    /// Its parameter names, in order.
    pub params: Vec<Ident>,
    /// Its `let`s, in order.
    pub lets: Vec<(Ident, Expr)>,
    /// Its value (an invalid placeholder when the body has none).
    pub value: Expr,
}

/// Builds the model of one helper (written where `origin` says), reporting what a helper
/// cannot hold.
pub fn build(item: HelperItem, origin: Origin, diagnostics: &mut Diagnostics) -> Helper {
    for attr in &item.attrs {
        if !attr.path().is_ident("doc") {
            diagnostics.error_at(attr, "a helper takes no attributes (doc comments only)");
        }
    }
    if !matches!(item.vis, syn::Visibility::Inherited) {
        diagnostics.error_at(
            &item.vis,
            format!(
                "a helper is inlined into the kernels of {}: remove the visibility",
                origin.block()
            ),
        );
    }
    let mut lets = Vec::new();
    let mut value = None;
    match &item.body {
        Ok(statements) => {
            let last = statements.len().checked_sub(1);
            for (n, statement) in statements.iter().enumerate() {
                match statement {
                    syn::Stmt::Local(local) => {
                        if let Some(Stmt::Let { name, value }) = build_let(local, diagnostics) {
                            lets.push((name, value));
                        }
                    }
                    syn::Stmt::Expr(expr, None) if Some(n) == last => {
                        value = Some(build_expr(expr, diagnostics));
                    }
                    syn::Stmt::Expr(syn::Expr::Assign(assign), _) => diagnostics.error_at(
                        assign,
                        "a helper computes a value: only kernels write grids",
                    ),
                    syn::Stmt::Expr(expr, Some(semi)) if Some(n) == last => {
                        diagnostics.error_at(
                            semi,
                            "remove the `;`: a helper's value is its last expression",
                        );
                        value = Some(build_expr(expr, diagnostics));
                    }
                    other => diagnostics.error_at(other, HELPER_BODY),
                }
            }
        }
        Err(error) => diagnostics.syn_error(error),
    }
    let value = value.unwrap_or_else(|| {
        let range = SpanRange::single(item.body_span);
        if item
            .body
            .as_ref()
            .is_ok_and(|s| s.last().is_none_or(|l| matches!(l, syn::Stmt::Local(_))))
        {
            diagnostics.error(range, HELPER_BODY);
        }
        Expr {
            kind: ExprKind::Invalid,
            range,
        }
    });
    Helper {
        name: item.name,
        params: item.params,
        lets,
        value,
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Diagnostics;
    use crate::diagnostic::testing::summary;
    use crate::parse::{Item, parse_items};

    fn errors_of(source: &str) -> Vec<(String, String)> {
        let mut diagnostics = Diagnostics::default();
        for item in parse_items(source.parse().unwrap()).unwrap() {
            if let Item::Helper(helper) = item {
                super::build(helper, crate::origin::Origin::Macro, &mut diagnostics);
            }
        }
        summary(source, &diagnostics)
            .into_iter()
            .map(|(m, t)| (m, t.to_string()))
            .collect()
    }

    #[test]
    fn a_helper_is_lets_then_a_value() {
        assert_eq!(
            errors_of("/// Docs.\nfn f(u, c) { let a = u[i]; let b = a * c; b + 1.0 }"),
            []
        );
    }

    #[test]
    fn what_a_helper_cannot_hold_is_reported() {
        assert_eq!(
            errors_of("fn f(u) { u[i] = 1.0; u[i] }")[0].0,
            "a helper computes a value: only kernels write grids"
        );
        assert_eq!(
            errors_of("fn f(u) { u[i]; }"),
            [(
                "remove the `;`: a helper's value is its last expression".to_string(),
                ";".to_string()
            )]
        );
        assert_eq!(
            errors_of("fn f(u) { let a = u[i]; }")[0].0,
            super::HELPER_BODY
        );
        assert_eq!(errors_of("pub fn f(u) { u[i] }")[0].1, "pub");
        assert_eq!(errors_of("#[inline] fn f(u) { u[i] }")[0].1, "#[inline]");
    }
}
