//! [`simplify`]: exact algebraic clean-up of a kernel (constant folding, common-subexpression
//! elimination, dead-node removal), preserving every output bit for bit.
//!
//! Every rewrite here is an identity of IEEE 754 arithmetic in round-to-nearest for every
//! input, infinities, NaNs (up to NaN payload) and signed zeros included, evaluated in the
//! kernel's element type (an f32 kernel folds in f32):
//!
//! - **Constants** are rounded to the element type ([`Element::from_f64`], as every evaluator
//!   does), so `0.1` and `0.1f32 as f64` are the same constant in an f32 kernel.
//! - **Folding** of operations whose operands are all constants, for the correctly rounded
//!   operations only: `neg`, `abs`, `sqrt`, `floor`, `ceil`, `+`, `-`, `*`, `/`, `min`, `max`,
//!   through the same functions as the interpreter. Transcendentals (`exp`, `ln`, `sin`, `cos`,
//!   `tan`, `tanh`, `pow`) are left alone: libm results differ between platforms and from GPU
//!   intrinsics, so folding them on the host would bake one platform's rounding into the IR.
//! - **Identities**: `x * 1`, `1 * x`, `x / 1`, `x - (+0)`, `x + (-0)`, `(-0) + x`, `-(-x)`,
//!   `!!c`, `if c { x } else { x }`, and a select whose condition is known from constants.
//!   Not `x + 0` (`-0 + 0 = +0`), not `x * 0` (`inf * 0 = NaN`), not `x - x`.
//! - **Fused multiply-add** nodes (kernels with `#[fma]`) fold when all three operands are
//!   constants (`mul_add` is correctly rounded) and their two factors are ordered as `*`'s.
//!   Nothing is contracted or un-contracted: inlining a `let` may leave an addition of a
//!   product unfused, as the `let` had it.
//! - **Canonical operand order** for `+`, `*` (commutative exactly in IEEE), `==`, `!=`, `&&`,
//!   `||`: operands are ordered by a structural hash of their subtrees (not by arena position),
//!   so the result does not depend on how the input's arena was laid out. Not for `min`/`max`:
//!   with operands `+0` and `-0` which one comes back may depend on the operand order on real
//!   hardware.
//! - **Common-subexpression elimination** by hash-consing: structurally identical nodes (after
//!   the rewrites above) become one.
//! - **`let` inlining and dead-node removal**: temporaries are names, not computations, so a
//!   reference is replaced by its value (CSE keeps it computed once) and every node no store
//!   depends on is dropped. The result has no `let`s; its arena holds live nodes only, in
//!   evaluation order (post-order from the stores, left operand first). So the result is a
//!   canonical form: simplifying it again changes nothing, and two kernels that differ only in
//!   arena layout, `let`s, dead code or commutative operand order simplify to the same IR.
//!
//! No reassociation, no distribution, no contraction into fused multiply-add: those change
//! results. The result is re-verified; failing that is a bug in this pass and panics.

use std::collections::HashMap;

use crate::element::{ElemType, Element};
use crate::hash::node_hash;
use crate::interp::{binary, compare, unary};
use crate::ir::{
    BinaryOp, CmpOp, Expr, ExprId, FieldId, Kernel, LetId, LogicOp, Offset, ParamId, Stmt, UnaryOp,
};
use crate::verify::verify;

/// The simplified form of `kernel` (see the module documentation for the exact rules). The
/// header (name, dimensions, fields, parameters) is unchanged; the result computes the same
/// bits at every point.
///
/// # Panics
/// If `kernel` fails [`verify`] (passes take verified kernels), or if the result does (a bug).
pub fn simplify(kernel: &Kernel) -> Kernel {
    if let Err(e) = verify(kernel) {
        panic!("simplify: the input kernel is invalid: {e}\n{kernel}");
    }
    let simplified = match kernel.elem() {
        ElemType::F32 => Simplifier::<f32>::new(kernel).run(),
        ElemType::F64 => Simplifier::<f64>::new(kernel).run(),
    };
    let result = renumber_in_evaluation_order(simplified);
    if let Err(e) = verify(&result) {
        panic!(
            "simplify: produced an invalid kernel (a bug): {e}\ninput:\n{kernel}\noutput:\n{result}"
        );
    }
    result
}

/// A node's identity for hash-consing (constants by bit pattern).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Key {
    Const(u64),
    Param(ParamId),
    Read(FieldId, Offset),
    Index(usize),
    Step,
    Unary(UnaryOp, ExprId),
    Binary(BinaryOp, ExprId, ExprId),
    Compare(CmpOp, ExprId, ExprId),
    Logic(LogicOp, ExprId, ExprId),
    Not(ExprId),
    Select(ExprId, ExprId, ExprId),
    Fma(ExprId, ExprId, ExprId),
}

impl Key {
    /// The key of a node with already-translated operands; `None` for `let` references, which
    /// are inlined rather than interned.
    fn of(expr: &Expr) -> Option<Key> {
        Some(match *expr {
            Expr::Const(c) => Key::Const(c.to_bits()),
            Expr::Param(p) => Key::Param(p),
            Expr::Read { field, offset } => Key::Read(field, offset),
            Expr::Let(_) => return None,
            Expr::Index(dim) => Key::Index(dim),
            Expr::Step => Key::Step,
            Expr::Unary { op, arg } => Key::Unary(op, arg),
            Expr::Binary { op, lhs, rhs } => Key::Binary(op, lhs, rhs),
            Expr::Compare { op, lhs, rhs } => Key::Compare(op, lhs, rhs),
            Expr::Logic { op, lhs, rhs } => Key::Logic(op, lhs, rhs),
            Expr::Not(arg) => Key::Not(arg),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => Key::Select(cond, then, otherwise),
            Expr::Fma { a, b, c } => Key::Fma(a, b, c),
        })
    }
}

/// Rebuilds a kernel's statements into a fresh, hash-consed arena, computing in `T`.
struct Simplifier<'k, T> {
    input: &'k Kernel,
    output: Kernel,
    interned: HashMap<Key, ExprId>,
    /// Old expression id -> new expression id, once translated.
    translated: Vec<Option<ExprId>>,
    /// Old let id -> the old expression that defines it.
    let_value: Vec<Option<ExprId>>,
    /// New expression id -> its truth value, when a boolean node's value follows from
    /// constants.
    known: Vec<Option<bool>>,
    /// New expression id -> hash of its subtree's structure (see [`node_hash`]).
    shapes: Vec<u128>,
    _elem: std::marker::PhantomData<T>,
}

impl<'k, T: Element> Simplifier<'k, T> {
    fn new(input: &'k Kernel) -> Self {
        let mut let_value = vec![None; input.lets.len()];
        for stmt in &input.body {
            if let Stmt::Let { var, value } = *stmt {
                let_value[var.index()] = Some(value);
            }
        }
        Simplifier {
            input,
            output: Kernel {
                lets: Vec::new(),
                exprs: Vec::new(),
                body: Vec::new(),
                ..input.clone()
            },
            interned: HashMap::new(),
            translated: vec![None; input.exprs.len()],
            let_value,
            known: Vec::new(),
            shapes: Vec::new(),
            _elem: std::marker::PhantomData,
        }
    }

    fn run(mut self) -> Kernel {
        for stmt in &self.input.body {
            match *stmt {
                Stmt::Store { field, value } => {
                    let value = self.translate(value);
                    self.output.body.push(Stmt::Store { field, value });
                }
                Stmt::Reduce { reduction, value } => {
                    let value = self.translate(value);
                    self.output.body.push(Stmt::Reduce { reduction, value });
                }
                Stmt::Let { .. } => {}
            }
        }
        self.output
    }

    /// What an old node depends on: its operands, or for a `let` reference the let's value.
    fn dependencies(&self, id: ExprId) -> Vec<ExprId> {
        match *self.input.expr(id) {
            Expr::Let(var) => vec![self.let_value_of(var)],
            ref e => e.operands().collect(),
        }
    }

    fn let_value_of(&self, var: LetId) -> ExprId {
        self.let_value[var.index()].unwrap_or_else(|| {
            panic!(
                "simplify: let {} has no definition\n{}",
                var.index(),
                self.input
            )
        })
    }

    /// The new id of old expression `root`, translating what it depends on first (iteratively:
    /// expression chains can be deeper than the stack).
    fn translate(&mut self, root: ExprId) -> ExprId {
        let mut stack = vec![(root, false)];
        while let Some((id, expanded)) = stack.pop() {
            if self.translated[id.index()].is_some() {
                continue;
            }
            if expanded {
                let new = self.rebuild(id);
                self.translated[id.index()] = Some(new);
            } else {
                stack.push((id, true));
                // Reversed, so the left operand is translated first.
                for dep in self.dependencies(id).into_iter().rev() {
                    if self.translated[dep.index()].is_none() {
                        stack.push((dep, false));
                    }
                }
            }
        }
        self.translated[root.index()].expect("translated above")
    }

    /// The new id of old node `id`, whose dependencies are all translated.
    fn rebuild(&mut self, id: ExprId) -> ExprId {
        let new = |e: ExprId| self.translated[e.index()].expect("dependency translated first");
        match *self.input.expr(id) {
            Expr::Const(c) => self.constant(T::from_f64(c)),
            Expr::Param(p) => self.intern(Expr::Param(p)),
            Expr::Read { field, offset } => self.intern(Expr::Read { field, offset }),
            Expr::Let(var) => new(self.let_value_of(var)),
            Expr::Index(dim) => self.intern(Expr::Index(dim)),
            Expr::Step => self.intern(Expr::Step),
            Expr::Unary { op, arg } => self.unary(op, new(arg)),
            Expr::Binary { op, lhs, rhs } => self.binary(op, new(lhs), new(rhs)),
            Expr::Compare { op, lhs, rhs } => self.compare(op, new(lhs), new(rhs)),
            Expr::Logic { op, lhs, rhs } => self.logic(op, new(lhs), new(rhs)),
            Expr::Not(arg) => self.not(new(arg)),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => self.select(new(cond), new(then), new(otherwise)),
            Expr::Fma { a, b, c } => self.fma(new(a), new(b), new(c)),
        }
    }

    /// A fused multiply-add: folded when every operand is a constant (it is correctly
    /// rounded), the factors in canonical order (`a * b` is exactly `b * a`).
    fn fma(&mut self, a: ExprId, b: ExprId, c: ExprId) -> ExprId {
        if let (Some(x), Some(y), Some(z)) = (
            self.constant_value(a),
            self.constant_value(b),
            self.constant_value(c),
        ) {
            return self.constant(x.mul_add(y, z));
        }
        let (a, b) = self.ordered(a, b);
        self.intern(Expr::Fma { a, b, c })
    }

    /// The id of `expr` in the new arena, adding it if no identical node exists.
    fn intern(&mut self, expr: Expr) -> ExprId {
        let key = Key::of(&expr).expect("let references are inlined, never interned");
        if let Some(&id) = self.interned.get(&key) {
            return id;
        }
        let shape = node_hash(&expr, &|e| self.shapes[e.index()]);
        self.output.exprs.push(expr);
        self.known.push(None);
        self.shapes.push(shape);
        let id = ExprId::new(self.output.exprs.len() - 1);
        self.interned.insert(key, id);
        id
    }

    /// The operands of a commutative node in canonical order: by subtree structure, then by
    /// id (distinct nodes with equal hashes are a 2^-128 accident; the id keeps it
    /// deterministic).
    fn ordered(&self, a: ExprId, b: ExprId) -> (ExprId, ExprId) {
        if (self.shapes[a.index()], a) <= (self.shapes[b.index()], b) {
            (a, b)
        } else {
            (b, a)
        }
    }

    fn constant(&mut self, value: T) -> ExprId {
        self.intern(Expr::Const(value.to_f64()))
    }

    /// The value of new node `id` if it is a constant.
    fn constant_value(&self, id: ExprId) -> Option<T> {
        match self.output.exprs[id.index()] {
            Expr::Const(c) => Some(T::from_f64(c)),
            _ => None,
        }
    }

    fn is_constant(&self, id: ExprId, bits_of: T) -> bool {
        self.constant_value(id)
            .is_some_and(|v| v.to_f64().to_bits() == bits_of.to_f64().to_bits())
    }

    fn unary(&mut self, op: UnaryOp, arg: ExprId) -> ExprId {
        let correctly_rounded = matches!(
            op,
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil
        );
        if correctly_rounded && let Some(x) = self.constant_value(arg) {
            return self.constant(unary(op, x));
        }
        if op == UnaryOp::Neg
            && let Expr::Unary {
                op: UnaryOp::Neg,
                arg: inner,
            } = self.output.exprs[arg.index()]
        {
            return inner;
        }
        self.intern(Expr::Unary { op, arg })
    }

    fn binary(&mut self, op: BinaryOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        if op != BinaryOp::Pow
            && let (Some(a), Some(b)) = (self.constant_value(lhs), self.constant_value(rhs))
        {
            return self.constant(binary(op, a, b));
        }
        let one = T::ONE;
        let minus_zero = -T::ZERO;
        match op {
            BinaryOp::Mul if self.is_constant(rhs, one) => return lhs,
            BinaryOp::Mul if self.is_constant(lhs, one) => return rhs,
            BinaryOp::Div if self.is_constant(rhs, one) => return lhs,
            BinaryOp::Sub if self.is_constant(rhs, T::ZERO) => return lhs,
            BinaryOp::Add if self.is_constant(rhs, minus_zero) => return lhs,
            BinaryOp::Add if self.is_constant(lhs, minus_zero) => return rhs,
            _ => {}
        }
        let (lhs, rhs) = if matches!(op, BinaryOp::Add | BinaryOp::Mul) {
            self.ordered(lhs, rhs)
        } else {
            (lhs, rhs)
        };
        self.intern(Expr::Binary { op, lhs, rhs })
    }

    fn compare(&mut self, op: CmpOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        let (lhs, rhs) = if matches!(op, CmpOp::Eq | CmpOp::Ne) {
            self.ordered(lhs, rhs)
        } else {
            (lhs, rhs)
        };
        let known = match (self.constant_value(lhs), self.constant_value(rhs)) {
            (Some(a), Some(b)) => Some(compare(op, a, b)),
            _ => None,
        };
        self.boolean(Expr::Compare { op, lhs, rhs }, known)
    }

    fn logic(&mut self, op: LogicOp, lhs: ExprId, rhs: ExprId) -> ExprId {
        let (lhs, rhs) = self.ordered(lhs, rhs);
        let (a, b) = (self.known[lhs.index()], self.known[rhs.index()]);
        let known = match op {
            LogicOp::And if a == Some(false) || b == Some(false) => Some(false),
            LogicOp::Or if a == Some(true) || b == Some(true) => Some(true),
            _ => a.zip(b).map(|(a, b)| match op {
                LogicOp::And => a && b,
                LogicOp::Or => a || b,
            }),
        };
        self.boolean(Expr::Logic { op, lhs, rhs }, known)
    }

    fn not(&mut self, arg: ExprId) -> ExprId {
        if let Expr::Not(inner) = self.output.exprs[arg.index()] {
            return inner;
        }
        let known = self.known[arg.index()].map(|v| !v);
        self.boolean(Expr::Not(arg), known)
    }

    /// Interns a boolean node and records its value when constants decide it.
    fn boolean(&mut self, expr: Expr, known: Option<bool>) -> ExprId {
        let id = self.intern(expr);
        if known.is_some() {
            self.known[id.index()] = known;
        }
        id
    }

    fn select(&mut self, cond: ExprId, then: ExprId, otherwise: ExprId) -> ExprId {
        match self.known[cond.index()] {
            Some(true) => then,
            Some(false) => otherwise,
            None if then == otherwise => then,
            None => self.intern(Expr::Select {
                cond,
                then,
                otherwise,
            }),
        }
    }
}

/// Keeps only the expressions the stores reach, numbered in evaluation order: post-order from
/// each store in turn, left operand first.
fn renumber_in_evaluation_order(mut kernel: Kernel) -> Kernel {
    let mut renumber: Vec<Option<ExprId>> = vec![None; kernel.exprs.len()];
    let mut order = Vec::new();
    for stmt in &kernel.body {
        let value = stmt.value();
        let mut stack = vec![(value, false)];
        while let Some((id, expanded)) = stack.pop() {
            if renumber[id.index()].is_some() {
                continue;
            }
            if expanded {
                renumber[id.index()] = Some(ExprId::new(order.len()));
                order.push(id);
            } else {
                stack.push((id, true));
                let operands: Vec<ExprId> = kernel.expr(id).operands().collect();
                stack.extend(operands.into_iter().rev().map(|o| (o, false)));
            }
        }
    }
    let map = |id: ExprId| renumber[id.index()].expect("operand of a reached node is reached");
    let exprs = order
        .iter()
        .map(|&old| kernel.exprs[old.index()].map_operands(map))
        .collect();
    for stmt in &mut kernel.body {
        match stmt {
            Stmt::Store { value, .. } | Stmt::Let { value, .. } | Stmt::Reduce { value, .. } => {
                *value = map(*value)
            }
        }
    }
    kernel.exprs = exprs;
    kernel
}

#[cfg(test)]
mod tests;
