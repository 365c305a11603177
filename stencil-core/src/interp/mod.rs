//! The reference interpreter: the oracle every backend is checked against.
//!
//! Obviously correct before fast: it visits every interior point in C order and, for each
//! statement in order, evaluates the expressions the statement needs in arena order (operands
//! have smaller ids than their users in a verified kernel, and a `let` reference reads the
//! value its defining statement stored earlier at the same point). Arithmetic is done in the
//! element type `T` (f32 kernels compute in f32), constants are converted with
//! [`Element::from_f64`], and every math function goes through the [`Element`] methods, so the
//! interpreter, the CPU backends and the constant folder share one definition of each.
//!
//! Both branches of a select and both sides of `&&`/`||` are evaluated (expressions have no
//! side effects). Comparisons follow IEEE: any comparison with NaN is false except `!=`.
//!
//! Assumes a verified kernel and grids that fit it (a [`Job`] guarantees both); a mismatch is
//! a broken invariant and panics.

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use crate::element::Element;
use crate::ir::{
    BinaryOp, CmpOp, Expr, ExprId, Kernel, LogicOp, MAX_DIMS, ReduceOp, Role, Stmt, UnaryOp,
};
use crate::job::Job;
use crate::reduce;
use crate::view::{FieldView, FieldViewMut, Geometry};

/// Runs `kernel` over every interior point of the outputs (reductions are computed and
/// dropped; [`run_reducing`] returns them).
///
/// `inputs`, `outputs` and `params` are in the kernel's declaration order of each kind. Only
/// interior points of the outputs are written.
///
/// # Panics
/// As [`run_reducing`].
pub fn run<T: Element>(
    kernel: &Kernel,
    inputs: &[FieldView<'_, T>],
    outputs: &mut [FieldViewMut<'_, T>],
    params: &[T],
) {
    run_reducing(kernel, inputs, outputs, params);
}

/// Runs `kernel` over every interior point, writing the outputs' interior points and
/// returning the kernel's reductions in declaration order, each combined in the order
/// [`crate::reduce`] defines (rows in C order, blocks of a row, lanes of a block, a pairwise
/// tree over the blocks).
///
/// # Panics
/// If the kernel's element type is not `T`, the argument counts differ from the kernel's, the
/// grids differ in dimension count or interior shape, or a read falls outside an input's halo
/// (all of which [`Job::new`] rules out).
pub fn run_reducing<T: Element>(
    kernel: &Kernel,
    inputs: &[FieldView<'_, T>],
    outputs: &mut [FieldViewMut<'_, T>],
    params: &[T],
) -> Vec<T> {
    run_at_step(kernel, inputs, outputs, params, 0)
}

/// [`run_reducing`] at step number `step`: the value the kernel reads as `step()`
/// ([`Expr::Step`]), which [`run`] and [`run_reducing`] take as 0. A time loop's step `n`
/// runs its kernel with `step = n`.
///
/// # Panics
/// As [`run_reducing`].
pub fn run_at_step<T: Element>(
    kernel: &Kernel,
    inputs: &[FieldView<'_, T>],
    outputs: &mut [FieldViewMut<'_, T>],
    params: &[T],
    step: u64,
) -> Vec<T> {
    let plan = Plan::new(kernel);
    plan.check_arguments::<T>(
        kernel,
        [inputs.len(), outputs.len(), params.len()],
        inputs
            .iter()
            .map(|v| v.geom)
            .chain(outputs.iter().map(|v| v.geom)),
    );
    let mut shape = [1usize; MAX_DIMS];
    let first = outputs
        .first()
        .map(|v| v.geom)
        .or_else(|| inputs.first().map(|v| v.geom))
        .unwrap_or_else(|| broken(kernel, "a kernel with no grid"));
    shape[..kernel.n_dims].copy_from_slice(first.interior());
    let ops: Vec<ReduceOp> = kernel.reductions.iter().map(|r| r.op).collect();
    if shape.contains(&0) {
        return ops.iter().map(|&op| reduce::identity(op)).collect();
    }
    let row_len = shape[kernel.n_dims - 1];
    // Per reduction: the current row's values, and every block's value so far.
    let mut rows: Vec<Vec<T>> = vec![Vec::with_capacity(row_len); ops.len()];
    let mut partials: Vec<Vec<T>> = vec![Vec::new(); ops.len()];
    let mut state = PointState::new(kernel);
    state.step = step;
    let mut point = [0isize; MAX_DIMS];
    loop {
        plan.eval(
            kernel,
            (inputs, outputs),
            params,
            &point[..kernel.n_dims],
            &mut state,
        );
        for (slot, view) in outputs.iter_mut().enumerate() {
            view.set(&point[..kernel.n_dims], state.stored[slot]);
        }
        for (row, &value) in rows.iter_mut().zip(&state.reduced) {
            row.push(value);
        }
        if point[kernel.n_dims - 1] as usize + 1 == row_len {
            for ((row, blocks), &op) in rows.iter_mut().zip(&mut partials).zip(&ops) {
                reduce::push_row_blocks(op, row, blocks);
                row.clear();
            }
        }
        // Advance the C-order odometer: the last dimension moves fastest.
        let mut d = kernel.n_dims;
        loop {
            if d == 0 {
                return partials
                    .iter()
                    .zip(&ops)
                    .map(|(blocks, &op)| reduce::tree(op, blocks))
                    .collect();
            }
            d -= 1;
            point[d] += 1;
            if (point[d] as usize) < shape[d] {
                break;
            }
            point[d] = 0;
        }
    }
}

/// Runs a validated [`Job`] with the interpreter, storing its reductions in the job.
pub fn run_job<T: Element>(job: &mut Job<'_, T>) {
    let kernel = job.kernel();
    let step = job.step();
    let (inputs, outputs, params) = job.parts_mut();
    let reduced = run_at_step(kernel, inputs, outputs, params, step);
    for (r, value) in reduced.into_iter().enumerate() {
        job.set_reduction(r, value);
    }
}

/// The values `kernel` stores at `point` (interior coordinates, one per dimension), one per
/// output in declaration order. Nothing is written. Meant for diagnostics (explaining one
/// mismatching point); it re-plans the kernel on every call, so use [`run`] for whole grids.
///
/// # Panics
/// As [`run`], and if `point` does not have `kernel.n_dims` entries.
pub fn eval_point<T: Element>(
    kernel: &Kernel,
    inputs: &[FieldView<'_, T>],
    params: &[T],
    point: &[isize],
) -> Vec<T> {
    assert_eq!(
        point.len(),
        kernel.n_dims,
        "interp: point {point:?} for a {}-D kernel",
        kernel.n_dims
    );
    let plan = Plan::new(kernel);
    let n_outputs = plan.output_slot.iter().flatten().count();
    plan.check_arguments::<T>(
        kernel,
        [inputs.len(), n_outputs, params.len()],
        inputs.iter().map(|v| v.geom),
    );
    let mut state = PointState::new(kernel);
    plan.eval(kernel, (inputs, &[]), params, point, &mut state);
    state.stored
}

/// A value of the expression language.
#[derive(Clone, Copy, Debug)]
enum Value<T> {
    Real(T),
    Bool(bool),
}

impl<T: Element> Value<T> {
    fn real(self, kernel: &Kernel, id: ExprId) -> T {
        match self {
            Value::Real(v) => v,
            Value::Bool(_) => broken(kernel, &format!("%{} is boolean", id.index())),
        }
    }

    fn boolean(self, kernel: &Kernel, id: ExprId) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Real(_) => broken(kernel, &format!("%{} is not boolean", id.index())),
        }
    }
}

/// Per-kernel facts computed once: what each statement needs and where each field lives in
/// the argument lists.
struct Plan {
    /// Per statement: the expressions its value needs, ascending (stopping at `let` refs).
    needed: Vec<Vec<ExprId>>,
    /// Per field: position among the inputs, if an input.
    input_slot: Vec<Option<usize>>,
    /// Per field: position among the outputs, if an output.
    output_slot: Vec<Option<usize>>,
}

/// Scratch state of one point's evaluation.
struct PointState<T> {
    values: Vec<Option<Value<T>>>,
    lets: Vec<Option<T>>,
    stored: Vec<T>,
    reduced: Vec<T>,
    /// The step number the kernel reads ([`Expr::Step`]).
    step: u64,
}

impl<T: Element> PointState<T> {
    fn new(kernel: &Kernel) -> Self {
        PointState {
            values: vec![None; kernel.exprs.len()],
            lets: vec![None; kernel.lets.len()],
            stored: vec![T::NAN; kernel.outputs().count()],
            reduced: vec![T::NAN; kernel.reductions.len()],
            step: 0,
        }
    }
}

impl Plan {
    fn new(kernel: &Kernel) -> Plan {
        let slots = |role: Role| {
            let mut next = 0;
            kernel
                .fields
                .iter()
                .map(|f| {
                    (f.role == role).then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect::<Vec<_>>()
        };
        let needed = kernel
            .body
            .iter()
            .map(|stmt| {
                let root = stmt.value();
                let mut seen = vec![false; kernel.exprs.len()];
                let mut stack = vec![root];
                while let Some(id) = stack.pop() {
                    if !std::mem::replace(&mut seen[id.index()], true) {
                        stack.extend(kernel.expr(id).operands());
                    }
                }
                (0..kernel.exprs.len())
                    .filter(|&i| seen[i])
                    .map(ExprId::new)
                    .collect()
            })
            .collect();
        Plan {
            needed,
            input_slot: slots(Role::Input),
            output_slot: slots(Role::Output),
        }
    }

    /// Panics unless the arguments fit `kernel` (see [`run`]).
    fn check_arguments<T: Element>(
        &self,
        kernel: &Kernel,
        counts: [usize; 3],
        geoms: impl Iterator<Item = Geometry>,
    ) {
        assert_eq!(
            kernel.elem(),
            T::ELEM,
            "interp: kernel `{}` is not of element type {}",
            kernel.name,
            T::ELEM
        );
        let expected = [
            self.input_slot.iter().flatten().count(),
            self.output_slot.iter().flatten().count(),
            kernel.params.len(),
        ];
        assert_eq!(
            counts, expected,
            "interp: kernel `{}` takes [inputs, outputs, params] = {expected:?}",
            kernel.name
        );
        let mut first: Option<Geometry> = None;
        for g in geoms {
            assert_eq!(
                g.n_dims, kernel.n_dims,
                "interp: grid of the wrong dimension"
            );
            let f = *first.get_or_insert(g);
            assert_eq!(g.interior(), f.interior(), "interp: grids differ in shape");
        }
    }

    /// Evaluates every statement at `point`, leaving the stored values in `state.stored`. An
    /// output read in place reads `outputs` (its value before this point's write).
    fn eval<T: Element>(
        &self,
        kernel: &Kernel,
        grids: (&[FieldView<'_, T>], &[FieldViewMut<'_, T>]),
        params: &[T],
        point: &[isize],
        state: &mut PointState<T>,
    ) {
        state.values.fill(None);
        state.lets.fill(None);
        for (stmt, needed) in kernel.body.iter().zip(&self.needed) {
            for &id in needed {
                let v = self.eval_node(kernel, grids, params, point, state, id);
                state.values[id.index()] = Some(v);
            }
            match *stmt {
                Stmt::Let { var, value } => {
                    state.lets[var.index()] = Some(get(state, kernel, value).real(kernel, value));
                }
                Stmt::Store { field, value } => {
                    let slot = self.output_slot[field.index()]
                        .unwrap_or_else(|| broken(kernel, "store to an input"));
                    state.stored[slot] = get(state, kernel, value).real(kernel, value);
                }
                Stmt::Reduce { reduction, value } => {
                    state.reduced[reduction.index()] =
                        get(state, kernel, value).real(kernel, value);
                }
            }
        }
    }

    fn eval_node<T: Element>(
        &self,
        kernel: &Kernel,
        (inputs, outputs): (&[FieldView<'_, T>], &[FieldViewMut<'_, T>]),
        params: &[T],
        point: &[isize],
        state: &PointState<T>,
        id: ExprId,
    ) -> Value<T> {
        let real = |e: ExprId| get(state, kernel, e).real(kernel, e);
        let boolean = |e: ExprId| get(state, kernel, e).boolean(kernel, e);
        match *kernel.expr(id) {
            Expr::Const(c) => Value::Real(T::from_f64(c)),
            Expr::Param(p) => Value::Real(params[p.index()]),
            Expr::Read { field, offset } => {
                let mut at = [0isize; MAX_DIMS];
                for (d, (a, &p)) in at.iter_mut().zip(point).enumerate() {
                    *a = p + offset.get(d) as isize;
                }
                match (
                    self.input_slot[field.index()],
                    self.output_slot[field.index()],
                ) {
                    (Some(slot), _) => Value::Real(inputs[slot].get(&at[..point.len()])),
                    // An output read in place, at its own point (the verifier allows no other).
                    (None, Some(slot)) if offset.is_zero() => {
                        let view = outputs.get(slot).unwrap_or_else(|| {
                            broken(kernel, "an output read in place, with no outputs given")
                        });
                        Value::Real(view.get(&at[..point.len()]))
                    }
                    _ => broken(kernel, "read of an output away from its point"),
                }
            }
            Expr::Let(var) => Value::Real(
                state.lets[var.index()]
                    .unwrap_or_else(|| broken(kernel, "let used before its definition")),
            ),
            Expr::Index(dim) => Value::Real(T::from_f64(point[dim] as f64)),
            Expr::Step => Value::Real(T::from_f64(state.step as f64)),
            Expr::Unary { op, arg } => Value::Real(unary(op, real(arg))),
            Expr::Binary { op, lhs, rhs } => Value::Real(binary(op, real(lhs), real(rhs))),
            Expr::Compare { op, lhs, rhs } => Value::Bool(compare(op, real(lhs), real(rhs))),
            Expr::Logic { op, lhs, rhs } => {
                let (a, b) = (boolean(lhs), boolean(rhs));
                Value::Bool(match op {
                    LogicOp::And => a && b,
                    LogicOp::Or => a || b,
                })
            }
            Expr::Not(arg) => Value::Bool(!boolean(arg)),
            Expr::Fma { a, b, c } => Value::Real(real(a).mul_add(real(b), real(c))),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let (c, a, b) = (boolean(cond), real(then), real(otherwise));
                Value::Real(if c { a } else { b })
            }
        }
    }
}

fn get<T: Element>(state: &PointState<T>, kernel: &Kernel, id: ExprId) -> Value<T> {
    state.values[id.index()]
        .unwrap_or_else(|| broken(kernel, &format!("%{} used before evaluation", id.index())))
}

/// A unary operation in `T`, through the [`Element`] methods.
pub fn unary<T: Element>(op: UnaryOp, x: T) -> T {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Ln => x.ln(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
    }
}

/// A binary operation in `T`, through the [`Element`] methods.
pub fn binary<T: Element>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Pow => a.powf(b),
    }
}

/// An IEEE comparison in `T` (false whenever an operand is NaN, except `!=`).
pub fn compare<T: Element>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// A broken invariant: the kernel was not verified, or the arguments do not fit it.
fn broken(kernel: &Kernel, what: &str) -> ! {
    panic!(
        "interp: broken invariant in kernel `{}`: {what}\n{kernel}",
        kernel.name
    )
}
