//! The front end of the kernel language, shared by the `stencil!` macro (at expansion time)
//! and `stencil::parse` (at run time, on source text), so both accept exactly one language.
//!
//! Stages, each a module on `proc_macro2` and unit-tested: [`parse`] (syn) -> [`model`] (the
//! kernel as written, with spans) -> [`validate`] (names, indices, helpers; every diagnostic
//! collected) -> [`lower`] (core IR through `KernelBuilder`, checked by core's verifier,
//! errors mapped back to spans). [`compile`] runs them all on text and reports each error
//! with its line and column. Code generation is not here: it belongs to the macro.

#![forbid(unsafe_code)]

pub mod checked;
pub mod diagnostic;
mod functions;
pub mod lower;
pub mod model;
mod origin;
pub mod parse;
#[cfg(test)]
mod testing;
pub mod text;
pub mod validate;

pub use text::SourceError;

use proc_macro2::{Span, TokenStream};
use stencil_core::Kernel;

use crate::diagnostic::Diagnostics;

/// The kernels of a block's items (written where `origin` says), in order, and its helpers,
/// modelled and checked once (their mistakes reported into `diagnostics`, whoever calls them).
pub fn kernels_and_helpers(
    items: Vec<parse::Item>,
    origin: validate::Origin,
    diagnostics: &mut Diagnostics,
) -> (Vec<parse::KernelItem>, validate::Helpers) {
    let mut kernels = Vec::new();
    let mut helpers = Vec::new();
    for item in items {
        match item {
            parse::Item::Kernel(kernel) => kernels.push(*kernel),
            parse::Item::Helper(helper) => {
                helpers.push(model::build_helper(helper, origin, diagnostics));
            }
        }
    }
    (
        kernels,
        validate::check_helpers(helpers, origin, diagnostics),
    )
}

/// Compiles kernel source text, as written inside `stencil! { ... }`, holding one kernel and
/// any helpers, to verified IR; or every mistake, in source order of discovery.
///
/// Runs on a thread of its own, so the source text proc-macro2 keeps per thread is freed when
/// it returns ([`text`]).
///
/// # Errors
/// Each mistake the macro would report as a compile error, with its line and column; also
/// text that holds no kernel or more than one, that does not split into tokens (an unclosed
/// delimiter, an unterminated literal: what is missing and where it opened), or that holds
/// more than [`text::MAX_TOKENS`] tokens.
pub fn compile(source: &str) -> Result<Kernel, Vec<SourceError>> {
    text::on_own_thread(|| compile_here(source))
}

/// [`compile`] on the calling thread.
fn compile_here(source: &str) -> Result<Kernel, Vec<SourceError>> {
    let tokens: TokenStream = text::lex(source).map_err(|e| vec![e])?;
    let items = parse::parse_items(tokens).map_err(|error| {
        error
            .into_iter()
            .map(|e| SourceError::at(e.span(), e.to_string()))
            .collect::<Vec<_>>()
    })?;
    let mut diagnostics = Diagnostics::default();
    let (kernels, helpers) = kernels_and_helpers(items, validate::Origin::Text, &mut diagnostics);
    if kernels.len() != 1 {
        let at = kernels
            .get(1)
            .map_or_else(Span::call_site, |k| k.sig.ident.span());
        diagnostics.error(
            diagnostic::SpanRange::single(at),
            format!(
                "expected exactly one kernel (an `fn` with typed parameters), found {}",
                kernels.len()
            ),
        );
    }
    let mut kernel = None;
    if let Some(item) = kernels.into_iter().next() {
        let model = model::build(item, &mut diagnostics);
        let checked = validate::check(&model, &helpers, &mut diagnostics);
        kernel = lower::lower(&checked, &mut diagnostics);
        if let (Some(lowered), Some(rotate)) = (&kernel, &model.rotate)
            && !rotate.chains.is_empty()
        {
            model::check_rotate(rotate, lowered, &mut diagnostics);
        }
    }
    match kernel {
        Some(kernel) if diagnostics.is_empty() => Ok(kernel),
        _ => {
            let mut errors: Vec<SourceError> = diagnostics
                .iter()
                .map(|d| SourceError::at(d.range.start, d.message.clone()))
                .collect();
            if errors.is_empty() {
                errors.push(SourceError::at(
                    Span::call_site(),
                    "this kernel is invalid".to_string(),
                ));
            }
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_compiles_to_the_ir_the_macro_builds() {
        let kernel = compile(
            "fn lap(u) { u[i - 1] - 2.0 * u[i] + u[i + 1] }\n\
             fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) { out[i] = c * lap(u); }",
        )
        .unwrap();
        assert_eq!(kernel.name, "k");
        assert_eq!(
            stencil_core::printer::print(&kernel),
            stencil_core::printer::print(&testing::lowered(
                "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>, c: f64) { out[i] = c * (u[i - 1] - 2.0 * u[i] + u[i + 1]); }"
            ))
        );
    }

    #[test]
    fn errors_carry_line_and_column() {
        let errors = compile(
            "fn k(u: &Grid2<f64>, out: &mut Grid2<f64>) {\n    out[i, j] = u[i, j] + v[i, j];\n}",
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [SourceError {
                line: 2,
                column: 27,
                message: "unknown grid `v`".to_string()
            }]
        );
        assert_eq!(errors[0].to_string(), "line 2, column 27: unknown grid `v`");
        // Lexing and parsing errors too.
        let errors = compile("fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) {\n  out[i] = u[i] +;\n}")
            .unwrap_err();
        assert_eq!(errors[0].line, 2, "{errors:?}");
        let errors = compile("fn k(u: &Grid1<f64>) { \"unterminated }").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn text_compiles_reductions() {
        let kernel = compile(
            "pub fn residual(x: &Grid3<f64>, b: &Grid3<f64>, r: &mut Grid3<f64>, rr: &mut Sum<f64>, h2: f64) {
                let res = b[i,j,k] - (6.0*x[i,j,k] - x[i-1,j,k] - x[i+1,j,k] - x[i,j-1,k] - x[i,j+1,k] - x[i,j,k-1] - x[i,j,k+1]) / h2;
                r[i,j,k] = res;
                rr += res * res;
            }",
        )
        .unwrap();
        assert_eq!(kernel.reductions.len(), 1);
        assert_eq!(kernel.reductions[0].op, stencil_core::ReduceOp::Sum);
        assert!(
            compile(
                "fn dot(x: &Grid1<f64>, y: &Grid1<f64>, s: &mut Sum<f64>) { s += x[i] * y[i]; }"
            )
            .is_ok()
        );
        assert!(compile("fn extremes(u: &Grid2<f32>, lo: &mut Min<f32>, hi: &mut Max<f32>) { lo = min(lo, u[i,j]); hi = max(hi, u[i,j]); }").is_ok());
    }

    #[test]
    fn text_holds_exactly_one_kernel() {
        let two = "fn a(u: &Grid1<f64>, o: &mut Grid1<f64>) { o[i] = u[i]; }\n\
                   fn b(u: &Grid1<f64>, o: &mut Grid1<f64>) { o[i] = u[i]; }";
        let errors = compile(two).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!((errors[0].line, errors[0].column), (2, 4));
        assert!(compile("fn h(u) { u[i] }").is_err());
    }
}

#[cfg(test)]
mod text_tests;
