//! Emission: the code a kernel expands to, and the stub emitted when it has errors.
//!
//! A valid kernel `k` becomes a typed function `k(...) -> Launch` with the kernel's own
//! signature plus a module `k` holding `stencil()` (the IR, rebuilt through the builder by
//! [`builder`], and the CPU point loop generated from the same IR by [`point_loop`]). A kernel
//! with errors becomes the same public items with `unreachable!()` bodies, so the only errors
//! the user sees are the kernel's own (thiserror's fallback).
//!
//! Generated code names only `::stencil::__private::...` paths, and everything the module
//! holds is generated from the lowered IR, never from the syntax tree.

mod builder;
mod plan;
mod point_loop;
mod retimed;
mod run_level;
mod shifted;
mod tokens;

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, format_ident, quote};
use stencil_core::{ElemType, Kernel};

use stencil_lang::model::{self, ArgKind};

use tokens::elem_type;

/// The visibility of items inside the generated module that should be visible exactly where
/// the module is.
fn inner_visibility(vis: &syn::Visibility) -> TokenStream {
    match vis {
        syn::Visibility::Public(_) => quote!(pub),
        syn::Visibility::Inherited => quote!(pub(super)),
        syn::Visibility::Restricted(restricted) => {
            let path = &restricted.path;
            let first = path.segments.first().map(|s| s.ident.to_string());
            match first.as_deref() {
                Some("crate") => quote!(pub(in #path)),
                Some("self") if path.segments.len() == 1 => quote!(pub(super)),
                Some("self") => {
                    let rest = path.segments.iter().skip(1);
                    quote!(pub(in super #(::#rest)*))
                }
                _ => quote!(pub(in super::#path)),
            }
        }
    }
}

/// Lints the generated module may trip in a user crate; the user cannot change generated code.
fn module_allows() -> TokenStream {
    quote! {
        #[allow(
            dead_code,
            non_snake_case,
            unreachable_pub,
            unused_results,
            unused_qualifications,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
            clippy::restriction
        )]
    }
}

/// What the public items of a kernel look like: its name, signature, element type, dims.
struct PublicItems<'m> {
    model: &'m model::Kernel,
    elem: ElemType,
    n_dims: usize,
}

impl PublicItems<'_> {
    /// Parameter types as emitted (grids normalised to `__private::Grid<T, N>`).
    fn param_types(&self) -> Vec<TokenStream> {
        let elem = elem_type(self.elem);
        self.model
            .args
            .iter()
            .map(|arg| match &arg.kind {
                ArgKind::Field {
                    output,
                    elem: declared,
                    dims,
                } => {
                    // As declared where that is a valid grid type, so call sites of a stub
                    // type-check as the user meant them.
                    let elem = declared.elem.map_or_else(|| elem.clone(), elem_type);
                    let n = Literal::usize_unsuffixed(dims.0);
                    let mutability = output.then(|| quote!(mut));
                    quote!(&'g #mutability ::stencil::__private::Grid<#elem, #n>)
                }
                ArgKind::Scalar(spec) => match spec.elem {
                    Some(e) => elem_type(e).into_token_stream(),
                    None => arg.ty.to_token_stream(),
                },
                ArgKind::Reduction { op, elem: declared } => {
                    let elem = declared.elem.map_or_else(|| elem.clone(), elem_type);
                    let op = format_ident!("{}", op.type_name());
                    quote!(&'g mut ::stencil::__private::#op<#elem>)
                }
                ArgKind::Invalid => arg.ty.to_token_stream(),
            })
            .collect()
    }

    /// The kernel function with `body`; parameters named as written, or `_` in a stub.
    fn function(&self, body: &TokenStream, stub: bool) -> TokenStream {
        let model = self.model;
        let attrs = &model.attrs;
        let has = |name: &str| attrs.iter().any(|a| a.path().is_ident(name));
        let doc = (!has("doc")).then(|| {
            let text = format!(
                " Binds the `{}` stencil kernel to its grids and parameters; `.run()` runs it.",
                model.name
            );
            quote!(#[doc = #text])
        });
        // No `#[must_use]` here: `Launch` is `#[must_use]` itself, and both would warn twice
        // about one forgotten `.run()`.
        let names = model.args.iter().map(|arg| {
            if stub {
                quote!(_)
            } else {
                arg.name.to_token_stream()
            }
        });
        let types = self.param_types();
        let vis = &model.vis;
        let name = &model.name;
        let elem = elem_type(self.elem);
        let n_dims = Literal::usize_unsuffixed(self.n_dims);
        // Kernels are maths: many grids and coefficients, names like `A` or `Ux`.
        quote! {
            #(#attrs)*
            #doc
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #vis fn #name<'g>(#(#names: #types),*) -> ::stencil::__private::Launch<'g, #elem, #n_dims> {
                #body
            }
        }
    }

    /// `steps(..)`, the kernel's time loop, for a kernel with a `#[rotate(..)]` attribute:
    /// the kernel's parameters with every grid the loop writes (outputs, and inputs in a
    /// chain) borrowed mutably; `body` as given, or for a stub `unreachable!()` with `_`
    /// parameters.
    fn steps_function(&self, rotating: &[String], body: Option<&TokenStream>) -> TokenStream {
        let model = self.model;
        let elem = elem_type(self.elem);
        let n_dims = Literal::usize_unsuffixed(self.n_dims);
        let inner_vis = inner_visibility(&model.vis);
        let mut names = Vec::new();
        let mut types = Vec::new();
        for (arg, ty) in model.args.iter().zip(self.param_types()) {
            names.push(if body.is_some() {
                arg.name.to_token_stream()
            } else {
                quote!(_)
            });
            types.push(match &arg.kind {
                ArgKind::Field {
                    output: false,
                    elem: declared,
                    dims,
                } if rotating.contains(&syn::ext::IdentExt::unraw(&arg.name).to_string()) => {
                    let elem = declared.elem.map_or_else(|| elem.clone(), elem_type);
                    let n = Literal::usize_unsuffixed(dims.0);
                    quote!(&'g mut ::stencil::__private::Grid<#elem, #n>)
                }
                _ => ty,
            });
        }
        let body = body
            .cloned()
            .unwrap_or_else(|| quote!(::core::unreachable!()));
        let doc = format!(
            " Binds the `{}` kernel's time loop (its grids rotating as `#[rotate(..)]` says);              `.run(n)` runs `n` steps. See `stencil::Steps`.",
            model.name
        );
        quote! {
            #[doc = #doc]
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #inner_vis fn steps<'g>(#(#names: #types),*)
                -> ::stencil::__private::Steps<'g, #elem, #n_dims>
            {
                #body
            }
        }
    }

    /// `Params` (the kernel's scalar parameters as named fields), `with(grids.., Params)`
    /// and, for a kernel with `#[rotate(..)]`, `Grids` (its grids as named fields) and
    /// `steps_with(Grids, Params)`: the same calls as the positional ones, each scalar (and in
    /// a time loop each grid) named at the call site. `with`'s body is `launch`
    /// (which reads the scalars from `__params`); bodies are `unreachable!()` in a stub
    /// (`launch` `None`).
    fn named_params(
        &self,
        rotating: Option<&[String]>,
        launch: Option<&TokenStream>,
    ) -> TokenStream {
        let stub = launch.is_none();
        let model = self.model;
        let inner_vis = inner_visibility(&model.vis);
        let elem = elem_type(self.elem);
        let n_dims = Literal::usize_unsuffixed(self.n_dims);
        let kernel = &model.name;
        let types = self.param_types();
        let mut fields = Vec::new();
        let mut grid_params = Vec::new();
        let mut call_args = Vec::new();
        // `Grids`' fields and the arguments `steps_with` passes `steps` (grids from `Grids`).
        let mut grid_fields = Vec::new();
        let mut steps_args = Vec::new();
        for (arg, ty) in model.args.iter().zip(&types) {
            let name = &arg.name;
            match &arg.kind {
                ArgKind::Reduction { .. } => {
                    // Positional, like grids.
                    let param = if stub { quote!(_) } else { quote!(#name) };
                    grid_params.push(quote!(#param: #ty));
                    call_args.push(quote!(#name));
                }
                ArgKind::Field {
                    output,
                    elem: declared,
                    dims,
                } => {
                    // A stub's parameters are `_`, so its unused grids add no warnings.
                    let param = if stub { quote!(_) } else { quote!(#name) };
                    grid_params.push(quote!(#param: #ty));
                    let unraw = syn::ext::IdentExt::unraw(name).to_string();
                    let steps_ty = if !output && rotating.is_some_and(|r| r.contains(&unraw)) {
                        let elem = declared.elem.map_or_else(|| elem.clone(), elem_type);
                        let n = Literal::usize_unsuffixed(dims.0);
                        quote!(&'g mut ::stencil::__private::Grid<#elem, #n>)
                    } else {
                        ty.clone()
                    };
                    let doc = format!(" The `{unraw}` grid.");
                    grid_fields.push(quote! {
                        #[doc = #doc]
                        #inner_vis #name: #steps_ty
                    });
                    call_args.push(quote!(#name));
                    steps_args.push(quote!(__grids.#name));
                }
                _ => {
                    let doc = format!(" The `{}` parameter.", syn::ext::IdentExt::unraw(name));
                    fields.push(quote! {
                        #[doc = #doc]
                        #inner_vis #name: #ty
                    });
                    call_args.push(quote!(__params.#name));
                    steps_args.push(quote!(__params.#name));
                }
            }
        }
        let body = |call: TokenStream| {
            if stub {
                quote!(::core::unreachable!())
            } else {
                call
            }
        };
        let params_name = if stub { quote!(_) } else { quote!(__params) };
        // Built here rather than by calling the kernel's function through `super::`, which
        // names the enclosing module: a `stencil!` inside a function body puts the function in
        // the body's scope, where `super::` does not see it.
        let launch_body = launch
            .cloned()
            .unwrap_or_else(|| quote!(::core::unreachable!()));
        let struct_doc = format!(
            " The scalar parameters of the `{kernel}` kernel by name, for `{kernel}::with(..)`: \
             swapping two of them is a compile error, not a silent change of the physics."
        );
        let with_doc = format!(
            " Binds the `{kernel}` kernel like `{kernel}(..)`, with its grids in order and its \
             scalar parameters named in `Params`; `.run()` runs it."
        );
        let mut out = quote! {
            #[doc = #struct_doc]
            #[derive(Clone, Copy, Debug, PartialEq)]
            #inner_vis struct Params {
                #(#fields,)*
            }

            #[doc = #with_doc]
            #inner_vis fn with<'g>(#(#grid_params,)* #params_name: Params)
                -> ::stencil::__private::Launch<'g, #elem, #n_dims>
            {
                #launch_body
            }
        };
        if rotating.is_some() {
            // `self::`, so a grid parameter named `steps` cannot shadow the function.
            let steps_body = body(quote!(self::steps(#(#steps_args),*)));
            let grids_name = if stub { quote!(_) } else { quote!(__grids) };
            let grids_doc = format!(
                " The grids of the `{kernel}` kernel's time loop by name, for \
                 `{kernel}::steps_with(..)`: the grids that rotate borrowed mutably, the others \
                 as the kernel takes them. Two grids of one type given in the wrong order are a \
                 compile error's worth of names at the call site, never a silent swap."
            );
            let steps_doc = format!(
                " Binds the `{kernel}` kernel's time loop like `{kernel}::steps(..)`, its grids \
                 named in `Grids` and its scalar parameters in `Params`; `.run(n)` runs `n` \
                 steps."
            );
            out.extend(quote! {
                #[doc = #grids_doc]
                #inner_vis struct Grids<'g> {
                    #(#grid_fields,)*
                }

                #[doc = #steps_doc]
                #inner_vis fn steps_with<'g>(#grids_name: Grids<'g>, #params_name: Params)
                    -> ::stencil::__private::Steps<'g, #elem, #n_dims>
                {
                    #steps_body
                }
            });
        }
        out
    }

    /// The module named after the kernel, holding `stencil()` (with `stencil_body`) and `rest`.
    fn module(&self, stencil_body: &TokenStream, rest: &TokenStream) -> TokenStream {
        let model = self.model;
        let cfgs = model.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        let module_doc = format!(
            " The compiled form of the `{}` kernel: its IR and generated CPU point loop.",
            model.name
        );
        let allows = module_allows();
        let vis = &model.vis;
        let inner_vis = inner_visibility(vis);
        let name = &model.name;
        let elem = elem_type(self.elem);
        quote! {
            #[doc = #module_doc]
            #(#cfgs)*
            #allows
            #vis mod #name {
                /// The kernel (IR plus CPU specialisation), for `stencil::verify` and explicit backends.
                #inner_vis fn stencil() -> &'static ::stencil::__private::Stencil<#elem> {
                    #stencil_body
                }
                #rest
            }
        }
    }
}

/// The expansion of a valid kernel: `kernel` is its lowered, verified IR.
pub(crate) fn kernel(model: &model::Kernel, kernel: &Kernel) -> TokenStream {
    let items = PublicItems {
        model,
        elem: kernel.elem(),
        n_dims: kernel.n_dims,
    };
    let of_role = |output: bool| {
        model
            .args
            .iter()
            .filter(move |a| matches!(a.kind, ArgKind::Field { output: o, .. } if o == output))
            .map(|a| &a.name)
    };
    let (inputs, outputs) = (of_role(false), of_role(true));
    let params = model
        .args
        .iter()
        .filter(|a| matches!(a.kind, ArgKind::Scalar(_)))
        .map(|a| &a.name);
    let name = &model.name;
    let elem = elem_type(kernel.elem());
    let reductions: Vec<&proc_macro2::Ident> = model
        .args
        .iter()
        .filter(|a| matches!(a.kind, ArgKind::Reduction { .. }))
        .map(|a| &a.name)
        .collect();
    // Reductions after the rest of the call, each coerced to the facade's target trait.
    let with_reductions = (!reductions.is_empty()).then(|| {
        quote! {
            .with_reductions(::std::vec![
                #(#reductions as &mut dyn ::stencil::__private::ReductionTarget<#elem>),*
            ])
        }
    });
    // The call binding the kernel's stencil (at `stencil`) to its grids, and to its scalars
    // at `scalar(name)`: in the kernel's function and in its module's `with`.
    let launch = |stencil: TokenStream, scalar: &dyn Fn(&proc_macro2::Ident) -> TokenStream| {
        let (inputs, outputs) = (inputs.clone(), outputs.clone());
        let params = params.clone().map(scalar);
        quote! {
            ::stencil::__private::Launch::from_macro(
                #stencil,
                ::std::vec![#(#inputs),*],
                ::std::vec![#(#outputs),*],
                ::std::vec![#(#params),*],
            )
            #with_reductions
        }
    };
    let call = launch(quote!(#name::stencil()), &|p| quote!(#p));
    let with_call = launch(quote!(self::stencil()), &|p| quote!(__params.#p));
    let build = builder::build_statements(kernel);
    let stencil_body = quote! {
        static STENCIL: ::stencil::__private::LazyLock<::stencil::__private::Stencil<#elem>> =
            ::stencil::__private::LazyLock::new(|| {
                #build
            });
        &STENCIL
    };
    let mut rest = point_loop::row_functions(kernel);
    if let Some(rotate) = &model.rotate {
        let chains = rotate.names();
        let rotating: Vec<String> = chains.iter().flatten().cloned().collect();
        let grids = model.args.iter().filter_map(|a| match &a.kind {
            ArgKind::Field { output, .. } => {
                let name = &a.name;
                let unraw = syn::ext::IdentExt::unraw(name).to_string();
                Some(if *output || rotating.contains(&unraw) {
                    quote!(::stencil::__private::LoopGrid::Write(#name))
                } else {
                    quote!(::stencil::__private::LoopGrid::Read(#name))
                })
            }
            _ => None,
        });
        let params = model
            .args
            .iter()
            .filter(|a| matches!(a.kind, ArgKind::Scalar(_)))
            .map(|a| &a.name);
        let chain_tokens = chains.iter().map(|c| quote!(&[#(#c),*]));
        let body = quote! {
            ::stencil::__private::Steps::from_macro(
                stencil(),
                &[#(#chain_tokens),*],
                ::std::vec![#(#grids),*],
                ::std::vec![#(#params),*],
            )
        };
        rest.extend(items.steps_function(&rotating, Some(&body)));
        rest.extend(items.named_params(Some(&rotating), Some(&with_call)));
    } else {
        rest.extend(items.named_params(None, Some(&with_call)));
    }
    let mut out = items.function(&call, false);
    out.extend(items.module(&stencil_body, &rest));
    out
}

/// The fallback for a kernel with errors: the same public items, bodies `unreachable!()`.
pub(crate) fn stub(model: &model::Kernel, elem: ElemType, n_dims: usize) -> TokenStream {
    let items = PublicItems {
        model,
        elem,
        n_dims,
    };
    let unreachable = quote!(::core::unreachable!());
    let mut out = items.function(&unreachable, true);
    let rest = match &model.rotate {
        Some(rotate) => {
            let rotating: Vec<String> = rotate.names().into_iter().flatten().collect();
            let mut rest = items.steps_function(&rotating, None);
            rest.extend(items.named_params(Some(&rotating), None));
            rest
        }
        None => items.named_params(None, None),
    };
    out.extend(items.module(&unreachable, &rest));
    out
}

#[cfg(test)]
mod tests;
