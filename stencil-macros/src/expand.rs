//! The pipeline: parse -> model -> validate -> lower (and verify) -> emit, per kernel.
//!
//! Each kernel of an invocation expands on its own: a kernel with errors becomes its
//! `compile_error!`s plus a stub of its public items, and the other kernels expand normally,
//! so one mistake produces one error. Helpers expand to nothing of their own: they are checked
//! once (their mistakes reported once, whoever calls them) and inlined where kernels call them.

use proc_macro2::TokenStream;

use crate::emit;
use stencil_lang::diagnostic::Diagnostics;
use stencil_lang::{lower, model, parse, validate};

/// Expands the input of `stencil! { ... }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let items = match parse::parse_items(input) {
        Ok(items) => items,
        Err(error) => return error.to_compile_error(),
    };
    let mut diagnostics = Diagnostics::default();
    let (kernels, helpers) =
        stencil_lang::kernels_and_helpers(items, validate::Origin::Macro, &mut diagnostics);
    let helpers_failed = !diagnostics.is_empty();
    let mut out = diagnostics.to_compile_errors();
    for kernel in kernels {
        out.extend(expand_kernel(kernel, &helpers, helpers_failed));
    }
    out
}

/// Expands one kernel; `helpers_failed` says the block's helpers had errors (reported), which
/// explain a kernel that calls them and is otherwise fine.
fn expand_kernel(
    item: parse::KernelItem,
    helpers: &validate::Helpers,
    helpers_failed: bool,
) -> TokenStream {
    let mut diagnostics = Diagnostics::default();
    let model = model::build(item, &mut diagnostics);
    let checked = validate::check(&model, helpers, &mut diagnostics);
    let lowered = lower::lower(&checked, &mut diagnostics);
    if let (Some(kernel), Some(rotate)) = (&lowered, &model.rotate)
        && !rotate.chains.is_empty()
    {
        model::check_rotate(rotate, kernel, &mut diagnostics);
    }
    match lowered {
        Some(kernel) if diagnostics.is_empty() => emit::kernel(&model, &kernel),
        _ => {
            if diagnostics.is_empty() && !helpers_failed {
                // A placeholder without an error of its own would be a bug; never fail silently.
                diagnostics.error_at(&model.name, "stencil!: this kernel is invalid");
            }
            let mut out = diagnostics.to_compile_errors();
            out.extend(emit::stub(&model, checked.elem, checked.n_dims));
            out
        }
    }
}
