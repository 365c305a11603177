//! Validation: resolves names and indices, reporting what the IR cannot express.
//!
//! Owns the checks the verifier cannot make because the IR has no room for the mistake:
//! unknown names and functions, index variables that are misnamed, reordered or offset by
//! something other than an integer constant, wrong index counts, writes at an offset,
//! parameter types that are not floats, grids whose dimension count differs from the
//! kernel's, reductions read, given a value by the wrong statement (`s += v;` for a `Sum`,
//! `m = min(m, v);` / `m = max(m, v);` for a `Min` / `Max`) or declared with another element
//! type than the kernel's (the builder gives a reduction the kernel's). Everything the IR *can* express (writing an input, reading an output, radius,
//! duplicate names, mixed element types, outputs written twice or never, an empty body) is
//! left to the verifier, run by [`lower`](crate::lower), so a valid kernel is defined once.
//!
//! Calls to helpers are inlined here: the helper's body is checked in a scope of its own
//! (its grid parameters bound to the caller's grids, shifted by the argument's offsets; its
//! value parameters and `let`s bound to `let`s of the kernel, placed before the statement that
//! makes the call), with the caller's index variables. Finite-difference operators expand
//! here likewise ([`finite_difference`]).
//!
//! The index variables are those the first store names; a kernel without stores (only
//! reductions) takes them from its first read that names one variable per dimension, else
//! `i, j, k, l`.
//!
//! Every problem is reported; the result is always a [`CheckedKernel`], with placeholders
//! where something could not be resolved.

mod expr;
pub mod finite_difference;
mod helpers;
mod inline;

pub use crate::functions::function_list;
pub use crate::origin::Origin;
pub use helpers::{Helpers, check as check_helpers};

/// The most operations a kernel may expand to once its helpers are inlined and its
/// finite-difference operators expanded (each read, constant, operator and call counts one).
/// A helper is inlined in full at every call, so helpers that call each other several times
/// grow exponentially: forty helpers each calling the one before twice would expand to 2^40
/// operations. Past this limit validation stops with an error at the call.
pub const MAX_EXPANDED_OPERATIONS: usize = 100_000;

use std::collections::HashMap;

use proc_macro2::Ident;
use stencil_core::{ElemType, MAX_DIMS, ReduceOp, Role, VerifyErrorKind};
use syn::ext::IdentExt;

use crate::checked::{
    CheckedExpr, CheckedExprKind, CheckedKernel, CheckedStmt, FieldDecl, ParamDecl, ReductionDecl,
};
use crate::diagnostic::{Diagnostics, SpanRange};
use crate::model::{self, ArgKind, ExprKind, IndexKind};

/// What a name in the body refers to.
#[derive(Clone, Copy, Debug)]
enum Binding {
    /// A grid (a kernel's, or a helper's grid parameter: the caller's grid, shifted).
    Field(usize, Shift),
    Param(usize),
    /// A reduction (written by its statement only, never read).
    Reduction(usize),
    Let(usize),
    /// A helper's value parameter given a constant.
    Const(f64),
    /// A declaration that is itself wrong (already reported, or left to the verifier).
    Invalid,
}

/// The displacement of a grid passed to a helper as `u[i + 1, j]`: offsets within the helper
/// add to it.
#[derive(Clone, Copy, Debug)]
struct Shift {
    /// The displacement, one entry per dimension.
    offset: [i64; MAX_DIMS],
    /// Where the shifted argument is written (`None` for a kernel's own grid).
    at: Option<SpanRange>,
}

impl Shift {
    const NONE: Shift = Shift {
        offset: [0; MAX_DIMS],
        at: None,
    };
}

/// Kernel-wide facts the body checks need.
struct Context<'d> {
    n_dims: usize,
    /// Index variable names from the first store, when it names them properly.
    index_names: Option<Vec<String>>,
    fields: Vec<FieldDecl>,
    /// Per field, the dimensions along which it is staggered (`#[stagger(..)]`).
    staggered: Vec<[bool; MAX_DIMS]>,
    reductions: Vec<ReductionDecl>,
    /// The kernel's element type.
    elem: ElemType,
    scope: HashMap<String, Binding>,
    n_lets: usize,
    degraded: bool,
    diagnostics: &'d mut Diagnostics,
    helpers: &'d Helpers,
    /// `let`s made by inlining (helper arguments and `let`s), to be placed before the
    /// statement being checked.
    pending: Vec<CheckedStmt>,
    /// The helpers being inlined, innermost last.
    inlining: Vec<String>,
    /// Where the outermost helper call being inlined is written (in the kernel's body).
    outermost_call: Option<SpanRange>,
    /// How many more operations the kernel may expand to ([`MAX_EXPANDED_OPERATIONS`]).
    budget: usize,
    /// Whether the budget ran out (reported once; everything after is a placeholder).
    exhausted: bool,
}

/// Checks `kernel`, reporting every problem, and resolves it; calls to `helpers` are inlined.
pub fn check(
    kernel: &model::Kernel,
    helpers: &Helpers,
    diagnostics: &mut Diagnostics,
) -> CheckedKernel {
    let name_range = SpanRange::of(&kernel.name);
    let first_field = kernel.args.iter().find_map(|a| match &a.kind {
        ArgKind::Field { elem, dims, .. } => Some((a, elem, dims)),
        _ => None,
    });
    let (n_dims, dims_range) = first_field.map_or((1, name_range), |(_, _, dims)| *dims);
    let elem_from = kernel
        .args
        .iter()
        .find_map(|a| match &a.kind {
            ArgKind::Field { elem, .. } | ArgKind::Scalar(elem) => elem.elem.map(|e| (e, a)),
            ArgKind::Reduction { .. } | ArgKind::Invalid => None,
        })
        .or_else(|| {
            kernel.args.iter().find_map(|a| match &a.kind {
                ArgKind::Reduction { elem, .. } => elem.elem.map(|e| (e, a)),
                _ => None,
            })
        });
    let elem = elem_from.map_or(ElemType::F64, |(e, _)| e);

    let mut context = Context {
        n_dims,
        index_names: None,
        fields: Vec::new(),
        staggered: Vec::new(),
        reductions: Vec::new(),
        elem,
        scope: HashMap::new(),
        n_lets: 0,
        degraded: false,
        diagnostics,
        helpers,
        pending: Vec::new(),
        inlining: Vec::new(),
        outermost_call: None,
        budget: MAX_EXPANDED_OPERATIONS,
        exhausted: false,
    };
    let params = context.declare_args(kernel, elem, elem_from.is_some(), first_field.map(|f| f.0));
    context.index_names = context.index_names_of_first_store(&kernel.body);
    if context.index_names.is_none()
        && !kernel
            .body
            .iter()
            .any(|s| matches!(s, model::Stmt::Store { .. }))
    {
        context.index_names = Some(
            index_names_of_first_read(&kernel.body, n_dims)
                .unwrap_or_else(|| default_names(n_dims)),
        );
    }
    let index_names = context
        .index_names
        .clone()
        .unwrap_or_else(|| default_names(n_dims));
    context.resolve_staggers(kernel, &index_names);
    if let Some(rotate) = &kernel.rotate {
        context.check_chain_staggers(rotate);
    }
    let mut body = Vec::new();
    for statement in &kernel.body {
        let checked = context.check_stmt(statement);
        body.append(&mut context.pending);
        body.push(checked);
    }
    CheckedKernel {
        name: kernel.name.unraw().to_string(),
        name_range,
        body_range: SpanRange::single(kernel.body_span),
        n_dims,
        dims_range,
        elem,
        index_names,
        fields: context.fields,
        params,
        reductions: context.reductions,
        body,
        degraded: context.degraded,
        fma: kernel.fma,
    }
}

/// The index variables of the first read in `body` that names `n_dims` distinct ones.
fn index_names_of_first_read(body: &[model::Stmt], n_dims: usize) -> Option<Vec<String>> {
    fn first(expr: &model::Expr, n_dims: usize) -> Option<Vec<String>> {
        match &expr.kind {
            ExprKind::Access { indices, .. } => {
                let names: Vec<String> = indices
                    .iter()
                    .map(|index| match &index.kind {
                        IndexKind::Var { var, .. } => Some(var.unraw().to_string()),
                        IndexKind::NonConstant { .. } => None,
                    })
                    .collect::<Option<_>>()?;
                let distinct = names
                    .iter()
                    .enumerate()
                    .all(|(k, name)| !names[..k].contains(name));
                (names.len() == n_dims && distinct).then_some(names)
            }
            ExprKind::Neg(arg) | ExprKind::Not(arg) => first(arg, n_dims),
            ExprKind::Binary { lhs, rhs, .. } => first(lhs, n_dims).or_else(|| first(rhs, n_dims)),
            ExprKind::Call { args, .. } => args.iter().find_map(|a| first(a, n_dims)),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => first(cond, n_dims)
                .or_else(|| first(then, n_dims))
                .or_else(|| first(otherwise, n_dims)),
            ExprKind::Number(_) | ExprKind::Name(_) | ExprKind::Invalid => None,
        }
    }
    body.iter().find_map(|s| match s {
        model::Stmt::Let { value, .. }
        | model::Stmt::Store { value, .. }
        | model::Stmt::AddAssign { value, .. }
        | model::Stmt::AssignName { value, .. } => first(value, n_dims),
    })
}

/// `i, j, k, l` (or `x4`, ... beyond), as the builder names indices by default.
/// At most [`MAX_DIMS`] names: a kernel with more dimensions is reported, and its indices
/// are not checked.
fn default_names(n_dims: usize) -> Vec<String> {
    (0..n_dims.min(MAX_DIMS))
        .map(|d| {
            ["i", "j", "k", "l"]
                .get(d)
                .map_or(format!("x{d}"), |s| (*s).to_string())
        })
        .collect()
}

impl Context<'_> {
    /// Whether the dimension count is one the IR supports (otherwise the verifier reports it
    /// and index checks would only add noise).
    fn dims_supported(&self) -> bool {
        (1..=MAX_DIMS).contains(&self.n_dims)
    }

    fn bind(&mut self, name: String, binding: Binding) {
        let binding = if self.scope.contains_key(&name) {
            // Two parameters with one name: the verifier reports it; uses resolve to nothing.
            self.degraded = true;
            Binding::Invalid
        } else {
            binding
        };
        self.scope.insert(name, binding);
    }

    fn declare_args(
        &mut self,
        kernel: &model::Kernel,
        elem: ElemType,
        elem_known: bool,
        first_field: Option<&model::Arg>,
    ) -> Vec<ParamDecl> {
        let mut params = Vec::new();
        for arg in &kernel.args {
            let name = arg.name.unraw().to_string();
            match &arg.kind {
                ArgKind::Field {
                    output,
                    elem: spec,
                    dims,
                } => {
                    let declared = spec.elem.unwrap_or_else(|| {
                        self.diagnostics
                            .error(spec.range, "a grid's element type must be `f32` or `f64`");
                        elem
                    });
                    if dims.0 != self.n_dims && self.dims_supported() {
                        let first = first_field.map_or_else(String::new, |f| f.name.to_string());
                        self.diagnostics.error(
                            dims.1,
                            format!(
                                "`{name}` is {}-dimensional but the kernel is {}-dimensional (like `{first}`)",
                                dims.0, self.n_dims
                            ),
                        );
                    }
                    let index = self.fields.len();
                    self.fields.push(FieldDecl {
                        name: name.clone(),
                        role: if *output { Role::Output } else { Role::Input },
                        elem: declared,
                        name_range: SpanRange::of(&arg.name),
                        elem_range: spec.range,
                    });
                    self.bind(name, Binding::Field(index, Shift::NONE));
                }
                ArgKind::Scalar(spec) => {
                    let declared = spec.elem.unwrap_or_else(|| {
                        let message = if elem_known {
                            format!(
                                "a parameter's type must be `{elem}`, the kernel's element type"
                            )
                        } else {
                            "a parameter's type must be `f32` or `f64`".to_string()
                        };
                        self.diagnostics.error(spec.range, message);
                        elem
                    });
                    let index = params.len();
                    params.push(ParamDecl {
                        name: name.clone(),
                        elem: declared,
                        name_range: SpanRange::of(&arg.name),
                        type_range: spec.range,
                    });
                    self.bind(name, Binding::Param(index));
                }
                ArgKind::Reduction { op, elem: spec } => {
                    match spec.elem {
                        None => self.diagnostics.error(
                            spec.range,
                            if elem_known {
                                format!(
                                    "a reduction's element type must be `{elem}`, the kernel's element type"
                                )
                            } else {
                                "a reduction's element type must be `f32` or `f64`".to_string()
                            },
                        ),
                        Some(found) if found != elem => self.diagnostics.error(
                            spec.range,
                            VerifyErrorKind::MixedElementTypes {
                                expected: elem,
                                found,
                            }
                            .to_string(),
                        ),
                        Some(_) => {}
                    }
                    let index = self.reductions.len();
                    self.reductions.push(ReductionDecl {
                        name: name.clone(),
                        op: *op,
                        name_range: SpanRange::of(&arg.name),
                        type_range: spec.range,
                    });
                    self.bind(name, Binding::Reduction(index));
                }
                ArgKind::Invalid => {
                    self.degraded = true;
                    self.bind(name, Binding::Invalid);
                }
            }
        }
        params
    }

    /// The index variables named by the first store, when it names `n_dims` distinct ones.
    fn index_names_of_first_store(&mut self, body: &[model::Stmt]) -> Option<Vec<String>> {
        let indices = body.iter().find_map(|s| match s {
            model::Stmt::Store { indices, .. } => Some(indices),
            model::Stmt::Let { .. }
            | model::Stmt::AddAssign { .. }
            | model::Stmt::AssignName { .. } => None,
        })?;
        let mut names: Vec<String> = Vec::new();
        for index in indices {
            let IndexKind::Var { var, .. } = &index.kind else {
                return None;
            };
            let name = var.unraw().to_string();
            if names.contains(&name) {
                self.diagnostics.error_at(
                    var,
                    format!("index variable `{name}` appears twice: each dimension needs its own"),
                );
                return None;
            }
            names.push(name);
        }
        (names.len() == self.n_dims).then_some(names)
    }

    fn check_stmt(&mut self, statement: &model::Stmt) -> CheckedStmt {
        match statement {
            model::Stmt::Let { name, value } => {
                let value = self.check_expr(value);
                let ident = name;
                let name = name.unraw().to_string();
                if self.index_names.as_ref().is_some_and(|n| n.contains(&name)) {
                    self.diagnostics.error_at(
                        ident,
                        format!("`{name}` is an index variable: give this temporary another name"),
                    );
                }
                let index = self.n_lets;
                self.n_lets += 1;
                // Shadowing is allowed, as in Rust.
                self.scope.insert(name.clone(), Binding::Let(index));
                CheckedStmt::Let { name, value }
            }
            model::Stmt::Store {
                target,
                indices,
                bracket,
                lhs,
                value,
            } => {
                let value = self.check_expr(value);
                let field = self.store_target(target, indices, *bracket);
                match field {
                    Some(field) => CheckedStmt::Store {
                        field,
                        lhs: *lhs,
                        value,
                    },
                    // Lowered as a `let` nobody reads, so the value is still verified.
                    None => unread(value),
                }
            }
            model::Stmt::AddAssign {
                target, op, value, ..
            } => {
                let value = self.check_expr(value);
                match self.reduction_target(target, "+=") {
                    Some((reduction, ReduceOp::Sum)) => CheckedStmt::Reduce {
                        reduction,
                        lhs: SpanRange::of(target),
                        value,
                    },
                    Some((_, other)) => {
                        let name = target.unraw();
                        let function = other.type_name().to_lowercase();
                        self.diagnostics.error(
                            *op,
                            format!(
                                "`{name}` is a `{}` reduction: give it its value with `{name} = {function}({name}, value);`",
                                other.type_name()
                            ),
                        );
                        unread(value)
                    }
                    None => unread(value),
                }
            }
            model::Stmt::AssignName {
                target,
                whole,
                value,
            } => self.assign_name(target, *whole, value),
        }
    }

    /// `m = min(m, value);` (or `max` for a `Max` reduction); anything else assigned to a
    /// plain name is reported.
    fn assign_name(
        &mut self,
        target: &Ident,
        whole: SpanRange,
        value: &model::Expr,
    ) -> CheckedStmt {
        let invalid = || {
            unread(CheckedExpr {
                kind: CheckedExprKind::Invalid,
                range: value.range,
            })
        };
        let Some((reduction, op)) = self.reduction_target(target, "=") else {
            return invalid();
        };
        let name = target.unraw().to_string();
        let function = match op {
            ReduceOp::Sum => {
                self.diagnostics.error(
                    whole,
                    format!(
                        "`{name}` is a `Sum` reduction: give it its value with `{name} += value;`"
                    ),
                );
                return invalid();
            }
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        };
        let form = format!(
            "`{name}` is a `{}` reduction: give it its value with `{name} = {function}({name}, value);`",
            op.type_name()
        );
        let is_target =
            |arg: &model::Expr| matches!(&arg.kind, ExprKind::Name(ident) if ident.unraw() == name);
        let ExprKind::Call { func, args } = &value.kind else {
            self.diagnostics.error(value.range, form);
            return invalid();
        };
        let called = func.unraw().to_string();
        if called != function && matches!(called.as_str(), "min" | "max") {
            self.diagnostics.error_at(func, form);
            return invalid();
        }
        let operand = match args.as_slice() {
            [a, b] if called == function && is_target(a) => b,
            [a, b] if called == function && is_target(b) => a,
            _ => {
                self.diagnostics.error(value.range, form);
                return invalid();
            }
        };
        CheckedStmt::Reduce {
            reduction,
            lhs: SpanRange::of(target),
            value: self.check_expr(operand),
        }
    }

    /// The reduction `target` names in a statement with operator `op` (`+=` or `=`), and its
    /// operation; `None` after reporting a name that is not a reduction.
    fn reduction_target(&mut self, target: &Ident, op: &str) -> Option<(usize, ReduceOp)> {
        let name = target.unraw().to_string();
        let message = match self.scope.get(&name).copied() {
            Some(Binding::Reduction(r)) => return Some((r, self.reductions[r].op)),
            Some(Binding::Invalid) => {
                self.degraded = true;
                return None;
            }
            Some(Binding::Field(..)) => {
                let point = self.point_of(&name);
                format!("`{name}` is a grid, not a reduction: write `{point} = value;`")
            }
            Some(Binding::Param(_)) => {
                format!("`{name}` is a parameter: only output grids and reductions can be written")
            }
            Some(Binding::Let(_) | Binding::Const(_)) => {
                format!("`{name}` is a temporary: only output grids and reductions can be written")
            }
            None if op == "+=" => format!(
                "unknown reduction `{name}`: declare it as a parameter, as in `{name}: &mut Sum<{}>`",
                self.elem
            ),
            None => format!(
                "unknown name `{name}`: only a grid point (`out[i, j] = value;`) or a reduction can be assigned"
            ),
        };
        self.diagnostics.error_at(target, message);
        None
    }

    /// The field a store writes, after checking its indices are the index variables at
    /// offset zero.
    fn store_target(
        &mut self,
        target: &proc_macro2::Ident,
        indices: &[model::Index],
        bracket: SpanRange,
    ) -> Option<usize> {
        let name = target.unraw().to_string();
        match self.scope.get(&name).copied() {
            Some(Binding::Field(field, _)) => {
                if let Some(offsets) = self.check_indices(&name, indices, bracket)
                    && offsets.iter().any(|&o| o != 0)
                {
                    let point = self.point_of(&name);
                    let at: Vec<SpanRange> = indices
                        .iter()
                        .zip(&offsets)
                        .filter(|(_, o)| **o != 0)
                        .map(|(index, _)| index.range)
                        .collect();
                    let first = at.first().copied().unwrap_or(bracket);
                    let range = first.to(at.last().copied().unwrap_or(bracket));
                    self.diagnostics.error(
                        range,
                        format!("outputs are written at offset zero: write `{point}`"),
                    );
                }
                Some(field)
            }
            Some(Binding::Param(_)) => {
                self.diagnostics.error_at(
                    target,
                    format!("`{name}` is a parameter: only output grids can be written"),
                );
                None
            }
            Some(Binding::Let(_) | Binding::Const(_)) => {
                self.diagnostics.error_at(
                    target,
                    format!("`{name}` is a temporary: only output grids can be written"),
                );
                None
            }
            Some(Binding::Reduction(r)) => {
                let form = match self.reductions[r].op {
                    ReduceOp::Sum => format!("{name} += value;"),
                    ReduceOp::Min => format!("{name} = min({name}, value);"),
                    ReduceOp::Max => format!("{name} = max({name}, value);"),
                };
                self.diagnostics.error_at(
                    target,
                    format!("`{name}` is a reduction, not a grid: give it its value with `{form}`"),
                );
                None
            }
            Some(Binding::Invalid) => {
                self.degraded = true;
                None
            }
            None => {
                self.diagnostics
                    .error_at(target, format!("unknown grid `{name}`"));
                None
            }
        }
    }

    /// `name[i, j, k]` with this kernel's index variables.
    fn point_of(&self, name: &str) -> String {
        let names = self
            .index_names
            .clone()
            .unwrap_or_else(|| default_names(self.n_dims));
        let staggered = match self.scope.get(name) {
            Some(Binding::Field(field, _)) => self.stagger_of(*field),
            _ => [false; MAX_DIMS],
        };
        let names: Vec<String> = names
            .into_iter()
            .zip(staggered)
            .map(|(n, half)| if half { format!("{n} + 1/2") } else { n })
            .collect();
        format!("{name}[{}]", names.join(", "))
    }

    /// Reports a rotation chain whose grids are not staggered alike: a grid becomes the next
    /// one in its chain each step, so their points must sit at the same places.
    fn check_chain_staggers(&mut self, rotate: &model::Rotate) {
        for chain in &rotate.chains {
            let mut first: Option<(String, [bool; MAX_DIMS])> = None;
            for name in chain {
                let found = name.unraw().to_string();
                let Some(Binding::Field(field, _)) = self.scope.get(&found).copied() else {
                    continue;
                };
                let stagger = self.stagger_of(field);
                match &first {
                    None => first = Some((found, stagger)),
                    Some((head, expected)) if *expected != stagger => {
                        self.diagnostics.error_at(
                            name,
                            format!(
                                "`{found}` and `{head}` rotate into each other but are not \
                                 staggered alike: give them the same `#[stagger(..)]`"
                            ),
                        );
                    }
                    Some(_) => {}
                }
            }
        }
    }

    /// The dimensions along which field `field` is staggered (none before they are resolved).
    fn stagger_of(&self, field: usize) -> [bool; MAX_DIMS] {
        self.staggered
            .get(field)
            .copied()
            .unwrap_or([false; MAX_DIMS])
    }

    /// Fills `staggered` from each grid parameter's `#[stagger(..)]`, reporting names that are
    /// not among the kernel's `index_names`.
    fn resolve_staggers(&mut self, kernel: &model::Kernel, index_names: &[String]) {
        let grids = kernel
            .args
            .iter()
            .filter(|a| matches!(a.kind, ArgKind::Field { .. }));
        for arg in grids {
            let mut staggered = [false; MAX_DIMS];
            for var in arg.stagger.iter().flat_map(|s| &s.dims) {
                let found = var.unraw().to_string();
                match index_names.iter().position(|n| *n == found) {
                    Some(dim) if dim < MAX_DIMS => staggered[dim] = true,
                    _ => self.diagnostics.error_at(
                        var,
                        format!(
                            "`{found}` is not an index variable of this kernel (`{}`)",
                            index_names.join(", ")
                        ),
                    ),
                }
            }
            self.staggered.push(staggered);
        }
    }
}

/// A statement whose value is checked and verified but read by nobody (the placeholder for a
/// statement reported as wrong).
fn unread(value: CheckedExpr) -> CheckedStmt {
    CheckedStmt::Let {
        name: "_".to_string(),
        value,
    }
}

#[cfg(test)]
mod helper_tests;
#[cfg(test)]
mod tests;
