//! Compile errors with spans, collected across every stage and emitted together.
//!
//! Owns [`SpanRange`] (a first-token..last-token range, since `Span::join` is unstable in
//! proc macros) and [`Diagnostics`] (an ordered list of messages). Stages push to a
//! `Diagnostics` and keep going; the expansion fails once, at the end, with all of them.
//! Assumes nothing about which stage produced a message.

use std::collections::HashSet;

use proc_macro2::{Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;

/// The source range of some syntax: from its first token to its last.
#[derive(Clone, Copy, Debug)]
pub struct SpanRange {
    /// Span of the first token.
    pub start: Span,
    /// Span of the last token.
    pub end: Span,
}

impl SpanRange {
    /// A range covering one span.
    pub fn single(span: Span) -> SpanRange {
        SpanRange {
            start: span,
            end: span,
        }
    }

    /// The range of `syntax`'s tokens (the call site if it has none).
    pub fn of(syntax: &(impl ToTokens + ?Sized)) -> SpanRange {
        let mut tokens = syntax.to_token_stream().into_iter();
        match tokens.next() {
            None => SpanRange::single(Span::call_site()),
            Some(first) => {
                let start = first.span();
                let end = tokens.last().map_or(start, |t| t.span());
                SpanRange { start, end }
            }
        }
    }

    /// From the start of `self` to the end of `other`.
    pub fn to(self, other: SpanRange) -> SpanRange {
        SpanRange {
            start: self.start,
            end: other.end,
        }
    }
}

/// One compile error.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Where the error points.
    pub range: SpanRange,
    /// What is wrong (short, lowercase first word).
    pub message: String,
}

impl Diagnostic {
    /// The error as a `compile_error!` invocation spanning its range.
    fn to_compile_error(&self) -> TokenStream {
        let mut start = Punct::new('<', Spacing::Alone);
        start.set_span(self.range.start);
        let mut end = Punct::new('>', Spacing::Alone);
        end.set_span(self.range.end);
        let spanned: TokenStream = [TokenTree::Punct(start), TokenTree::Punct(end)]
            .into_iter()
            .collect();
        syn::Error::new_spanned(spanned, &self.message).to_compile_error()
    }
}

/// Every error found so far, in the order found.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
    /// Each error's place and message, to drop repeats without comparing with every error.
    seen: HashSet<(String, String)>,
}

impl Diagnostics {
    /// Records an error at `range`, unless the same error is already recorded there (a
    /// helper inlined twice reports a mistake in its body once).
    pub fn error(&mut self, range: SpanRange, message: impl Into<String>) {
        let message = message.into();
        let place = format!("{:?} {:?}", range.start, range.end);
        if !self.seen.insert((place, message.clone())) {
            return;
        }
        self.list.push(Diagnostic { range, message });
    }

    /// Records an error at the tokens of `syntax`.
    pub fn error_at(&mut self, syntax: &(impl ToTokens + ?Sized), message: impl Into<String>) {
        self.error(SpanRange::of(syntax), message);
    }

    /// Records a `syn` parse error (keeping its span).
    pub fn syn_error(&mut self, error: &syn::Error) {
        for e in error.clone() {
            self.error(SpanRange::single(e.span()), e.to_string());
        }
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Number of errors recorded.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The errors, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter()
    }

    /// One `compile_error!` per error.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.list.iter().map(Diagnostic::to_compile_error).collect()
    }
}

#[cfg(test)]
pub mod testing {
    //! Helpers to check what source text a diagnostic points at (needs proc-macro2's
    //! `span-locations`, enabled for tests in Cargo.toml).

    use super::{Diagnostic, Diagnostics};

    /// Byte offset in `source` of a proc-macro2 line/column position.
    fn byte_offset(source: &str, line: usize, column: usize) -> usize {
        let line_start: usize = source
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum();
        let rest = &source[line_start..];
        line_start
            + rest
                .char_indices()
                .nth(column)
                .map_or(rest.len(), |(i, _)| i)
    }

    /// The text of `source` that `diagnostic` covers. `source` must be the exact string the
    /// tokens were parsed from.
    pub fn covered_text<'s>(source: &'s str, diagnostic: &Diagnostic) -> &'s str {
        let start = diagnostic.range.start.start();
        let end = diagnostic.range.end.end();
        &source[byte_offset(source, start.line, start.column)
            ..byte_offset(source, end.line, end.column)]
    }

    /// `(message, covered text)` of every diagnostic.
    pub fn summary<'s>(source: &'s str, diagnostics: &Diagnostics) -> Vec<(String, &'s str)> {
        diagnostics
            .iter()
            .map(|d| (d.message.clone(), covered_text(source, d)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::covered_text;
    use super::*;

    #[test]
    fn range_of_syntax_covers_first_to_last_token() {
        let source = "a + (b * c)";
        let expr: syn::Expr = syn::parse_str(source).unwrap();
        let mut diagnostics = Diagnostics::default();
        diagnostics.error_at(&expr, "whole");
        if let syn::Expr::Binary(b) = &expr {
            diagnostics.error_at(&b.right, "right");
        }
        let d: Vec<_> = diagnostics.iter().collect();
        assert_eq!(covered_text(source, d[0]), "a + (b * c)");
        assert_eq!(covered_text(source, d[1]), "(b * c)");
    }

    #[test]
    fn compile_errors_carry_every_message() {
        let mut diagnostics = Diagnostics::default();
        diagnostics.error(SpanRange::single(Span::call_site()), "first problem");
        diagnostics.error(SpanRange::single(Span::call_site()), "second problem");
        assert_eq!(diagnostics.len(), 2);
        let text = diagnostics.to_compile_errors().to_string();
        assert_eq!(text.matches("compile_error").count(), 2);
        assert!(text.contains("\"first problem\"") && text.contains("\"second problem\""));
    }
}
