//! Tests of `simplify`: each rewrite checked for its effect on the IR and, on random grids
//! through the interpreter, for leaving every output bit unchanged.

use super::*;
use crate::analysis::{flops_per_point, radius};
use crate::interp::testing::{
    run_random, same_bits, seven_point, star, twenty_seven_point, twenty_seven_point_repeated,
};
use crate::ir::KernelBuilder;
use crate::random::{RandomStencilConfig, random_stencil};

/// Whether `a` and `b` give the same bits on random grids of `shape`.
fn same_results(a: &Kernel, b: &Kernel, shape: &[usize], seed: u64) -> bool {
    let halo = radius(a).max() as usize;
    match a.elem() {
        ElemType::F32 => same_bits(
            &run_random::<f32>(a, shape, halo, seed),
            &run_random::<f32>(b, shape, halo, seed),
        ),
        ElemType::F64 => same_bits(
            &run_random::<f64>(a, shape, halo, seed),
            &run_random::<f64>(b, shape, halo, seed),
        ),
    }
}

fn consts(k: &Kernel) -> Vec<f64> {
    k.exprs
        .iter()
        .filter_map(|e| match *e {
            Expr::Const(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// `out = u[0] <op> (a <fold> b)` in `elem`, for folding tests.
fn fold_kernel(elem: ElemType, fold: BinaryOp, a: f64, b: f64) -> Kernel {
    let mut kb = KernelBuilder::new("fold", 1, elem);
    let u = kb.input("u");
    let out = kb.output("out");
    let x = kb.read(u, &[0]);
    let ca = kb.constant(a);
    let cb = kb.constant(b);
    let folded = kb.binary(fold, ca, cb);
    let v = kb.mul(x, folded);
    kb.store(out, v);
    kb.finish().unwrap()
}

#[test]
fn constants_fold_in_the_element_type() {
    // (1e8 + 1) - 1e8: 1 in f64; in f32 1e8 + 1 rounds back to 1e8 (spacing 8), giving 0.
    let mut kb = KernelBuilder::new("fold", 1, ElemType::F32);
    let u = kb.input("u");
    let out = kb.output("out");
    let x = kb.read(u, &[0]);
    let big = kb.constant(1e8);
    let one = kb.constant(1.0);
    let s = kb.add(big, one);
    let d = kb.sub(s, big);
    let v = kb.add(x, d);
    kb.store(out, v);
    let k32 = kb.finish().unwrap();
    let mut k64 = k32.clone();
    for f in &mut k64.fields {
        f.elem = ElemType::F64;
    }
    assert_eq!(consts(&simplify(&k32)), vec![0.0]);
    assert_eq!(consts(&simplify(&k64)), vec![1.0]);
    assert!(same_results(&k32, &simplify(&k32), &[9], 1));
    assert!(same_results(&k64, &simplify(&k64), &[9], 1));

    // 0.1 * 3 in f32 is 0.3f32 rounded from f32 operands, not 0.3 rounded once.
    let s = simplify(&fold_kernel(ElemType::F32, BinaryOp::Mul, 0.1, 3.0));
    assert_eq!(consts(&s), vec![f64::from(0.1f32 * 3.0f32)]);
    let s = simplify(&fold_kernel(ElemType::F64, BinaryOp::Div, 1.0, 3.0));
    assert_eq!(consts(&s), vec![1.0 / 3.0]);
    assert_eq!(s.exprs.len(), 3);
    // Leaf constants are rounded to f32 too.
    let s = simplify(&fold_kernel(ElemType::F32, BinaryOp::Min, 0.1, 7.0));
    assert_eq!(consts(&s), vec![f64::from(0.1f32)]);
}

#[test]
fn transcendentals_and_pow_are_not_folded() {
    let s = simplify(&fold_kernel(ElemType::F64, BinaryOp::Pow, 2.0, 3.0));
    assert!(s.exprs.iter().any(|e| matches!(
        e,
        Expr::Binary {
            op: BinaryOp::Pow,
            ..
        }
    )));
    let mut kb = KernelBuilder::new("sin", 1, ElemType::F64);
    let out = kb.output("out");
    let one = kb.constant(1.0);
    let v = kb.unary(UnaryOp::Sin, one);
    kb.store(out, v);
    let s = simplify(&kb.finish().unwrap());
    assert_eq!(s.exprs.len(), 2);
}

/// `out = f(x)` for one unary-style rewrite, checked for node count and semantics.
fn check_rewrite(build: impl Fn(&mut KernelBuilder, ExprId) -> ExprId, expected_nodes: usize) {
    for elem in [ElemType::F32, ElemType::F64] {
        let mut kb = KernelBuilder::new("rw", 1, elem);
        let u = kb.input("u");
        let out = kb.output("out");
        let x = kb.read(u, &[1]);
        let v = build(&mut kb, x);
        kb.store(out, v);
        let k = kb.finish().unwrap();
        let s = simplify(&k);
        assert_eq!(s.exprs.len(), expected_nodes, "{elem}:\n{k}\n{s}");
        assert!(same_results(&k, &s, &[11], 3));
    }
}

#[test]
fn exact_identities_are_applied() {
    let c = |kb: &mut KernelBuilder, v: f64| kb.constant(v);
    check_rewrite(
        |kb, x| {
            let one = c(kb, 1.0);
            kb.mul(x, one)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let one = c(kb, 1.0);
            kb.mul(one, x)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let one = c(kb, 1.0);
            kb.div(x, one)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, 0.0);
            kb.sub(x, z)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, -0.0);
            kb.add(x, z)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, -0.0);
            kb.add(z, x)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let n = kb.neg(x);
            kb.neg(n)
        },
        1,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, 0.5);
            let cond = kb.compare(CmpOp::Lt, x, z);
            let n1 = kb.not(cond);
            let n2 = kb.not(n1);
            let a = kb.neg(x);
            kb.select(n2, x, a)
        },
        // read, const, lt, neg, select: the double negation is gone.
        5,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, 0.5);
            let cond = kb.compare(CmpOp::Lt, x, z);
            let x2 = kb.read(crate::ir::FieldId::new(0), &[1]);
            kb.select(cond, x, x2)
        },
        1,
    );
    // A condition decided by constants picks its branch, also through `&&`, `||`, `!`.
    check_rewrite(
        |kb, x| {
            let one = c(kb, 1.0);
            let two = c(kb, 2.0);
            let lt = kb.compare(CmpOp::Lt, one, two); // true
            let cond_x = kb.compare(CmpOp::Gt, x, one); // unknown
            let or = kb.logic(LogicOp::Or, cond_x, lt); // true
            let not = kb.not(or); // false
            let and = kb.logic(LogicOp::And, not, cond_x); // false
            let a = kb.neg(x);
            kb.select(and, a, x)
        },
        1,
    );
}

#[test]
fn inexact_identities_are_not_applied() {
    let c = |kb: &mut KernelBuilder, v: f64| kb.constant(v);
    // x + 0 (-0 + 0 = +0), x * 0 (inf * 0 = NaN), x - x, min(x, x) stays min: 3 nodes.
    check_rewrite(
        |kb, x| {
            let z = c(kb, 0.0);
            kb.add(x, z)
        },
        3,
    );
    check_rewrite(
        |kb, x| {
            let z = c(kb, 0.0);
            kb.mul(x, z)
        },
        3,
    );
    check_rewrite(|kb, x| kb.sub(x, x), 2);
    check_rewrite(
        |kb, x| {
            let z = c(kb, -0.0);
            kb.sub(x, z)
        },
        3,
    );
    // min is not reordered: min(x, -x) and min(-x, x) stay distinct nodes.
    check_rewrite(
        |kb, x| {
            let n = kb.neg(x);
            let a = kb.binary(BinaryOp::Min, x, n);
            let b = kb.binary(BinaryOp::Min, n, x);
            kb.sub(a, b)
        },
        5,
    );
}

#[test]
fn cse_merges_the_repeated_twenty_seven_point_sums() {
    let k = twenty_seven_point_repeated(ElemType::F64);
    assert_eq!(k.exprs.len(), 111);
    let s = simplify(&k);
    // 27 reads + 26 adds + 1 param + 1 mul + 1 add (see the fixture).
    assert_eq!(s.exprs.len(), 56);
    assert_eq!(flops_per_point(&s), 28);
    assert!(same_results(&k, &s, &[5, 4, 7], 9));
    // The plain 27-point kernel is already minimal.
    let plain = twenty_seven_point(ElemType::F64);
    assert_eq!(simplify(&plain).exprs.len(), plain.exprs.len());
}

#[test]
fn lets_are_inlined_and_dead_nodes_removed() {
    let mut kb = KernelBuilder::new("k", 1, ElemType::F64);
    let u = kb.input("u");
    let out = kb.output("out");
    let far = kb.read(u, &[-5]);
    let _dead = kb.neg(far);
    let x = kb.read(u, &[1]);
    let t = kb.let_("t", x);
    let unused = kb.read(u, &[3]);
    kb.let_("unused", unused);
    let tr = kb.let_ref(t);
    let tr2 = kb.let_ref(t);
    let v = kb.mul(tr, tr2);
    kb.store(out, v);
    let k = kb.finish().unwrap();
    let s = simplify(&k);
    assert!(s.lets.is_empty());
    assert_eq!(s.body.len(), 1);
    // read u[1], mul: the let references collapse onto the read.
    assert_eq!(s.exprs.len(), 2);
    assert_eq!(radius(&s).max(), 1);
    assert_eq!(radius(&k).max(), 5);
    assert!(same_results(&k, &s, &[6], 2));
}

#[test]
fn simplify_is_idempotent_and_keeps_the_header() {
    for k in [seven_point(ElemType::F32), star(3, ElemType::F64)] {
        let s = simplify(&k);
        assert_eq!(simplify(&s), s);
        assert_eq!((s.name.as_str(), s.n_dims), (k.name.as_str(), k.n_dims));
        assert_eq!(s.fields, k.fields);
        assert_eq!(s.params, k.params);
    }
}

#[test]
fn random_stencils_keep_their_bits() {
    for seed in 0..24u64 {
        let elem = if seed % 2 == 0 {
            ElemType::F32
        } else {
            ElemType::F64
        };
        let n_dims = 2 + (seed % 2) as usize;
        let mut config = RandomStencilConfig::new(n_dims, 1 + (seed % 4) as u32, elem, seed);
        config.nonlinear = seed % 3 != 0;
        let k = random_stencil(&config);
        let s = simplify(&k);
        let shape: Vec<usize> = [5, 4, 6][..n_dims].to_vec();
        assert!(same_results(&k, &s, &shape, seed), "seed {seed}:\n{k}\n{s}");
    }
}

#[test]
fn arena_layout_and_commutative_operand_order_do_not_matter() {
    let k = seven_point(ElemType::F64);
    let mut swapped = k.clone();
    for e in &mut swapped.exprs {
        if let Expr::Binary { op, lhs, rhs } = e
            && matches!(op, BinaryOp::Add | BinaryOp::Mul)
        {
            std::mem::swap(lhs, rhs);
        }
    }
    assert_ne!(swapped, k);
    assert_eq!(simplify(&swapped), simplify(&k));
    // The same kernel built with a dead node in front and a let around the neighbour sum.
    let mut kb = KernelBuilder::new("heat", 3, ElemType::F64);
    let u = kb.input("u");
    let out = kb.output("out");
    let c0 = kb.param("c0");
    let c1 = kb.param("c1");
    let _dead = kb.read(u, &[0, 0, 1]);
    let mut sum = kb.read(u, &[-1, 0, 0]);
    for o in [[1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]] {
        let r = kb.read(u, &o);
        sum = kb.add(sum, r);
    }
    let ring = kb.let_("ring", sum);
    let ring = kb.let_ref(ring);
    let c1 = kb.param_ref(c1);
    let neighbours = kb.mul(ring, c1);
    let centre = kb.read(u, &[0, 0, 0]);
    let c0 = kb.param_ref(c0);
    let centre_term = kb.mul(centre, c0);
    let value = kb.add(neighbours, centre_term);
    kb.store(out, value);
    assert_eq!(simplify(&kb.finish().unwrap()), simplify(&k));
}
