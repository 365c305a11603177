//! Element-wise loops of the generic evaluator: one function per operation class, each
//! dispatching once on the operation and then running a plain loop LLVM can vectorise.
//!
//! Every operand slice has at least `out.len()` elements; the math is [`Element`]'s, the same
//! the reference interpreter calls.

use stencil_core::{BinaryOp, CmpOp, Element, LogicOp, UnaryOp};

#[inline(always)]
fn map1<A: Copy, R>(out: &mut [R], a: &[A], f: impl Fn(A) -> R) {
    let a = &a[..out.len()];
    for (o, &x) in out.iter_mut().zip(a) {
        *o = f(x);
    }
}

#[inline(always)]
fn map2<A: Copy, R>(out: &mut [R], a: &[A], b: &[A], f: impl Fn(A, A) -> R) {
    let n = out.len();
    let (a, b) = (&a[..n], &b[..n]);
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

/// `out = op(a)`.
pub(super) fn unary<T: Element>(op: UnaryOp, out: &mut [T], a: &[T]) {
    match op {
        UnaryOp::Neg => map1(out, a, |x: T| -x),
        UnaryOp::Abs => map1(out, a, T::abs),
        UnaryOp::Sqrt => map1(out, a, T::sqrt),
        UnaryOp::Exp => map1(out, a, T::exp),
        UnaryOp::Ln => map1(out, a, T::ln),
        UnaryOp::Sin => map1(out, a, T::sin),
        UnaryOp::Cos => map1(out, a, T::cos),
        UnaryOp::Tan => map1(out, a, T::tan),
        UnaryOp::Tanh => map1(out, a, T::tanh),
        UnaryOp::Floor => map1(out, a, T::floor),
        UnaryOp::Ceil => map1(out, a, T::ceil),
    }
}

/// `out = op(a, b)`.
pub(super) fn binary<T: Element>(op: BinaryOp, out: &mut [T], a: &[T], b: &[T]) {
    match op {
        BinaryOp::Add => map2(out, a, b, |x: T, y| x + y),
        BinaryOp::Sub => map2(out, a, b, |x: T, y| x - y),
        BinaryOp::Mul => map2(out, a, b, |x: T, y| x * y),
        BinaryOp::Div => map2(out, a, b, |x: T, y| x / y),
        BinaryOp::Min => map2(out, a, b, T::min),
        BinaryOp::Max => map2(out, a, b, T::max),
        BinaryOp::Pow => map2(out, a, b, T::powf),
    }
}

/// `out = a op b`.
pub(super) fn compare<T: Element>(op: CmpOp, out: &mut [bool], a: &[T], b: &[T]) {
    match op {
        CmpOp::Lt => map2(out, a, b, |x: T, y| x < y),
        CmpOp::Le => map2(out, a, b, |x: T, y| x <= y),
        CmpOp::Gt => map2(out, a, b, |x: T, y| x > y),
        CmpOp::Ge => map2(out, a, b, |x: T, y| x >= y),
        CmpOp::Eq => map2(out, a, b, |x: T, y| x == y),
        CmpOp::Ne => map2(out, a, b, |x: T, y| x != y),
    }
}

/// `out = a op b` (both sides evaluated; non-short-circuit operators vectorise).
pub(super) fn logic(op: LogicOp, out: &mut [bool], a: &[bool], b: &[bool]) {
    match op {
        LogicOp::And => map2(out, a, b, |x: bool, y| x & y),
        LogicOp::Or => map2(out, a, b, |x: bool, y| x | y),
    }
}

/// `out = !a`.
pub(super) fn not(out: &mut [bool], a: &[bool]) {
    map1(out, a, |x: bool| !x);
}

/// `out = a * b + c` rounded once (`mul_add`, as the interpreter).
pub(super) fn fma<T: Element>(out: &mut [T], a: &[T], b: &[T], c: &[T]) {
    let n = out.len();
    let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
    for (((o, &x), &y), &z) in out.iter_mut().zip(a).zip(b).zip(c) {
        *o = x.mul_add(y, z);
    }
}

/// `out = if cond { then } else { otherwise }`, element-wise.
pub(super) fn select<T: Element>(out: &mut [T], cond: &[bool], then: &[T], otherwise: &[T]) {
    let n = out.len();
    let (cond, then, otherwise) = (&cond[..n], &then[..n], &otherwise[..n]);
    for (((o, &c), &t), &e) in out.iter_mut().zip(cond).zip(then).zip(otherwise) {
        *o = if c { t } else { e };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_match_scalar_math() {
        let a = [0.25f64, -1.5, 3.0, 2.0];
        let b = [2.0f64, 3.0, -3.0, 2.0];
        let mut out = [0.0; 4];
        binary(BinaryOp::Pow, &mut out, &a, &b);
        assert_eq!(out, [0.0625, -3.375, 3.0f64.powf(-3.0), 4.0]);
        binary(BinaryOp::Min, &mut out, &a, &b);
        assert_eq!(out, [0.25, -1.5, -3.0, 2.0]);
        unary(UnaryOp::Neg, &mut out, &a);
        assert_eq!(out, [-0.25, 1.5, -3.0, -2.0]);
        unary(UnaryOp::Floor, &mut out, &a);
        assert_eq!(out, [0.0, -2.0, 3.0, 2.0]);
        let mut flags = [false; 4];
        compare(CmpOp::Ge, &mut flags, &a, &b);
        assert_eq!(flags, [false, false, true, true]);
        let mut other = [false; 4];
        not(&mut other, &flags);
        assert_eq!(other, [true, true, false, false]);
        let mut both = [true; 4];
        logic(LogicOp::And, &mut both, &flags, &other);
        assert_eq!(both, [false; 4]);
        select(&mut out, &flags, &a, &b);
        assert_eq!(out, [2.0, 3.0, 3.0, 2.0]);
    }
}
