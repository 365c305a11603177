//! The kernel's signature: which parameters are grids (and of what shape) and which scalars.
//!
//! Recognises `&GridN<T>`, `&Grid<T, N>` (optionally behind a path such as `stencil::Grid3`)
//! with `&mut` for outputs, reductions `&mut Sum<T>`, `&mut Min<T>` and `&mut Max<T>` (any path
//! prefix), and bare types for scalars. Whether element types and dimension
//! counts agree across parameters is [`validate`](crate::validate)'s concern.

use quote::ToTokens;
use stencil_core::{ElemType, ReduceOp};

use proc_macro2::Ident;

use super::types::{Arg, ArgKind, ElemSpec, Stagger};
use crate::diagnostic::{Diagnostics, SpanRange};

/// The parameters of `sig`, reporting signature features a kernel cannot have.
pub(super) fn build_args(sig: &syn::Signature, diagnostics: &mut Diagnostics) -> Vec<Arg> {
    let qualifiers: [(Option<&dyn ToTokens>, &str); 4] = [
        (sig.constness.as_ref().map(|t| t as _), "const"),
        (sig.asyncness.as_ref().map(|t| t as _), "async"),
        (sig.unsafety.as_ref().map(|t| t as _), "unsafe"),
        (sig.abi.as_ref().map(|t| t as _), "extern"),
    ];
    for (token, word) in qualifiers {
        if let Some(token) = token {
            diagnostics.error_at(token, format!("a kernel is a plain `fn`: remove `{word}`"));
        }
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        diagnostics.error_at(&sig.generics, "a kernel cannot be generic");
    }
    if let Some(variadic) = &sig.variadic {
        diagnostics.error_at(variadic, "a kernel cannot be variadic");
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        diagnostics.error_at(
            ty,
            "a kernel returns nothing: its outputs are `&mut` grid parameters",
        );
    }
    sig.inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Receiver(receiver) => {
                diagnostics.error_at(receiver, "a kernel takes no `self`");
                None
            }
            syn::FnArg::Typed(typed) => build_arg(typed, diagnostics),
        })
        .collect()
}

fn build_arg(typed: &syn::PatType, diagnostics: &mut Diagnostics) -> Option<Arg> {
    let name = match &*typed.pat {
        syn::Pat::Ident(p)
            if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none() =>
        {
            p.ident.clone()
        }
        other => {
            diagnostics.error_at(
                other,
                "a kernel parameter is a plain name, as in `u: &Grid3<f64>`",
            );
            return None;
        }
    };
    let kind = arg_kind(&typed.ty, diagnostics);
    let stagger = stagger(&typed.attrs, &kind, diagnostics);
    Some(Arg {
        name,
        kind,
        ty: (*typed.ty).clone(),
        stagger,
    })
}

/// The `#[stagger(i, ..)]` among a parameter's attributes: the only attribute a parameter
/// takes, once, on a grid, naming at least one index variable (each at most once). Whether
/// the names are the kernel's index variables is [`validate`](crate::validate)'s concern.
fn stagger(
    attrs: &[syn::Attribute],
    kind: &ArgKind,
    diagnostics: &mut Diagnostics,
) -> Option<Stagger> {
    let mut found: Option<Stagger> = None;
    for attr in attrs {
        let range = SpanRange::of(attr);
        if !attr.path().is_ident("stagger") {
            diagnostics.error(
                range,
                "a kernel parameter takes no attribute but `#[stagger(..)]` (on a grid)",
            );
            continue;
        }
        if found.is_some() {
            diagnostics.error(
                range,
                "`#[stagger(..)]` is given twice; name every staggered index in one attribute",
            );
            continue;
        }
        if !matches!(kind, ArgKind::Field { .. } | ArgKind::Invalid) {
            diagnostics.error(range, "only a grid can be staggered");
            continue;
        }
        let parsed = attr.parse_args_with(
            syn::punctuated::Punctuated::<Ident, syn::Token![,]>::parse_terminated,
        );
        match parsed {
            Ok(names) if !names.is_empty() => {
                let dims: Vec<Ident> = names.into_iter().collect();
                for (n, name) in dims.iter().enumerate() {
                    if dims[..n].contains(name) {
                        diagnostics.error_at(name, format!("`{name}` is staggered twice"));
                    }
                }
                found = Some(Stagger { dims, range });
            }
            Ok(_) => diagnostics.error(
                range,
                "name the staggered index variables, as in `#[stagger(i)]` or `#[stagger(i, k)]`",
            ),
            Err(e) => diagnostics.syn_error(&syn::Error::new(
                e.span(),
                format!(
                    "{e}: name the staggered index variables, as in `#[stagger(i)]` or \
                     `#[stagger(i, k)]`"
                ),
            )),
        }
    }
    found
}

/// What to write for a reduction of type `op`.
fn reduction_hint(op: ReduceOp) -> String {
    format!(
        "a reduction is passed by mutable reference, as in `&mut {}<f64>`",
        op.type_name()
    )
}

fn arg_kind(ty: &syn::Type, diagnostics: &mut Diagnostics) -> ArgKind {
    let reduction = match strip_groups(ty) {
        syn::Type::Reference(reference) => {
            reduction_type(&reference.elem).map(|found| (found, reference.mutability.is_some()))
        }
        other => reduction_type(other).map(|found| (found, false)),
    };
    match reduction {
        Some((Ok((op, elem)), true)) => return ArgKind::Reduction { op, elem },
        Some((Ok((op, elem)), false)) => {
            // Still a reduction, so its uses and the stub's signature make sense.
            diagnostics.error_at(ty, reduction_hint(op));
            return ArgKind::Reduction { op, elem };
        }
        Some((Err(error), _)) => {
            diagnostics.error(error.0, error.1);
            return ArgKind::Invalid;
        }
        None => {}
    }
    match strip_groups(ty) {
        syn::Type::Reference(reference) => match grid_type(&reference.elem) {
            Some(Ok((elem, dims))) => ArgKind::Field {
                output: reference.mutability.is_some(),
                elem,
                dims,
            },
            Some(Err(error)) => {
                diagnostics.error(error.0, error.1);
                ArgKind::Invalid
            }
            None if elem_spec(&reference.elem).elem.is_some() => {
                diagnostics.error_at(ty, "scalars are passed by value, as in `c: f64`");
                ArgKind::Invalid
            }
            None => {
                diagnostics.error_at(
                    ty,
                    "expected a grid type, as in `&Grid3<f64>` (an input) or `&mut Grid3<f64>` (an output)",
                );
                ArgKind::Invalid
            }
        },
        other => {
            if grid_type(other).is_some() {
                diagnostics.error_at(
                    ty,
                    "grids are passed by reference: write `&` for an input or `&mut` for an output",
                );
                return ArgKind::Invalid;
            }
            ArgKind::Scalar(elem_spec(other))
        }
    }
}

fn strip_groups(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Group(g) => strip_groups(&g.elem),
        syn::Type::Paren(p) => strip_groups(&p.elem),
        other => other,
    }
}

/// The element type named by `ty`, if it is `f32` or `f64`.
fn elem_spec(ty: &syn::Type) -> ElemSpec {
    let elem = match strip_groups(ty) {
        syn::Type::Path(path) if path.qself.is_none() => path
            .path
            .get_ident()
            .and_then(|ident| ElemType::from_rust_name(&ident.to_string())),
        _ => None,
    };
    ElemSpec {
        elem,
        range: SpanRange::of(ty),
    }
}

type GridType = (ElemSpec, (usize, SpanRange));

/// `Some` when `ty` names a grid type (`GridN<T>` or `Grid<T, N>`, any path prefix): its
/// element type and dimension count, or the error in its generic arguments.
fn grid_type(ty: &syn::Type) -> Option<Result<GridType, (SpanRange, String)>> {
    let syn::Type::Path(path) = strip_groups(ty) else {
        return None;
    };
    let last = path.path.segments.last()?;
    let name = last.ident.to_string();
    let suffix = name.strip_prefix("Grid")?;
    let fixed_dims = if suffix.is_empty() {
        None
    } else {
        Some(suffix.parse::<usize>().ok()?)
    };
    let expected = if fixed_dims.is_some() {
        "one type argument, as in `Grid3<f64>`"
    } else {
        "an element type and a dimension count, as in `Grid<f64, 3>`"
    };
    let wrong = || Some(Err((SpanRange::of(last), format!("expected {expected}"))));
    let syn::PathArguments::AngleBracketed(generic) = &last.arguments else {
        return wrong();
    };
    let args: Vec<_> = generic.args.iter().collect();
    match (fixed_dims, args.as_slice()) {
        (Some(n), [syn::GenericArgument::Type(elem)]) => {
            Some(Ok((elem_spec(elem), (n, SpanRange::of(&last.ident)))))
        }
        (None, [syn::GenericArgument::Type(elem), dims]) => match dims_literal(dims) {
            Some(n) => Some(Ok((elem_spec(elem), (n, SpanRange::of(dims))))),
            None => Some(Err((
                SpanRange::of(dims),
                "the dimension count must be an integer literal, as in `Grid<f64, 3>`".into(),
            ))),
        },
        _ => wrong(),
    }
}

/// `Some` when `ty` names a reduction type (`Sum<T>`, `Min<T>` or `Max<T>`, any path prefix):
/// its operation and element type, or the error in its generic arguments.
fn reduction_type(ty: &syn::Type) -> Option<Result<(ReduceOp, ElemSpec), (SpanRange, String)>> {
    let syn::Type::Path(path) = strip_groups(ty) else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    let op = ReduceOp::from_type_name(&last.ident.to_string())?;
    let wrong = || {
        Some(Err((
            SpanRange::of(last),
            format!(
                "expected one type argument, as in `{}<f64>`",
                op.type_name()
            ),
        )))
    };
    let syn::PathArguments::AngleBracketed(generic) = &last.arguments else {
        return wrong();
    };
    let args: Vec<_> = generic.args.iter().collect();
    match args.as_slice() {
        [syn::GenericArgument::Type(elem)] => Some(Ok((op, elem_spec(elem)))),
        _ => wrong(),
    }
}

fn dims_literal(arg: &syn::GenericArgument) -> Option<usize> {
    let expr = match arg {
        syn::GenericArgument::Const(expr) => expr,
        _ => return None,
    };
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse().ok(),
        syn::Expr::Block(block) if block.block.stmts.len() == 1 => match &block.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => {
                dims_literal(&syn::GenericArgument::Const(inner.clone()))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::testing::summary;
    use crate::model::testing::model_of;

    fn describe(kind: &ArgKind) -> String {
        match kind {
            ArgKind::Field { output, elem, dims } => {
                format!("field out={output} {:?} {}", elem.elem, dims.0)
            }
            ArgKind::Scalar(elem) => format!("scalar {:?}", elem.elem),
            ArgKind::Reduction { op, elem } => format!("reduction {op:?} {:?}", elem.elem),
            ArgKind::Invalid => "invalid".into(),
        }
    }

    #[test]
    fn recognises_every_grid_and_scalar_spelling() {
        let (model, diagnostics) = model_of(
            "fn k(a: &Grid3<f64>, b: &mut stencil::Grid3<f64>, c: &Grid<f32, 2>, \
             d: &'a ::stencil::Grid4<f32>, e: &mut Grid1<i32>, s: f64, t: f32, w: i32) {}",
        );
        assert!(diagnostics.is_empty());
        let kinds: Vec<_> = model.args.iter().map(|a| describe(&a.kind)).collect();
        assert_eq!(
            kinds,
            [
                "field out=false Some(F64) 3",
                "field out=true Some(F64) 3",
                "field out=false Some(F32) 2",
                "field out=false Some(F32) 4",
                "field out=true None 1",
                "scalar Some(F64)",
                "scalar Some(F32)",
                "scalar None",
            ]
        );
    }

    #[test]
    fn reports_signature_features_a_kernel_cannot_have() {
        let source = "async fn k<T>(&self, (a, b): f64, u: Grid3<f64>, v: &Vec<f64>, \
                      w: &Grid<f64, N>, c: &f64) -> f64 {}";
        let (model, diagnostics) = model_of(source);
        assert_eq!(
            summary(source, &diagnostics),
            [
                ("a kernel is a plain `fn`: remove `async`".to_string(), "async"),
                ("a kernel cannot be generic".to_string(), "<T>"),
                (
                    "a kernel returns nothing: its outputs are `&mut` grid parameters".to_string(),
                    "f64"
                ),
                ("a kernel takes no `self`".to_string(), "&self"),
                (
                    "a kernel parameter is a plain name, as in `u: &Grid3<f64>`".to_string(),
                    "(a, b)"
                ),
                (
                    "grids are passed by reference: write `&` for an input or `&mut` for an output"
                        .to_string(),
                    "Grid3<f64>"
                ),
                (
                    "expected a grid type, as in `&Grid3<f64>` (an input) or `&mut Grid3<f64>` (an output)"
                        .to_string(),
                    "&Vec<f64>"
                ),
                (
                    "the dimension count must be an integer literal, as in `Grid<f64, 3>`"
                        .to_string(),
                    "N"
                ),
                (
                    "scalars are passed by value, as in `c: f64`".to_string(),
                    "&f64"
                ),
            ]
        );
        assert_eq!(model.args.len(), 4);
    }

    #[test]
    fn recognises_reductions_and_reports_them_passed_otherwise() {
        let (model, diagnostics) = model_of(
            "fn k(u: &Grid1<f64>, s: &mut Sum<f64>, lo: &mut stencil::Min<f32>, \
             hi: &mut ::stencil::prelude::Max<i32>) {}",
        );
        assert!(diagnostics.is_empty());
        let kinds: Vec<_> = model.args.iter().map(|a| describe(&a.kind)).collect();
        assert_eq!(
            kinds,
            [
                "field out=false Some(F64) 1",
                "reduction Sum Some(F64)",
                "reduction Min Some(F32)",
                "reduction Max None",
            ]
        );
        let source = "fn k(a: &Sum<f64>, b: Max<f64>, c: &mut Min, d: &mut Sum<f64, 2>) {}";
        let (model, diagnostics) = model_of(source);
        assert_eq!(
            summary(source, &diagnostics),
            [
                (
                    "a reduction is passed by mutable reference, as in `&mut Sum<f64>`".to_string(),
                    "&Sum<f64>"
                ),
                (
                    "a reduction is passed by mutable reference, as in `&mut Max<f64>`".to_string(),
                    "Max<f64>"
                ),
                (
                    "expected one type argument, as in `Min<f64>`".to_string(),
                    "Min"
                ),
                (
                    "expected one type argument, as in `Sum<f64>`".to_string(),
                    "Sum<f64, 2>"
                ),
            ]
        );
        let kinds: Vec<_> = model.args.iter().map(|a| describe(&a.kind)).collect();
        assert_eq!(
            kinds,
            [
                "reduction Sum Some(F64)",
                "reduction Max Some(F64)",
                "invalid",
                "invalid"
            ]
        );
    }
}
