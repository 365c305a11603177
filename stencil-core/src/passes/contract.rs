//! [`contract`]: fused multiply-add, the one contraction rule every evaluator follows.
//!
//! A kernel with [`Kernel::fma`] set (`#[fma]`,
//! [`KernelBuilder::fma`](crate::KernelBuilder::fma)) is rewritten once, when the builder
//! finishes it, so the interpreter, the macro's point loop, the CPU's
//! run-time evaluator and the PTX generator all see the same explicit [`Expr::Fma`] nodes and
//! compute the same bits (`f64::mul_add`/`f32::mul_add` on the CPU, `fma.rn` in PTX). The rule,
//! applied to every addition and subtraction node of the arena in order, looking at its
//! operands *as written*:
//!
//! - `x + y`: if `x` is a product `a * b`, it becomes `fma(a, b, y)`; else if `y` is a product
//!   `a * b`, `fma(a, b, x)`; else it stays an addition.
//! - `x - y`: if `x` is a product `a * b`, it becomes `fma(a, b, -y)`; else if `y` is a product
//!   `a * b`, `fma(-a, b, x)`; else it stays a subtraction. Negation is exact, so these are
//!   `a * b - y` and `x - a * b` rounded once (gcc's `fms` and `fnma`).
//!
//! A product is an operand *node* `a * b`: one read through a `let` is not (a `let` rounds its
//! value, so `let t = a * b; out[i] = t + c;` keeps two roundings: the way to opt one sum
//! out), nor is a negated product (`-(a * b) + c`), nor a product of a product's result with
//! something else beyond the outermost multiplication (in `a * b * c + d` the product is
//! `(a * b) * c`, so `fma(a * b, c, d)`). Sums nest as written: `a * b + c * d + e` is
//! `(a * b + c * d) + e`, which becomes `fma(a, b, c * d) + e`. A product used elsewhere as
//! well (another operand, a store) is still fused into each addition that takes it as an
//! operand and also computed on its own for the other uses; a product no longer used is
//! dropped. Nodes keep their arena order (new negations and fused nodes take the place of the
//! operation they replace), so the result is deterministic. Nothing else changes: no
//! reassociation, no distribution, and nodes already fused stay as they are, so contracting
//! twice gives the same kernel.

use crate::ir::{BinaryOp, Expr, ExprId, Kernel, Stmt, UnaryOp};

/// `kernel` with every addition and subtraction of a product contracted into an
/// [`Expr::Fma`] node by the rule of the module documentation, and its `fma` flag set.
///
/// The input must be verified (as every kernel a builder returns is); the header (name,
/// fields, parameters, lets) is unchanged and the statements keep their order.
pub fn contract(kernel: &Kernel) -> Kernel {
    let mut exprs: Vec<Expr> = Vec::with_capacity(kernel.exprs.len());
    // Old id -> new id.
    let mut new_id: Vec<ExprId> = Vec::with_capacity(kernel.exprs.len());
    let product = |id: ExprId| match *kernel.expr(id) {
        Expr::Binary {
            op: BinaryOp::Mul,
            lhs,
            rhs,
        } => Some((lhs, rhs)),
        _ => None,
    };
    for expr in &kernel.exprs {
        let map = |id: ExprId| new_id[id.index()];
        let push = |exprs: &mut Vec<Expr>, e: Expr| {
            exprs.push(e);
            ExprId::new(exprs.len() - 1)
        };
        let rewritten = match *expr {
            Expr::Binary { op, lhs, rhs } if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
                match (op, product(lhs), product(rhs)) {
                    (BinaryOp::Add, Some((a, b)), _) => Some((map(a), map(b), map(rhs))),
                    (BinaryOp::Add, None, Some((a, b))) => Some((map(a), map(b), map(lhs))),
                    (_, Some((a, b)), _) => {
                        let c = push(
                            &mut exprs,
                            Expr::Unary {
                                op: UnaryOp::Neg,
                                arg: map(rhs),
                            },
                        );
                        Some((map(a), map(b), c))
                    }
                    (_, None, Some((a, b))) => {
                        let minus_a = push(
                            &mut exprs,
                            Expr::Unary {
                                op: UnaryOp::Neg,
                                arg: map(a),
                            },
                        );
                        Some((minus_a, map(b), map(lhs)))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let id = match rewritten {
            Some((a, b, c)) => push(&mut exprs, Expr::Fma { a, b, c }),
            None => push(&mut exprs, expr.map_operands(map)),
        };
        new_id.push(id);
    }
    let body = kernel
        .body
        .iter()
        .map(|stmt| match *stmt {
            Stmt::Let { var, value } => Stmt::Let {
                var,
                value: new_id[value.index()],
            },
            Stmt::Store { field, value } => Stmt::Store {
                field,
                value: new_id[value.index()],
            },
            Stmt::Reduce { reduction, value } => Stmt::Reduce {
                reduction,
                value: new_id[value.index()],
            },
        })
        .collect();
    drop_dead(Kernel {
        exprs,
        body,
        fma: true,
        ..kernel.clone()
    })
}

/// `kernel` with every [`Expr::Fma`] node `fma(a, b, c)` replaced by `a * b + c` (a
/// multiplication and an addition, each rounded) and its `fma` flag cleared: the kernel as it
/// computes without fused multiply-add, so the rounding change can be measured against it
/// (`stencil::verify` does). Negations the contraction inserted stay (`x + -y` is `x - y`
/// exactly), so the result computes the same bits as the kernel before [`contract`].
pub fn expand(kernel: &Kernel) -> Kernel {
    let mut exprs: Vec<Expr> = Vec::with_capacity(kernel.exprs.len());
    let mut new_id: Vec<ExprId> = Vec::with_capacity(kernel.exprs.len());
    for expr in &kernel.exprs {
        let map = |id: ExprId| new_id[id.index()];
        let node = match *expr {
            Expr::Fma { a, b, c } => {
                exprs.push(Expr::Binary {
                    op: BinaryOp::Mul,
                    lhs: map(a),
                    rhs: map(b),
                });
                Expr::Binary {
                    op: BinaryOp::Add,
                    lhs: ExprId::new(exprs.len() - 1),
                    rhs: map(c),
                }
            }
            ref other => other.map_operands(map),
        };
        exprs.push(node);
        new_id.push(ExprId::new(exprs.len() - 1));
    }
    let map = |id: ExprId| new_id[id.index()];
    let mut body = kernel.body.clone();
    for stmt in &mut body {
        match stmt {
            Stmt::Let { value, .. } | Stmt::Store { value, .. } | Stmt::Reduce { value, .. } => {
                *value = map(*value);
            }
        }
    }
    Kernel {
        exprs,
        body,
        fma: false,
        ..kernel.clone()
    }
}

/// `kernel` without the expressions no statement depends on (products a contraction left
/// unused), arena order kept.
fn drop_dead(mut kernel: Kernel) -> Kernel {
    let mut live = vec![false; kernel.exprs.len()];
    for stmt in &kernel.body {
        live[stmt.value().index()] = true;
    }
    for index in (0..kernel.exprs.len()).rev() {
        if live[index] {
            let operands: Vec<ExprId> = kernel.exprs[index].operands().collect();
            for o in operands {
                live[o.index()] = true;
            }
        }
    }
    if live.iter().all(|&l| l) {
        return kernel;
    }
    let mut new_id = vec![None; kernel.exprs.len()];
    let mut exprs = Vec::with_capacity(kernel.exprs.len());
    for (index, expr) in kernel.exprs.iter().enumerate() {
        if live[index] {
            let map = |id: ExprId| new_id[id.index()].expect("operand of a live node is live");
            exprs.push(expr.map_operands(map));
            new_id[index] = Some(ExprId::new(exprs.len() - 1));
        }
    }
    let map = |id: ExprId| new_id[id.index()].expect("statement value is live");
    for stmt in &mut kernel.body {
        match stmt {
            Stmt::Let { value, .. } | Stmt::Store { value, .. } | Stmt::Reduce { value, .. } => {
                *value = map(*value);
            }
        }
    }
    kernel.exprs = exprs;
    kernel
}

#[cfg(test)]
mod tests {
    use crate::interp::testing::{run_random, same_bits};
    use crate::{ElemType, KernelBuilder};

    /// The printed kernel `build` makes with fma on.
    fn contracted(build: impl Fn(&mut KernelBuilder)) -> String {
        let mut b = KernelBuilder::new("k", 1, ElemType::F64);
        b.fma(true);
        build(&mut b);
        crate::printer::print(&b.finish().unwrap())
    }

    fn check(build: impl Fn(&mut KernelBuilder), expect: expect_test::Expect) {
        expect.assert_eq(&contracted(build));
    }

    #[test]
    fn sums_and_differences_of_products_fuse_by_the_documented_rule() {
        // x + a*b, a*b - x, x - a*b, a*b + c*d.
        check(
            |b| {
                let (u, v) = (b.input("u"), b.input("v"));
                let out = b.output("out");
                let (x, y) = (b.read(u, &[0]), b.read(v, &[0]));
                let p = b.mul(x, y);
                let s = b.add(x, p);
                let q = b.mul(s, y);
                let d = b.sub(q, x);
                let r = b.mul(d, x);
                let e = b.sub(y, r);
                let (m, n) = (b.mul(e, e), b.mul(x, x));
                let t = b.add(m, n);
                b.store(out, t);
            },
            expect_test::expect![[r#"
                kernel k, 1-D over [i], fma
                  input u: f64
                  input v: f64
                  output out: f64
                  %0 = read u[i]
                  %1 = read v[i]
                  %2 = fma %0, %1, %0
                  %3 = neg %0
                  %4 = fma %2, %1, %3
                  %5 = neg %4
                  %6 = fma %5, %0, %1
                  %7 = mul %0, %0
                  %8 = fma %6, %6, %7
                  store out = %8
            "#]],
        );
    }

    #[test]
    fn the_flag_alone_changes_the_hash_and_the_printed_kernel() {
        // No product to fuse: the arena is the same, the kernels are not (tuning-cache keys,
        // the printer and `to_macro_source` must tell them apart).
        let build = |fma: bool| {
            let mut b = KernelBuilder::new("k", 1, ElemType::F64);
            b.fma(fma);
            let u = b.input("u");
            let out = b.output("out");
            let (l, r) = (b.read(u, &[-1]), b.read(u, &[1]));
            let s = b.add(l, r);
            b.store(out, s);
            b.finish().unwrap()
        };
        let (plain, fused) = (build(false), build(true));
        assert_eq!(plain.exprs, fused.exprs);
        assert_ne!(
            crate::hash::structural_hash(&plain),
            crate::hash::structural_hash(&fused)
        );
        assert_ne!(plain.to_string(), fused.to_string());
        assert!(crate::random::to_macro_source(&fused).contains("#[fma]"));
        assert!(!crate::random::to_macro_source(&plain).contains("#[fma]"));
    }

    #[test]
    fn expanding_gives_back_the_bits_without_fusion() {
        for c in crate::random::spread_configs(40) {
            let plain = crate::random::random_stencil(&c);
            let fused = super::contract(&plain);
            let expanded = super::expand(&fused);
            assert!(!expanded.fma && fused.fma);
            crate::verify(&expanded).unwrap();
            // The same bits as the unfused kernel.
            let halo = crate::analysis::radius(&plain).max() as usize;
            let shape = &[5, 4, 3][..plain.n_dims];
            let same = match plain.elem() {
                ElemType::F32 => same_bits(
                    &run_random::<f32>(&plain, shape, halo, c.seed),
                    &run_random::<f32>(&expanded, shape, halo, c.seed),
                ),
                ElemType::F64 => same_bits(
                    &run_random::<f64>(&plain, shape, halo, c.seed),
                    &run_random::<f64>(&expanded, shape, halo, c.seed),
                ),
            };
            assert!(same, "{plain}\n{expanded}");
            // Contracting twice changes nothing.
            assert_eq!(super::contract(&fused), fused);
        }
    }
}
