//! The `#[fma]` attribute: fused multiply-add for one kernel.
//!
//! `#[fma]` takes no arguments; written on a kernel, every addition or subtraction of a
//! product in it is computed with one rounding (core's `passes::contract` holds the rule). The
//! attribute is taken off the kernel's attributes here; written with arguments or twice, it
//! is an error at the attribute.

use crate::diagnostic::{Diagnostics, SpanRange};

/// Takes the `#[fma]` attributes off `attrs`: whether the kernel asks for fused multiply-add.
/// Reports an attribute with arguments (`#[fma(..)]`, `#[fma = ..]`) and a repeated one.
pub(crate) fn take(attrs: &mut Vec<syn::Attribute>, diagnostics: &mut Diagnostics) -> bool {
    let mut found = false;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("fma") {
            kept.push(attr);
            continue;
        }
        let range = SpanRange::of(&attr);
        if found {
            diagnostics.error(range, "`#[fma]` is given twice; write it once");
            continue;
        }
        found = true;
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            diagnostics.error(
                range,
                "`#[fma]` takes no arguments: write `#[fma]` to fuse every `a * b + c` of the \
                 kernel",
            );
        }
    }
    *attrs = kept;
    found
}

#[cfg(test)]
mod tests {
    use crate::model::testing::model_of;

    fn messages(source: &str) -> (bool, Vec<String>) {
        let (kernel, diagnostics) = model_of(source);
        let messages = diagnostics.iter().map(|d| d.message.clone()).collect();
        (kernel.fma, messages)
    }

    const BODY: &str = "fn k(u: &Grid1<f64>, out: &mut Grid1<f64>) { out[i] = u[i]; }";

    #[test]
    fn the_attribute_sets_the_flag_and_is_taken_off() {
        let (kernel, diagnostics) = model_of(&format!("#[fma] #[doc = \"x\"] {BODY}"));
        assert!(kernel.fma && diagnostics.is_empty());
        assert_eq!(kernel.attrs.len(), 1, "only the doc attribute is kept");
        assert_eq!(messages(BODY), (false, vec![]));
    }

    #[test]
    fn arguments_and_repeats_are_errors() {
        for source in [
            format!("#[fma(on)] {BODY}"),
            format!("#[fma = true] {BODY}"),
        ] {
            let (_, errors) = messages(&source);
            assert_eq!(errors.len(), 1, "{source}: {errors:?}");
            assert!(errors[0].contains("takes no arguments"), "{errors:?}");
        }
        let (fma, errors) = messages(&format!("#[fma] #[fma] {BODY}"));
        assert!(fma);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("given twice"), "{errors:?}");
    }
}
