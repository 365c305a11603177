//! Helpers checked on their own, once per `stencil!` block: names, arity, recursion, and
//! which parameters are grids.
//!
//! A parameter is a *grid* when the body indexes it (`u[i - 1, j]`), passes it to a grid
//! parameter of another helper or to a finite-difference operator; otherwise it is a *value*.
//! Everything that does not depend on the calling kernel is reported here, once, and the
//! helper is then marked broken so calls to it add no errors of their own. What depends on
//! the caller (its index variables, offsets composed with a shifted grid argument) is checked
//! when a kernel inlines the helper ([`expr`](super::expr)).

use std::collections::HashMap;

use proc_macro2::Ident;
use syn::ext::IdentExt;

use crate::diagnostic::{Diagnostics, SpanRange};
use crate::functions::{Operator, built_in_arity, is_built_in, order_of, unknown_function};
use crate::model::{self, Expr, ExprKind};
use crate::origin::Origin;

/// What a helper's parameter is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ParamKind {
    /// A grid, possibly shifted (`u` or `u[i + 1, j]` at the call).
    Grid,
    /// A value.
    Value,
}

/// One checked helper.
pub struct Helper {
    /// The helper as written.
    pub model: model::Helper,
    /// What each parameter is.
    pub kinds: Vec<ParamKind>,
    /// Whether it has an error already reported (calls to it are then placeholders).
    pub broken: bool,
    /// About how many operations one call expands to, the helpers it calls inlined in turn
    /// (saturating), so a call past the expansion limit is refused before it is inlined.
    pub expanded: usize,
}

/// The helpers of one `stencil!` block (or kernel text), by name.
#[derive(Default)]
pub struct Helpers {
    list: Vec<Helper>,
    by_name: HashMap<String, usize>,
    origin: Origin,
}

impl Helpers {
    /// The helper called `name`.
    pub fn get(&self, name: &str) -> Option<&Helper> {
        self.by_name.get(name).map(|&h| &self.list[h])
    }

    /// Where the helpers (and the kernels calling them) are written.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The helpers' names, sorted.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// One use of a helper parameter in a body.
enum Use {
    /// Indexed, or given to a finite-difference operator.
    Grid,
    /// Used as a value.
    Value(SpanRange),
    /// Given as argument `position` to helper `callee`.
    Passed {
        callee: String,
        position: usize,
        at: SpanRange,
    },
}

/// A call from one helper to another.
struct Call {
    callee: String,
    at: SpanRange,
}

/// What walking one body found.
#[derive(Default)]
struct Walk {
    uses: HashMap<usize, Vec<Use>>,
    calls: Vec<Call>,
    /// Arguments in grid position of a helper call that are not a parameter's name or a
    /// shifted one: (callee, position, where).
    other_args: Vec<(String, usize, SpanRange)>,
    broken: bool,
}

/// Checks every helper of a block (written where `origin` says), reporting each mistake once.
pub fn check(list: Vec<model::Helper>, origin: Origin, diagnostics: &mut Diagnostics) -> Helpers {
    let mut helpers = Helpers {
        origin,
        ..Helpers::default()
    };
    let mut arities = HashMap::new();
    for helper in &list {
        let name = helper.name.unraw().to_string();
        if is_built_in(&name) {
            diagnostics.error_at(
                &helper.name,
                format!("`{name}` is a built-in function: give the helper another name"),
            );
        } else if let std::collections::hash_map::Entry::Vacant(entry) = arities.entry(name) {
            entry.insert(helper.params.len());
        } else {
            let name = helper.name.unraw();
            diagnostics.error_at(
                &helper.name,
                format!("the helper `{name}` is defined twice"),
            );
        }
    }
    let walks: Vec<Walk> = list
        .iter()
        .map(|helper| walk_helper(helper, &arities, origin, diagnostics))
        .collect();
    for (index, helper) in list.iter().enumerate() {
        let name = helper.name.unraw().to_string();
        helpers.by_name.entry(name).or_insert(index);
    }
    let mut broken: Vec<bool> = walks.iter().map(|w| w.broken).collect();
    report_recursion(&list, &walks, &helpers.by_name, &mut broken, diagnostics);
    let kinds = infer_kinds(&list, &walks, &helpers.by_name);
    for (index, walk) in walks.iter().enumerate() {
        if check_uses(
            &list[index],
            &kinds[index],
            walk,
            &kinds,
            &helpers.by_name,
            diagnostics,
        ) {
            broken[index] = true;
        }
    }
    let expanded = expanded_sizes(&list, &walks, &helpers.by_name);
    helpers.list = list
        .into_iter()
        .zip(kinds)
        .zip(broken)
        .zip(expanded)
        .map(|(((model, kinds), broken), expanded)| Helper {
            model,
            kinds,
            broken,
            expanded,
        })
        .collect();
    helpers
}

fn walk_helper(
    helper: &model::Helper,
    arities: &HashMap<String, usize>,
    origin: Origin,
    diagnostics: &mut Diagnostics,
) -> Walk {
    let mut walker = Walker {
        helper_name: helper.name.unraw().to_string(),
        params: helper
            .params
            .iter()
            .map(|p| p.unraw().to_string())
            .collect(),
        lets: Vec::new(),
        arities,
        origin,
        walk: Walk::default(),
        diagnostics,
    };
    let mut seen = Vec::new();
    for param in &helper.params {
        let name = param.unraw().to_string();
        if seen.contains(&name) {
            walker.error(
                SpanRange::of(param),
                format!("the parameter `{name}` is declared twice"),
            );
        }
        seen.push(name);
    }
    for (name, value) in &helper.lets {
        walker.expr(value);
        walker.lets.push(name.unraw().to_string());
    }
    walker.expr(&helper.value);
    if matches!(helper.value.kind, ExprKind::Invalid) {
        walker.walk.broken = true;
    }
    walker.walk
}

struct Walker<'a> {
    helper_name: String,
    params: Vec<String>,
    lets: Vec<String>,
    arities: &'a HashMap<String, usize>,
    origin: Origin,
    walk: Walk,
    diagnostics: &'a mut Diagnostics,
}

impl Walker<'_> {
    fn error(&mut self, range: SpanRange, message: String) {
        self.walk.broken = true;
        self.diagnostics.error(range, message);
    }

    /// The parameter `ident` names, unless a `let` shadows it.
    fn param(&self, ident: &Ident) -> Option<usize> {
        let name = ident.unraw().to_string();
        if self.lets.contains(&name) {
            return None;
        }
        self.params.iter().position(|p| *p == name)
    }

    fn record(&mut self, param: usize, used: Use) {
        self.walk.uses.entry(param).or_default().push(used);
    }

    fn expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Number(_) => {}
            ExprKind::Invalid => self.walk.broken = true,
            ExprKind::Name(ident) => self.name(ident, expr.range),
            ExprKind::Access { base, .. } => self.grid(base),
            ExprKind::Neg(arg) | ExprKind::Not(arg) => self.expr(arg),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.expr(then);
                self.expr(otherwise);
            }
            ExprKind::Call { func, args } => self.call(func, args, expr.range),
        }
    }

    fn name(&mut self, ident: &Ident, range: SpanRange) {
        let name = ident.unraw().to_string();
        if let Some(param) = self.param(ident) {
            self.record(param, Use::Value(range));
        } else if !self.lets.contains(&name) {
            let helper = &self.helper_name;
            let message = format!(
                "unknown name `{name}`: the helper `{helper}` sees only its parameters and its `let`s"
            );
            self.error(range, message);
        }
    }

    /// `base` is read as a grid (indexed, or given to an operator or a grid parameter).
    fn grid(&mut self, base: &Ident) {
        let name = base.unraw().to_string();
        if let Some(param) = self.param(base) {
            self.record(param, Use::Grid);
        } else {
            let helper = &self.helper_name;
            let what = if self.lets.contains(&name) {
                format!("`{name}` is a temporary, not a grid")
            } else {
                format!(
                    "unknown grid `{name}`: the helper `{helper}` reads only grids passed to it"
                )
            };
            self.error(SpanRange::of(base), what);
        }
    }

    fn call(&mut self, func: &Ident, args: &[Expr], range: SpanRange) {
        let name = func.unraw().to_string();
        if let Some(&arity) = self.arities.get(&name) {
            self.walk.calls.push(Call {
                callee: name.clone(),
                at: SpanRange::of(func),
            });
            if args.len() != arity {
                self.error(range, arity_message(&name, arity, arity, args.len()));
                return;
            }
            for (position, arg) in args.iter().enumerate() {
                match &arg.kind {
                    ExprKind::Name(ident) if self.param(ident).is_some() => {
                        let param = self.param(ident).unwrap_or_default();
                        self.record(
                            param,
                            Use::Passed {
                                callee: name.clone(),
                                position,
                                at: arg.range,
                            },
                        );
                    }
                    ExprKind::Access { base, .. } => self.grid(base),
                    _ => {
                        self.walk
                            .other_args
                            .push((name.clone(), position, arg.range));
                        self.expr(arg);
                    }
                }
            }
            return;
        }
        let Some((low, high)) = built_in_arity(&name) else {
            let mut helpers: Vec<&str> = self.arities.keys().map(String::as_str).collect();
            helpers.sort_unstable();
            let message = unknown_function(&name, &helpers, self.origin);
            self.error(SpanRange::of(func), message);
            return;
        };
        if !(low..=high).contains(&args.len()) {
            self.error(range, arity_message(&name, low, high, args.len()));
            return;
        }
        let Some(op) = Operator::from_name(&name) else {
            for arg in args {
                self.expr(arg);
            }
            return;
        };
        match &args[0].kind {
            ExprKind::Name(ident) | ExprKind::Access { base: ident, .. } => self.grid(ident),
            _ => self.error(args[0].range, grid_expected(&name, 0)),
        }
        let spacing = op.spacing_position();
        self.expr(&args[spacing]);
        if let Err(message) = order_of(op, args.get(spacing + 1)) {
            let at = args[spacing + 1].range;
            self.error(at, message);
        }
    }
}

/// "`f` takes 2 arguments, found 3".
pub(crate) fn arity_message(name: &str, low: usize, high: usize, found: usize) -> String {
    let plural = if high == 1 { "" } else { "s" };
    if low == high {
        format!("`{name}` takes {low} argument{plural}, found {found}")
    } else {
        format!("`{name}` takes {low} or {high} arguments, found {found}")
    }
}

/// The message for something other than a grid given where `callee` takes one.
pub(crate) fn grid_expected(callee: &str, position: usize) -> String {
    format!(
        "`{callee}` takes a grid as argument {}: pass a grid's name, as in `u`, or a shifted grid, as in `u[i + 1, j]`",
        position + 1
    )
}

/// Operations an expanded finite-difference operator counts at most (4 dimensions, order 8).
pub(crate) const OPERATOR_SIZE: usize = 6 * 4 * 5 + 6;

/// How many operations one call of each helper expands to: its own expressions, plus the
/// expansion of every helper and operator it calls (saturating; a helper in a cycle counts
/// the others of the cycle as nothing, it is reported and never inlined).
fn expanded_sizes(
    list: &[model::Helper],
    walks: &[Walk],
    by_name: &HashMap<String, usize>,
) -> Vec<usize> {
    fn own(expr: &Expr) -> usize {
        // Without recursion: a body may nest as deep as its text is long.
        let mut count = 0usize;
        let mut pending = vec![expr];
        while let Some(expr) = pending.pop() {
            count = count.saturating_add(1);
            match &expr.kind {
                ExprKind::Neg(arg) | ExprKind::Not(arg) => pending.push(arg),
                ExprKind::Binary { lhs, rhs, .. } => pending.extend([&**lhs, &**rhs]),
                ExprKind::If {
                    cond,
                    then,
                    otherwise,
                } => pending.extend([&**cond, &**then, &**otherwise]),
                ExprKind::Call { func, args } => {
                    if Operator::from_name(&func.unraw().to_string()).is_some() {
                        count = count.saturating_add(OPERATOR_SIZE);
                    }
                    pending.extend(args);
                }
                ExprKind::Number(_)
                | ExprKind::Name(_)
                | ExprKind::Access { .. }
                | ExprKind::Invalid => {}
            }
        }
        count
    }
    let own_sizes: Vec<usize> = list
        .iter()
        .map(|h| {
            h.lets
                .iter()
                .map(|(_, value)| own(value))
                .fold(own(&h.value), usize::saturating_add)
        })
        .collect();
    // Depth-first, callees before callers, without recursion; `None` while being computed.
    let mut sizes: Vec<Option<usize>> = vec![None; list.len()];
    let mut started = vec![false; list.len()];
    for root in 0..list.len() {
        let mut stack = vec![root];
        while let Some(&h) = stack.last() {
            if sizes[h].is_some() {
                stack.pop();
                continue;
            }
            let callees = walks[h]
                .calls
                .iter()
                .filter_map(|c| by_name.get(&c.callee).copied());
            if !started[h] {
                started[h] = true;
                stack.extend(callees.filter(|&c| !started[c]));
                continue;
            }
            let total = callees.fold(own_sizes[h], |total, c| {
                total.saturating_add(sizes[c].unwrap_or(0))
            });
            sizes[h] = Some(total);
            stack.pop();
        }
    }
    sizes.into_iter().map(|s| s.unwrap_or(0)).collect()
}

/// Reports each cycle of calls once, at the call that closes it.
fn report_recursion(
    list: &[model::Helper],
    walks: &[Walk],
    by_name: &HashMap<String, usize>,
    broken: &mut [bool],
    diagnostics: &mut Diagnostics,
) {
    let callees = |h: usize| -> Vec<(usize, SpanRange)> {
        walks[h]
            .calls
            .iter()
            .filter_map(|c| by_name.get(&c.callee).map(|&g| (g, c.at)))
            .collect()
    };
    let mut reported = vec![false; list.len()];
    for start in 0..list.len() {
        if reported[start] {
            continue;
        }
        // Depth-first search for a path of calls from `start` back to `start`.
        let mut path: Vec<(usize, SpanRange)> = Vec::new();
        let mut stack = vec![(start, callees(start), 0usize)];
        let mut visited = vec![false; list.len()];
        let mut cycle = None;
        while let Some((node, edges, next)) = stack.last_mut() {
            let node = *node;
            let Some(&(callee, at)) = edges.get(*next) else {
                stack.pop();
                path.pop();
                continue;
            };
            *next += 1;
            if callee == start {
                path.push((node, at));
                cycle = Some(path.clone());
                break;
            }
            if !visited[callee] {
                visited[callee] = true;
                path.push((node, at));
                let edges = callees(callee);
                stack.push((callee, edges, 0));
            }
        }
        let Some(cycle) = cycle else { continue };
        for &(h, _) in &cycle {
            reported[h] = true;
            broken[h] = true;
        }
        let names: Vec<String> = cycle
            .iter()
            .map(|&(h, _)| format!("`{}`", list[h].name.unraw()))
            .collect();
        let first = &names[0];
        let message = if cycle.len() == 1 {
            format!("{first} calls itself: helpers are inlined, so they cannot be recursive")
        } else {
            format!(
                "{first} calls itself through {}: helpers are inlined, so they cannot be recursive",
                names[1..].join(", ")
            )
        };
        diagnostics.error(cycle[0].1, message);
    }
}

/// Each helper's parameter kinds: grids where used as grids, directly or through calls.
fn infer_kinds(
    list: &[model::Helper],
    walks: &[Walk],
    by_name: &HashMap<String, usize>,
) -> Vec<Vec<ParamKind>> {
    let mut kinds: Vec<Vec<ParamKind>> = list
        .iter()
        .map(|h| vec![ParamKind::Value; h.params.len()])
        .collect();
    // Each pass marks at least one more grid or stops; at most one pass per parameter.
    loop {
        let mut changed = false;
        for (h, walk) in walks.iter().enumerate() {
            for (&param, uses) in &walk.uses {
                if kinds[h][param] == ParamKind::Grid {
                    continue;
                }
                let is_grid = uses.iter().any(|u| match u {
                    Use::Grid => true,
                    Use::Value(_) => false,
                    Use::Passed {
                        callee, position, ..
                    } => by_name
                        .get(callee)
                        .and_then(|&g| kinds[g].get(*position))
                        .is_some_and(|k| *k == ParamKind::Grid),
                });
                if is_grid {
                    kinds[h][param] = ParamKind::Grid;
                    changed = true;
                }
            }
        }
        if !changed {
            return kinds;
        }
    }
}

/// Reports grid parameters used as values, and non-grids passed as grids; whether any.
fn check_uses(
    helper: &model::Helper,
    own: &[ParamKind],
    walk: &Walk,
    kinds: &[Vec<ParamKind>],
    by_name: &HashMap<String, usize>,
    diagnostics: &mut Diagnostics,
) -> bool {
    let kind_at = |callee: &str, position: usize| {
        by_name
            .get(callee)
            .and_then(|&g| kinds[g].get(position).copied())
    };
    let mut any = false;
    let mut params: Vec<_> = walk.uses.iter().collect();
    params.sort_by_key(|(p, _)| **p);
    for (&param, uses) in params {
        if own.get(param) != Some(&ParamKind::Grid) {
            continue;
        }
        let name = helper.params[param].unraw();
        for used in uses {
            let at = match used {
                Use::Value(at) => Some(*at),
                Use::Passed {
                    callee,
                    position,
                    at,
                } if kind_at(callee, *position) == Some(ParamKind::Value) => Some(*at),
                _ => None,
            };
            if let Some(at) = at {
                diagnostics.error(
                    at,
                    format!(
                        "`{name}` is a grid in this helper (it is read or passed as a grid): read it at a point, as in `{name}[i, ...]`"
                    ),
                );
                any = true;
                break;
            }
        }
    }
    for (callee, position, at) in &walk.other_args {
        if kind_at(callee, *position) == Some(ParamKind::Grid) {
            diagnostics.error(*at, grid_expected(callee, *position));
            any = true;
        }
    }
    any
}
