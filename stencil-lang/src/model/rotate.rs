//! The `#[rotate(..)]` attribute: how a kernel's grids rotate in a time loop.
//!
//! `#[rotate(out -> u)]`, `#[rotate(u_next -> u -> u_prev)]`, `#[rotate(un -> u, vn -> v)]`:
//! chains of grid names separated by commas, each an output followed by the inputs it becomes
//! (see `stencil::Steps`). The attribute is taken off the kernel's attributes here; whether
//! the names fit the kernel is core's [`Rotation::check`](stencil_core::Rotation::check),
//! run after lowering, its errors pointing at the names.

use proc_macro2::Ident;
use syn::Token;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;

use crate::diagnostic::{Diagnostics, SpanRange};

/// The chains of a `#[rotate(..)]` attribute, with the span of each name.
pub struct Rotate {
    /// Each chain's names, in order.
    pub chains: Vec<Vec<Ident>>,
    /// The whole attribute (for errors about the rotation as a whole).
    pub range: SpanRange,
}

impl Rotate {
    /// The chains as strings.
    pub fn names(&self) -> Vec<Vec<String>> {
        self.chains
            .iter()
            .map(|c| {
                c.iter()
                    .map(|i| syn::ext::IdentExt::unraw(i).to_string())
                    .collect()
            })
            .collect()
    }
}

/// Takes the `#[rotate(..)]` attribute off `attrs`, parsed; reports a malformed or repeated
/// attribute.
pub(crate) fn take(
    attrs: &mut Vec<syn::Attribute>,
    diagnostics: &mut Diagnostics,
) -> Option<Rotate> {
    let mut found: Option<Rotate> = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("rotate") {
            kept.push(attr);
            continue;
        }
        let range = SpanRange::of(&attr);
        if found.is_some() {
            diagnostics.error(
                range,
                "`#[rotate(..)]` is given twice; put every chain in one attribute, separated by \
                 commas",
            );
            continue;
        }
        match attr.parse_args_with(chains) {
            Ok(chains) => found = Some(Rotate { chains, range }),
            Err(e) => {
                diagnostics.syn_error(&syn::Error::new(
                    e.span(),
                    format!(
                        "{e}: write `#[rotate(out -> u)]`, each chain an output followed by the \
                         inputs it becomes"
                    ),
                ));
                // A placeholder, so the kernel still gets its `steps` stub.
                found = Some(Rotate {
                    chains: Vec::new(),
                    range,
                });
            }
        }
    }
    *attrs = kept;
    found
}

/// `a -> b -> c, d -> e`.
fn chains(input: ParseStream<'_>) -> syn::Result<Vec<Vec<Ident>>> {
    let parsed = Punctuated::<Vec<Ident>, Token![,]>::parse_terminated_with(input, chain)?;
    Ok(parsed.into_iter().collect())
}

/// `a -> b -> c`.
fn chain(input: ParseStream<'_>) -> syn::Result<Vec<Ident>> {
    let mut names = vec![input.call(syn::ext::IdentExt::parse_any)?];
    while input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        names.push(input.call(syn::ext::IdentExt::parse_any)?);
    }
    Ok(names)
}

/// Reports, at the names concerned, what core's [`Rotation::check`] finds wrong with
/// `rotate` for the lowered `kernel`; a kernel with reductions cannot rotate at all (reported
/// at the attribute).
///
/// [`Rotation::check`]: stencil_core::Rotation::check
pub fn check(rotate: &Rotate, kernel: &stencil_core::Kernel, diagnostics: &mut Diagnostics) {
    if kernel.has_reductions() {
        diagnostics.error(
            rotate.range,
            "a kernel with reductions cannot be a time loop; call it once per step",
        );
        return;
    }
    if let Err(errors) = stencil_core::Rotation::check(kernel, &rotate.names()) {
        for e in errors {
            let range = rotate
                .chains
                .get(e.chain)
                .and_then(|c| c.get(e.entry))
                .map_or(rotate.range, SpanRange::of);
            diagnostics.error(range, e.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse::Parser;

    fn attrs(source: &str) -> Vec<syn::Attribute> {
        syn::Attribute::parse_outer.parse_str(source).unwrap()
    }

    #[test]
    fn chains_are_parsed_and_the_attribute_removed() {
        let mut a = attrs("/// doc\n#[rotate(u_next -> u -> u_prev, vn -> v)]\n#[inline]");
        let mut d = Diagnostics::default();
        let r = take(&mut a, &mut d).unwrap();
        assert!(d.is_empty());
        assert_eq!(r.names(), [vec!["u_next", "u", "u_prev"], vec!["vn", "v"]]);
        assert_eq!(a.len(), 2);
        assert!(a.iter().all(|a| !a.path().is_ident("rotate")));
    }

    #[test]
    fn malformed_and_repeated_attributes_are_reported() {
        let mut d = Diagnostics::default();
        take(&mut attrs("#[rotate(out => u)]"), &mut d);
        assert_eq!(d.len(), 1);
        let mut d = Diagnostics::default();
        take(&mut attrs("#[rotate(out -> u)] #[rotate(vn -> v)]"), &mut d);
        assert_eq!(d.len(), 1);
        let mut d = Diagnostics::default();
        assert!(take(&mut attrs("#[inline]"), &mut d).is_none());
    }
}
