//! The kernel model: what the user wrote, in the kernel language's own terms, with spans.
//!
//! Built from `syn` syntax by [`build`]; Rust syntax the kernel language lacks (loops, method
//! calls, casts, ...) is reported here and replaced by [`ExprKind::Invalid`] or dropped, so
//! later stages see only kernel-language constructs. Names are not resolved yet (that is
//! [`validate`](crate::validate)'s job), so the model may refer to unknown names.

mod body;
mod fma;
mod helper;
mod rotate;
mod signature;
mod types;

pub use helper::{Helper, build as build_helper};
pub use rotate::{Rotate, check as check_rotate};
pub use types::{
    Arg, ArgKind, BinaryOperator, ElemSpec, Expr, ExprKind, Index, IndexKind, Kernel, Stagger, Stmt,
};

use crate::diagnostic::Diagnostics;
use crate::parse::KernelItem;

/// Builds the model of one parsed kernel, reporting syntax the kernel language lacks.
pub fn build(mut item: KernelItem, diagnostics: &mut Diagnostics) -> Kernel {
    let rotate = rotate::take(&mut item.attrs, diagnostics);
    let fma = fma::take(&mut item.attrs, diagnostics);
    let args = signature::build_args(&item.sig, diagnostics);
    let body = match &item.body {
        Ok(statements) => body::build_body(statements, diagnostics),
        Err(error) => {
            diagnostics.syn_error(error);
            Vec::new()
        }
    };
    Kernel {
        attrs: item.attrs,
        vis: item.vis,
        name: item.sig.ident,
        args,
        body,
        body_span: item.body_span,
        rotate,
        fma,
    }
}

#[cfg(test)]
pub mod testing {
    //! Building models from source text in tests.

    use super::{Kernel, build};
    use crate::diagnostic::Diagnostics;
    use crate::parse::parse_kernels;

    /// The model of the single kernel in `source`, and the diagnostics of building it.
    pub fn model_of(source: &str) -> (Kernel, Diagnostics) {
        let mut items = parse_kernels(source.parse().unwrap()).unwrap();
        assert_eq!(items.len(), 1, "one kernel expected");
        let mut diagnostics = Diagnostics::default();
        let kernel = build(items.remove(0), &mut diagnostics);
        (kernel, diagnostics)
    }
}
