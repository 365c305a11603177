//! Parsing: the macro input as a list of `fn` items (kernels and helpers), with `syn`.
//!
//! A *helper* is an `fn` whose parameters are bare names without types (`fn lap(u) { .. }`);
//! it is told apart from a kernel by looking at its parameter list before `syn` parses the
//! signature (a typeless parameter is not a valid Rust signature).
//!
//! The kernel language is Rust syntax except for multi-index accesses `u[i, j - 1]`, which
//! `syn` cannot parse as an index expression. [`tuple_indices`] rewrites the bracket group of
//! every `name[a, b, ...]` into `name[(a, b, ...)]` (the new parenthesis carries the bracket's
//! span), after which every body parses as a Rust block. Signatures are parsed apart from
//! bodies, so a syntax error in a body still leaves a signature to build the fallback stub from.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};

/// One `fn` item of the input.
pub struct KernelItem {
    /// Outer attributes, doc comments included.
    pub attrs: Vec<syn::Attribute>,
    /// Visibility.
    pub vis: syn::Visibility,
    /// The signature.
    pub sig: syn::Signature,
    /// The body's statements, or why they do not parse.
    pub body: syn::Result<Vec<syn::Stmt>>,
    /// Span of the body's braces.
    pub body_span: Span,
}

/// One helper `fn` of the input: `fn name(a, b) { let t = ..; value }`.
pub struct HelperItem {
    /// Outer attributes (doc comments are allowed, others are reported later).
    pub attrs: Vec<syn::Attribute>,
    /// Visibility as written (a helper has none; reported later).
    pub vis: syn::Visibility,
    /// The helper's name.
    pub name: proc_macro2::Ident,
    /// The parameter names, in order.
    pub params: Vec<proc_macro2::Ident>,
    /// The body's statements, or why they do not parse.
    pub body: syn::Result<Vec<syn::Stmt>>,
    /// Span of the body's braces.
    pub body_span: Span,
}

/// One item of the input.
pub enum Item {
    /// A kernel: an `fn` with typed parameters.
    Kernel(Box<KernelItem>),
    /// A helper: an `fn` whose parameters are bare names.
    Helper(HelperItem),
}

/// Parses the whole macro input: one or more `fn` items.
pub fn parse_items(input: TokenStream) -> syn::Result<Vec<Item>> {
    parse_all.parse2(input)
}

/// Parses the whole macro input, which must hold kernels only (for tests of later stages).
#[cfg(test)]
pub fn parse_kernels(input: TokenStream) -> syn::Result<Vec<KernelItem>> {
    Ok(parse_items(input)?
        .into_iter()
        .filter_map(|item| match item {
            Item::Kernel(kernel) => Some(*kernel),
            Item::Helper(_) => None,
        })
        .collect())
}

fn parse_all(input: ParseStream<'_>) -> syn::Result<Vec<Item>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(parse_item(input)?);
    }
    if items.is_empty() {
        return Err(input.error("expected a kernel: `fn name(...) { ... }`"));
    }
    Ok(items)
}

fn parse_item(input: ParseStream<'_>) -> syn::Result<Item> {
    let attrs = input.call(syn::Attribute::parse_outer)?;
    let vis: syn::Visibility = input.parse()?;
    if let Some(params) = helper_params(input) {
        input.parse::<syn::Token![fn]>()?;
        let name: proc_macro2::Ident = input.parse()?;
        input.parse::<TokenTree>()?;
        let (body, body_span) = parse_body(input)?;
        return Ok(Item::Helper(HelperItem {
            attrs,
            vis,
            name,
            params,
            body,
            body_span,
        }));
    }
    let sig: syn::Signature = input.parse()?;
    let (body, body_span) = parse_body(input)?;
    Ok(Item::Kernel(Box::new(KernelItem {
        attrs,
        vis,
        sig,
        body,
        body_span,
    })))
}

/// The body `{ ... }` after a signature: its statements (or their syntax error) and its span.
fn parse_body(input: ParseStream<'_>) -> syn::Result<(syn::Result<Vec<syn::Stmt>>, Span)> {
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
    Ok((statements, body.span()))
}

/// The parameter names when the input continues with `fn name(a, b, ...)` where every
/// parameter is a bare name (a helper); `None` for anything else, which parses as a kernel.
fn helper_params(input: ParseStream<'_>) -> Option<Vec<proc_macro2::Ident>> {
    let fork = input.fork();
    fork.parse::<syn::Token![fn]>().ok()?;
    fork.parse::<proc_macro2::Ident>().ok()?;
    let TokenTree::Group(group) = fork.parse::<TokenTree>().ok()? else {
        return None;
    };
    if group.delimiter() != Delimiter::Parenthesis || group.stream().is_empty() {
        return None;
    }
    let mut params = Vec::new();
    let mut expect_name = true;
    for tree in group.stream() {
        match (tree, expect_name) {
            (TokenTree::Ident(name), true) => {
                params.push(name);
                expect_name = false;
            }
            (TokenTree::Punct(p), false) if p.as_char() == ',' => expect_name = true,
            _ => return None,
        }
    }
    Some(params)
}

/// Rewrites `name[a, b]` to `name[(a, b)]` and `name[]` to `name[()]`, at every depth.
///
/// Only bracket groups that directly follow an identifier are touched, so attributes
/// (`#[...]`) and array syntax elsewhere stay as written (and are rejected later, with spans).
pub fn tuple_indices(stream: TokenStream) -> TokenStream {
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
    fn an_fn_with_bare_parameter_names_is_a_helper() {
        let input = quote! {
            fn lap(u, h) { (u[i - 1] + u[i + 1] - 2.0 * u[i]) / (h * h) }
            fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = lap(u, 1.0); }
            fn m() {}
        };
        let items = parse_items(input).unwrap();
        let Item::Helper(helper) = &items[0] else {
            panic!("`lap` is a helper")
        };
        assert_eq!(helper.name, "lap");
        let names: Vec<String> = helper.params.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["u", "h"]);
        assert_eq!(helper.body.as_ref().unwrap().len(), 1);
        assert!(matches!(items[1], Item::Kernel(_)));
        // No parameters: a kernel (whose verifier reports what it lacks).
        assert!(matches!(items[2], Item::Kernel(_)));
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
