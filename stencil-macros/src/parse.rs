//! Parsing: the macro input as a list of `fn` items, with `syn`.
//!
//! The kernel language is Rust syntax except for multi-index accesses `u[i, j - 1]`, which
//! `syn` cannot parse as an index expression. [`tuple_indices`] rewrites the bracket group of
//! every `name[a, b, ...]` into `name[(a, b, ...)]` (the new parenthesis carries the bracket's
//! span), after which every body parses as a Rust block. Signatures are parsed apart from
//! bodies, so a syntax error in a body still leaves a signature to build the fallback stub from.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};

/// One `fn` item of the input.
pub(crate) struct KernelItem {
    /// Outer attributes, doc comments included.
    pub(crate) attrs: Vec<syn::Attribute>,
    /// Visibility.
    pub(crate) vis: syn::Visibility,
    /// The signature.
    pub(crate) sig: syn::Signature,
    /// The body's statements, or why they do not parse.
    pub(crate) body: syn::Result<Vec<syn::Stmt>>,
    /// Span of the body's braces.
    pub(crate) body_span: Span,
}

/// Parses the whole macro input: one or more `fn` items.
pub(crate) fn parse_kernels(input: TokenStream) -> syn::Result<Vec<KernelItem>> {
    parse_items.parse2(input)
}

fn parse_items(input: ParseStream<'_>) -> syn::Result<Vec<KernelItem>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(parse_item(input)?);
    }
    if items.is_empty() {
        return Err(input.error("expected a kernel: `fn name(...) { ... }`"));
    }
    Ok(items)
}

fn parse_item(input: ParseStream<'_>) -> syn::Result<KernelItem> {
    let attrs = input.call(syn::Attribute::parse_outer)?;
    let vis: syn::Visibility = input.parse()?;
    let sig: syn::Signature = input.parse()?;
    if input.is_empty() {
        return Err(input.error("expected the kernel body `{ ... }`"));
    }
    let body = match input.parse::<TokenTree>()? {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => group,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "expected the kernel body `{ ... }`",
            ));
        }
    };
    let statements = syn::Block::parse_within.parse2(tuple_indices(body.stream()));
    Ok(KernelItem {
        attrs,
        vis,
        sig,
        body: statements,
        body_span: body.span(),
    })
}

/// Rewrites `name[a, b]` to `name[(a, b)]` and `name[]` to `name[()]`, at every depth.
///
/// Only bracket groups that directly follow an identifier are touched, so attributes
/// (`#[...]`) and array syntax elsewhere stay as written (and are rejected later, with spans).
pub(crate) fn tuple_indices(stream: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut after_ident = false;
    for tree in stream {
        let next_after_ident = matches!(tree, TokenTree::Ident(_));
        let tree = match tree {
            TokenTree::Group(group) => {
                let inner = tuple_indices(group.stream());
                let is_multi_index = group.delimiter() == Delimiter::Bracket
                    && after_ident
                    && (inner.is_empty() || has_top_level_comma(&inner));
                let inner = if is_multi_index {
                    let mut tuple = Group::new(Delimiter::Parenthesis, inner);
                    tuple.set_span(group.span());
                    TokenStream::from(TokenTree::Group(tuple))
                } else {
                    inner
                };
                let mut rebuilt = Group::new(group.delimiter(), inner);
                rebuilt.set_span(group.span());
                TokenTree::Group(rebuilt)
            }
            other => other,
        };
        after_ident = next_after_ident;
        out.push(tree);
    }
    out.into_iter().collect()
}

fn has_top_level_comma(stream: &TokenStream) -> bool {
    stream
        .clone()
        .into_iter()
        .any(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn rewritten(source: &str) -> String {
        tuple_indices(source.parse().unwrap()).to_string()
    }

    #[test]
    fn multi_indices_become_tuples_at_every_depth() {
        assert_eq!(
            rewritten("u[i-1, j] + (v[i, j+1])"),
            quote!(u[(i - 1, j)] + (v[(i, j + 1)])).to_string()
        );
        assert_eq!(rewritten("u[]"), quote!(u[()]).to_string());
        assert_eq!(rewritten("u[i]"), quote!(u[i]).to_string());
    }

    #[test]
    fn attributes_and_arrays_are_left_alone() {
        assert_eq!(
            rewritten("#[a(b, c)] x"),
            quote!(
                #[a(b, c)]
                x
            )
            .to_string()
        );
        assert_eq!(rewritten("= [1, 2]"), quote!(= [1, 2]).to_string());
    }

    #[test]
    fn parses_several_kernels_with_attributes() {
        let input = quote! {
            /// Docs.
            pub fn a(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }
            #[allow(dead_code)]
            fn b(u: &Grid2<f32>, out: &mut Grid2<f32>) { out[i, j] = u[i, j - 1]; }
        };
        let items = parse_kernels(input).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].sig.ident, "a");
        assert_eq!(items[0].attrs.len(), 1);
        assert!(matches!(items[0].vis, syn::Visibility::Public(_)));
        assert_eq!(items[1].sig.ident, "b");
        assert_eq!(items[1].body.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn a_body_syntax_error_keeps_the_signature() {
        let input = quote! { fn a(out: &mut Grid1<f64>) { out[i] = ; } };
        let items = parse_kernels(input).unwrap();
        assert_eq!(items[0].sig.inputs.len(), 1);
        assert!(items[0].body.is_err());
    }

    #[test]
    fn missing_body_and_empty_input_are_errors() {
        let error = parse_kernels(quote! { fn a(out: &mut Grid1<f64>); })
            .err()
            .unwrap();
        assert_eq!(error.to_string(), "expected the kernel body `{ ... }`");
        let error = parse_kernels(quote! {}).err().unwrap();
        assert!(error.to_string().contains("expected a kernel"), "{error}");
    }
}
