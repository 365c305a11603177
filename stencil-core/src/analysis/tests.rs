//! Hand-counted expectations for the analyses on the classic stencils.

use super::*;
use crate::ElemType;
use crate::interp::testing::{seven_point, star, twenty_seven_point, twenty_seven_point_repeated};
use crate::ir::{CmpOp, KernelBuilder, LogicOp, Offset, UnaryOp};

fn counts<const N: usize>(pairs: &[(usize, usize)]) -> [usize; N] {
    let mut a = [0; N];
    for &(i, c) in pairs {
        a[i] = c;
    }
    a
}

#[test]
fn seven_point_features() {
    let k = seven_point(ElemType::F64);
    let f = features(&k);
    assert_eq!(f.n_dims, 3);
    assert_eq!(f.order, 1);
    assert_eq!(f.nnz, 7);
    assert_eq!(f.nnz_by_order, counts(&[(0, 1), (1, 6)]));
    assert_eq!(f.nnz_by_step, counts(&[(0, 1), (1, 6)]));
    assert_eq!((f.n_inputs, f.n_outputs), (1, 1));
    // c0 * u (1 mul) + c1 * (5 adds over 6 reads) (5 adds + 1 mul) + final add (1) = 8.
    assert_eq!(f.flops, 8);
    // One f64 read, one f64 write.
    assert_eq!(f.bytes, 16);
    assert_eq!(bytes_per_point(&seven_point(ElemType::F32)), 8);
    // 7 of the 3x3x3 tensor's 27 cells.
    assert!((f.sparsity() - 7.0 / 27.0).abs() < 1e-15);
    assert!((f.order_ratio(1) - 6.0 / 7.0).abs() < 1e-15);
    let r = radius(&k);
    assert_eq!(r.max(), 1);
    assert_eq!(footprint(&k).offsets(crate::ir::FieldId::new(0)).len(), 7);
}

#[test]
fn twenty_seven_point_features() {
    let f = features(&twenty_seven_point(ElemType::F64));
    assert_eq!(f.order, 1);
    assert_eq!(f.nnz, 27);
    assert_eq!(f.nnz_by_order, counts(&[(0, 1), (1, 26)]));
    // Manhattan distance 1: 6 faces, 2: 12 edges, 3: 8 corners.
    assert_eq!(f.nnz_by_step, counts(&[(0, 1), (1, 6), (2, 12), (3, 8)]));
    // 26 adds + 1 mul.
    assert_eq!(f.flops, 27);
    assert_eq!(f.bytes, 16);
    assert!((f.sparsity() - 1.0).abs() < 1e-15);
}

#[test]
fn repeated_subexpressions_count_twice_until_simplified() {
    let k = twenty_seven_point_repeated(ElemType::F64);
    let f = features(&k);
    assert_eq!(f.nnz, 27);
    // Two copies of 26 adds, two muls, one add.
    assert_eq!(f.flops, 2 * 26 + 2 + 1);
    // After CSE: 26 adds, one mul, one add.
    assert_eq!(flops_per_point(&crate::simplify::simplify(&k)), 28);
}

#[test]
fn radius_four_star_features() {
    let k = star(4, ElemType::F64);
    let f = features(&k);
    assert_eq!(f.order, 4);
    assert_eq!(f.nnz, 25);
    assert_eq!(
        f.nnz_by_order,
        counts(&[(0, 1), (1, 6), (2, 6), (3, 6), (4, 6)])
    );
    assert_eq!(
        f.nnz_by_step,
        counts(&[(0, 1), (1, 6), (2, 6), (3, 6), (4, 6)])
    );
    // 1 + 7 * 4 (see `star`).
    assert_eq!(f.flops, 29);
    assert!((f.sparsity() - 25.0 / 729.0).abs() < 1e-15);
    assert!((f.step_ratio(4) - 6.0 / 25.0).abs() < 1e-15);
    let named = f.named_values();
    assert_eq!(named.len(), 4 + 2 * (N_ORDERS - 1) + 2 * (N_STEPS - 1) + 4);
    assert!(named.contains(&("nnz_order_4".to_string(), 6.0)));
    assert!(named.contains(&("nnz_step_5".to_string(), 0.0)));
}

#[test]
fn flops_rule_counts_shared_nodes_once_and_masks_as_free() {
    // t = sqrt(u); out = if t > 1 && !(t < 0) { t * t } else { -t }
    let mut b = KernelBuilder::new("k", 1, ElemType::F64);
    let u = b.input("u");
    let v = b.input("v_unused");
    let out = b.output("out");
    let x = b.read(u, &[2]);
    let _dead = b.read(v, &[0]);
    let root = b.unary(UnaryOp::Sqrt, x); // 1
    let t = b.let_("t", root);
    let t1 = b.let_ref(t);
    let t2 = b.let_ref(t);
    let one = b.constant(1.0);
    let zero = b.constant(0.0);
    let gt = b.compare(CmpOp::Gt, t1, one); // 1
    let lt = b.compare(CmpOp::Lt, t2, zero); // 1
    let not = b.not(lt); // 0
    let cond = b.logic(LogicOp::And, gt, not); // 0
    let sq = b.mul(t1, t1); // 1 (its operand is shared, counted once)
    let neg = b.neg(t2); // 1
    let unused = b.add(sq, neg); // dead: 0
    let _ = unused;
    let sel = b.select(cond, sq, neg); // 0
    b.store(out, sel);
    let k = b.finish().unwrap();
    assert_eq!(flops_per_point(&k), 5);
    // Only `u` is read by a store: 8 + 8 bytes.
    assert_eq!(bytes_per_point(&k), 16);
    let f = features(&k);
    assert_eq!((f.n_inputs, f.nnz, f.order), (1, 1, 2));
    assert_eq!(f.nnz_by_step[2], 1);
    assert_eq!(footprint(&k).offsets(u), &[Offset::from_slice(&[2])]);
    // The radius still sees the dead read's halo need (it is 0 here) and the live one.
    assert_eq!(radius(&k).max(), 2);
}
