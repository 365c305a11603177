//! Tokens that the generated code spells the same way everywhere: element types, float and
//! integer literals, offsets, and numbered names.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use stencil_core::{ElemType, MAX_DIMS, Offset};

/// The element type as a Rust type.
pub(super) fn elem_type(elem: ElemType) -> proc_macro2::Ident {
    format_ident!("{}", elem.rust_name())
}

/// The vector type of `stencil_cpu::lanes` for `elem` (`F64` or `F32`: the build's widest
/// lanes), as the retimed and shifted loops name it.
pub(super) fn lanes_type(elem: ElemType) -> Ident {
    match elem {
        ElemType::F64 => format_ident!("F64"),
        ElemType::F32 => format_ident!("F32"),
    }
}

/// A float literal of type `elem` holding exactly `value` rounded to `elem` (the rounding the
/// interpreter applies to constants), or the matching non-finite constant.
pub(super) fn float_literal(value: f64, elem: ElemType) -> TokenStream {
    let ty = elem_type(elem);
    let (text, negative, finite) = match elem {
        ElemType::F64 => (
            format!("{:?}f64", value.abs()),
            value.is_sign_negative(),
            value.is_finite(),
        ),
        ElemType::F32 => {
            // Same rounding as `Element::from_f64` for f32.
            #[allow(clippy::cast_possible_truncation)]
            let rounded = value as f32;
            (
                format!("{:?}f32", rounded.abs()),
                rounded.is_sign_negative(),
                rounded.is_finite(),
            )
        }
    };
    if value.is_nan() {
        return quote!(::core::primitive::#ty::NAN);
    }
    if !finite {
        return if negative {
            quote!(::core::primitive::#ty::NEG_INFINITY)
        } else {
            quote!(::core::primitive::#ty::INFINITY)
        };
    }
    let literal: Literal = text
        .parse()
        .unwrap_or_else(|_| panic!("stencil!: bug in emit: `{text}` is not a float literal"));
    if negative {
        quote!(-#literal)
    } else {
        quote!(#literal)
    }
}

/// An integer as tokens (a `-` and an unsuffixed literal for negative values).
pub(super) fn int_tokens(value: i64) -> TokenStream {
    let literal = Literal::u64_unsuffixed(value.unsigned_abs());
    if value < 0 {
        quote!(-#literal)
    } else {
        quote!(#literal)
    }
}

/// The name `prefix` followed by `index` (`r0`, `p2`).
pub(super) fn ident(prefix: &str, index: usize) -> Ident {
    format_ident!("{prefix}{index}")
}

/// `[o0, o1, ..]` of `offset`, with `extra` added to entry `dim` when given.
pub(super) fn offset_tokens(offset: Offset, extra: Option<(usize, &Ident)>) -> TokenStream {
    let entries = (0..MAX_DIMS).map(|d| {
        let value = int_tokens(i64::from(offset.get(d)));
        match extra {
            Some((dim, add)) if dim == d => quote!(#value + #add),
            _ => value,
        }
    });
    quote!([#(#entries),*])
}
