//! Test helpers: run the stages on source text and summarise what comes out.

use stencil_core::Kernel;

use crate::diagnostic::Diagnostics;
use crate::diagnostic::testing::summary;
use crate::parse::{Item, parse_items};
use crate::{lower, model, validate};

/// Runs model building, validation and lowering on the single kernel in `source` (with the
/// helpers defined beside it): the verified kernel (if valid) and every error, the helpers'
/// first, as (message, source text it points at).
pub(crate) fn pipeline(source: &str) -> (Option<Kernel>, Vec<(String, String)>) {
    let mut diagnostics = Diagnostics::default();
    let mut kernels = Vec::new();
    let mut helpers = Vec::new();
    for item in parse_items(source.parse().unwrap()).unwrap() {
        match item {
            Item::Kernel(kernel) => kernels.push(*kernel),
            Item::Helper(helper) => helpers.push(model::build_helper(
                helper,
                validate::Origin::Macro,
                &mut diagnostics,
            )),
        }
    }
    assert_eq!(kernels.len(), 1, "one kernel expected");
    let helpers = validate::check_helpers(helpers, validate::Origin::Macro, &mut diagnostics);
    let model = model::build(kernels.remove(0), &mut diagnostics);
    let checked = validate::check(&model, &helpers, &mut diagnostics);
    let kernel = lower::lower(&checked, &mut diagnostics);
    let errors = summary(source, &diagnostics)
        .into_iter()
        .map(|(message, text)| (message, text.to_string()))
        .collect();
    (kernel, errors)
}

/// The errors of `source`, which must have exactly one; (message, text pointed at).
pub(crate) fn one_error(source: &str) -> (String, String) {
    let (kernel, mut errors) = pipeline(source);
    assert!(kernel.is_none(), "an invalid kernel was lowered: {source}");
    assert_eq!(
        errors.len(),
        1,
        "expected one error for {source}: {errors:?}"
    );
    errors.remove(0)
}

/// The verified kernel of `source`, which must be valid.
pub(crate) fn lowered(source: &str) -> Kernel {
    let (kernel, errors) = pipeline(source);
    assert_eq!(errors, [], "unexpected errors for {source}");
    kernel.expect("a valid kernel lowers")
}
