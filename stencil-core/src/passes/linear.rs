//! Linear forms: coefficient factoring and partial-sum reuse along the unit-stride dimension.
//!
//! [`linear_terms`] writes a value as `sum_k sign_k * coef_k * read_k`, where every `coef_k`
//! is a read-free expression (parameters, constants, the step number and arithmetic on them,
//! never a point's index, which changes along the row) or 1, through
//! additions, subtractions, negations, lets, multiplications by read-free factors and fused
//! multiply-adds (`#[fma]`) of such a product and a linear value; any other
//! operation (a product of two reads, a division by a read, a function, a select) makes the
//! value non-linear. [`Retimed::of`] groups the terms by coefficient (factoring) and, within a
//! coefficient class and unit-stride displacement `dx`, collects the reads' other offsets: a
//! *partial sum* `S_g(x) = sum of the reads of group g at unit-stride position x`. A group that
//! several (class, dx) pairs use is computed once per point and reused at `x + dx`: for the
//! 27-point stencil, three partial sums (centre, 4 faces, 4 edges of a plane) of 9 loads
//! replace 27 loads.

use crate::ir::{BinaryOp, Expr, ExprId, FieldId, Kernel, Offset, Stmt, UnaryOp};

/// One term of a linear form: `sign * coefficient * read(field, offset)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    /// The read-free factor (`None`: 1).
    pub coefficient: Option<ExprId>,
    /// Whether the term is subtracted.
    pub negated: bool,
    /// The input read.
    pub field: FieldId,
    /// Its offset.
    pub offset: Offset,
}

/// The value of `value` as a linear form, or `None` if it is not linear in the reads (see
/// the module documentation).
pub fn linear_terms(kernel: &Kernel, value: ExprId) -> Option<Vec<Term>> {
    let mut terms = Vec::new();
    collect(kernel, value, None, false, &mut terms).then_some(terms)
}

/// Whether `id` reads no grid and no point index: its value is the same at every point of a
/// sweep (the step number is, and so may be part of a coefficient).
pub fn is_read_free(kernel: &Kernel, id: ExprId) -> bool {
    match *kernel.expr(id) {
        Expr::Read { .. } | Expr::Index(_) => false,
        Expr::Let(var) => let_value(kernel, var).is_some_and(|v| is_read_free(kernel, v)),
        ref node => node.operands().all(|o| is_read_free(kernel, o)),
    }
}

/// Whether `a` and `b` compute the same value by the same expression (through lets).
pub fn same_value(kernel: &Kernel, a: ExprId, b: ExprId) -> bool {
    let resolve = |id: ExprId| match *kernel.expr(id) {
        Expr::Let(var) => let_value(kernel, var).unwrap_or(id),
        _ => id,
    };
    let (a, b) = (resolve(a), resolve(b));
    if a == b {
        return true;
    }
    match (kernel.expr(a), kernel.expr(b)) {
        (Expr::Const(x), Expr::Const(y)) => x.to_bits() == y.to_bits(),
        (Expr::Param(x), Expr::Param(y)) => x == y,
        (x, y) if std::mem::discriminant(x) == std::mem::discriminant(y) => {
            let same_op = match (x, y) {
                (Expr::Binary { op: p, .. }, Expr::Binary { op: q, .. }) => p == q,
                (Expr::Unary { op: p, .. }, Expr::Unary { op: q, .. }) => p == q,
                (Expr::Binary { .. } | Expr::Unary { .. }, _) => false,
                _ => false,
            };
            same_op
                && x.operands().count() == y.operands().count()
                && x.operands()
                    .zip(y.operands())
                    .all(|(p, q)| same_value(kernel, p, q))
        }
        _ => false,
    }
}

fn let_value(kernel: &Kernel, var: crate::ir::LetId) -> Option<ExprId> {
    kernel.body.iter().find_map(|s| match *s {
        Stmt::Let { var: v, value } if v == var => Some(value),
        _ => None,
    })
}

fn collect(
    kernel: &Kernel,
    id: ExprId,
    coefficient: Option<ExprId>,
    negated: bool,
    terms: &mut Vec<Term>,
) -> bool {
    match *kernel.expr(id) {
        Expr::Read { field, offset } => {
            terms.push(Term {
                coefficient,
                negated,
                field,
                offset,
            });
            true
        }
        Expr::Let(var) => {
            let_value(kernel, var).is_some_and(|v| collect(kernel, v, coefficient, negated, terms))
        }
        Expr::Unary {
            op: UnaryOp::Neg,
            arg,
        } => collect(kernel, arg, coefficient, !negated, terms),
        Expr::Binary {
            op: BinaryOp::Add,
            lhs,
            rhs,
        } => {
            collect(kernel, lhs, coefficient, negated, terms)
                && collect(kernel, rhs, coefficient, negated, terms)
        }
        Expr::Binary {
            op: BinaryOp::Sub,
            lhs,
            rhs,
        } => {
            collect(kernel, lhs, coefficient, negated, terms)
                && collect(kernel, rhs, coefficient, !negated, terms)
        }
        Expr::Binary {
            op: BinaryOp::Mul,
            lhs,
            rhs,
        } if coefficient.is_none() => product(kernel, lhs, rhs, negated, terms),
        // `a * b + c` rounded once (`#[fma]`): linear as the product and the sum are.
        Expr::Fma { a, b, c } if coefficient.is_none() => {
            product(kernel, a, b, negated, terms) && collect(kernel, c, None, negated, terms)
        }
        _ => false,
    }
}

/// The terms of `lhs * rhs` where one factor is read-free (the coefficient) and the other
/// linear; `false` when neither or both are read-free.
fn product(
    kernel: &Kernel,
    lhs: ExprId,
    rhs: ExprId,
    negated: bool,
    terms: &mut Vec<Term>,
) -> bool {
    if is_read_free(kernel, lhs) && !is_read_free(kernel, rhs) {
        collect(kernel, rhs, Some(lhs), negated, terms)
    } else if is_read_free(kernel, rhs) && !is_read_free(kernel, lhs) {
        collect(kernel, lhs, Some(rhs), negated, terms)
    } else {
        false
    }
}

/// The reads of one partial sum: (input field, offset whose unit-stride entry is 0).
pub type Group = Vec<(FieldId, Offset)>;

/// A coefficient class of a retimed form: `sign * coefficient * sum over uses of
/// S_group(x + dx)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// The read-free factor (`None`: 1).
    pub coefficient: Option<ExprId>,
    /// Whether the class is subtracted.
    pub negated: bool,
    /// The (group, unit-stride displacement) pairs summed.
    pub uses: Vec<(usize, i32)>,
}

/// A linear value computed from partial sums reused along the unit-stride dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Retimed {
    /// The partial sums.
    pub groups: Vec<Group>,
    /// The coefficient classes; the value is their sum.
    pub classes: Vec<Class>,
    /// Largest displacement below and above the point along the unit-stride dimension.
    pub reach: (u32, u32),
    /// Number of reads of the plain form.
    pub n_terms: usize,
}

/// One combination of a [`Retimed`] value (see [`Retimed::combinations`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combination {
    /// Its `(class, group)` terms, sorted: `sum of sign_class * coefficient_class * S_group`.
    pub terms: Vec<(usize, usize)>,
    /// The unit-stride displacements it is used at, ascending.
    pub displacements: Vec<i32>,
}

impl Retimed {
    /// The retimed form of `value` in `kernel`, if the value is linear.
    pub fn of(kernel: &Kernel, value: ExprId) -> Option<Retimed> {
        let terms = linear_terms(kernel, value)?;
        let unit = kernel.n_dims - 1;
        let mut groups: Vec<Group> = Vec::new();
        let mut classes: Vec<Class> = Vec::new();
        // Buckets of (class, dx) -> members, in order of first appearance.
        let mut buckets: Vec<(usize, i32, Group)> = Vec::new();
        let (mut below, mut above) = (0u32, 0u32);
        for t in &terms {
            let class = match classes.iter().position(|c| {
                c.negated == t.negated
                    && match (c.coefficient, t.coefficient) {
                        (None, None) => true,
                        (Some(a), Some(b)) => same_value(kernel, a, b),
                        _ => false,
                    }
            }) {
                Some(k) => k,
                None => {
                    classes.push(Class {
                        coefficient: t.coefficient,
                        negated: t.negated,
                        uses: Vec::new(),
                    });
                    classes.len() - 1
                }
            };
            let dx = t.offset.get(unit);
            below = below.max((-dx).max(0) as u32);
            above = above.max(dx.max(0) as u32);
            let mut cross = t.offset;
            cross.0[unit] = 0;
            match buckets.iter_mut().find(|(c, d, _)| *c == class && *d == dx) {
                Some((_, _, members)) => members.push((t.field, cross)),
                None => buckets.push((class, dx, vec![(t.field, cross)])),
            }
        }
        for (class, dx, mut members) in buckets {
            members.sort_by_key(|(f, o)| (f.index(), o.0));
            let group = match groups.iter().position(|g| *g == members) {
                Some(g) => g,
                None => {
                    groups.push(members);
                    groups.len() - 1
                }
            };
            classes[class].uses.push((group, dx));
        }
        Some(Retimed {
            groups,
            classes,
            reach: (below, above),
            n_terms: terms.len(),
        })
    }

    /// Loads per point of the retimed form (one per group member).
    pub fn n_loads(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }

    /// The value regrouped by unit-stride displacement: `value(x) = sum over dx of
    /// Q_dx(x + dx)`, where `Q_dx = sum of sign_c * coefficient_c * S_g` over the uses
    /// `(g, dx)` of every class `c`. Shifting is linear, so one lane shift of `Q_dx` replaces
    /// one per partial sum used at `dx`. Displacements whose combinations are equal, as `-1`
    /// and `+1` of a symmetric stencil, share one entry; entries are in order of their first
    /// displacement.
    pub fn combinations(&self) -> Vec<Combination> {
        let mut displacements: Vec<i32> = self
            .classes
            .iter()
            .flat_map(|c| c.uses.iter().map(|&(_, dx)| dx))
            .collect();
        displacements.sort_unstable();
        displacements.dedup();
        let mut combinations: Vec<Combination> = Vec::new();
        for dx in displacements {
            let mut terms: Vec<(usize, usize)> = self
                .classes
                .iter()
                .enumerate()
                .flat_map(|(c, class)| {
                    class
                        .uses
                        .iter()
                        .filter(move |&&(_, d)| d == dx)
                        .map(move |&(g, _)| (c, g))
                })
                .collect();
            terms.sort_unstable();
            match combinations.iter_mut().find(|c| c.terms == terms) {
                Some(c) => c.displacements.push(dx),
                None => combinations.push(Combination {
                    terms,
                    displacements: vec![dx],
                }),
            }
        }
        combinations
    }

    /// Whether following this form pays: it loads at most a third of what the plain form
    /// loads (partial sums are reused across at least three displacements on average).
    pub fn pays(&self) -> bool {
        3 * self.n_loads() <= self.n_terms
    }
}

/// The retimed forms of `kernel`'s stores, in body order with the field each stores to, when
/// every store has one with at least one class and together they pay (load at most a third of
/// what the plain forms load): the kernels whose CPU point loop follows the retimed form.
pub fn retimed_stores(kernel: &Kernel) -> Option<Vec<(FieldId, Retimed)>> {
    if kernel.has_reductions() || !crate::analysis::in_place_outputs(kernel).is_empty() {
        // The retimed loop writes only grids and reads only inputs.
        return None;
    }
    let mut stores = Vec::new();
    for statement in &kernel.body {
        if let Stmt::Store { field, value } = *statement {
            stores.push((field, Retimed::of(kernel, value)?));
        }
    }
    let (loads, terms) = stores
        .iter()
        .fold((0, 0), |(l, t), (_, r)| (l + r.n_loads(), t + r.n_terms));
    if stores.is_empty() || stores.iter().any(|(_, r)| r.classes.is_empty()) || 3 * loads > terms {
        return None;
    }
    Some(stores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ElemType, KernelBuilder};

    /// The 27-point stencil with 4 coefficient classes, built from its definition.
    fn twenty_seven() -> Kernel {
        let mut b = KernelBuilder::new("k27", 3, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let coefs: Vec<_> = (0..4).map(|k| b.param(&format!("c{k}"))).collect();
        let mut sums = vec![None; 4];
        for i in -1..=1 {
            for j in -1..=1 {
                for k in -1..=1 {
                    let class = [i, j, k].iter().filter(|&&d| d != 0).count();
                    let r = b.read(u, &[i, j, k]);
                    sums[class] = Some(match sums[class] {
                        Some(s) => b.add(s, r),
                        None => r,
                    });
                }
            }
        }
        let mut value = None;
        for (class, sum) in sums.into_iter().enumerate() {
            let c = b.param_ref(coefs[class]);
            let term = b.mul(c, sum.unwrap());
            value = Some(match value {
                Some(v) => b.add(v, term),
                None => term,
            });
        }
        b.store(out, value.unwrap());
        b.finish().unwrap()
    }

    fn stored(kernel: &Kernel) -> ExprId {
        kernel
            .body
            .iter()
            .find_map(|s| match *s {
                Stmt::Store { value, .. } => Some(value),
                Stmt::Let { .. } | Stmt::Reduce { .. } => None,
            })
            .unwrap()
    }

    #[test]
    fn the_27_point_stencil_needs_three_partial_sums_of_nine_loads() {
        let k = twenty_seven();
        let r = Retimed::of(&k, stored(&k)).unwrap();
        assert_eq!(r.n_terms, 27);
        assert_eq!(r.groups.len(), 3);
        assert_eq!(r.n_loads(), 9);
        assert_eq!(r.reach, (1, 1));
        assert_eq!(r.classes.len(), 4);
        // The centre class uses one group at dx = 0; the corner class two uses (dx = -1, 1).
        let uses: Vec<usize> = r.classes.iter().map(|c| c.uses.len()).collect();
        assert_eq!(uses, [1, 3, 3, 2]);
        assert!(r.pays());
        // Regrouped by displacement: the centre combination (classes 0-2 over the three
        // groups) and one shared by dx = -1 and +1 (classes 1-3): two lane shifts, not six.
        let q = r.combinations();
        assert_eq!(q.len(), 2);
        assert_eq!(
            q.iter()
                .map(|c| c.displacements.clone())
                .collect::<Vec<_>>(),
            [vec![-1, 1], vec![0]]
        );
        assert!(q.iter().all(|c| c.terms.len() == 3));
        let classes = |k: usize| q[k].terms.iter().map(|&(c, _)| c).collect::<Vec<_>>();
        assert_eq!((classes(0), classes(1)), (vec![1, 2, 3], vec![0, 1, 2]));
        // Every group lies in the plane dx = 0 and has 1 or 4 members.
        for g in &r.groups {
            assert!(g.iter().all(|(_, o)| o.get(2) == 0));
            assert!(g.len() == 1 || g.len() == 4);
        }
    }

    #[test]
    fn fused_multiply_adds_have_the_form_of_their_product_and_sum() {
        // `c0 * S0 + c1 * S1 + ..` contracted (`#[fma]`) into `fma(c0, S0, c1 * S1) + ..`:
        // the same terms, classes and partial sums as the unfused kernel.
        let plain = twenty_seven();
        let fused = crate::passes::contract::contract(&plain);
        assert!(fused.exprs.iter().any(|e| matches!(e, Expr::Fma { .. })));
        let (p, f) = (
            Retimed::of(&plain, stored(&plain)).unwrap(),
            Retimed::of(&fused, stored(&fused)).unwrap(),
        );
        assert_eq!((f.n_terms, f.n_loads(), f.reach), (27, 9, (1, 1)));
        // The same partial sums and classes, perhaps in another order (the contraction
        // nests the sums differently).
        let sorted = |mut groups: Vec<Group>| {
            groups.sort();
            groups
        };
        assert_eq!(sorted(f.groups.clone()), sorted(p.groups.clone()));
        assert_eq!(f.classes.len(), p.classes.len());
        assert_eq!(f.combinations().len(), p.combinations().len());
        assert!(retimed_stores(&fused).is_some());
        // A fused product of two reads is not linear.
        let mut b = KernelBuilder::new("nl_fma", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let (l, r, c) = (b.read(u, &[-1]), b.read(u, &[1]), b.read(u, &[0]));
        let v = b.fma_node(l, r, c);
        b.store(out, v);
        b.fma(true);
        let k = b.finish().unwrap();
        assert!(linear_terms(&k, stored(&k)).is_none());
    }

    #[test]
    fn non_linear_values_have_no_form_and_small_stencils_do_not_pay() {
        let mut b = KernelBuilder::new("nl", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let a = b.read(u, &[-1]);
        let c = b.read(u, &[1]);
        let p = b.mul(a, c);
        b.store(out, p);
        let k = b.finish().unwrap();
        assert!(linear_terms(&k, stored(&k)).is_none());

        let mut b = KernelBuilder::new("diff", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let s = b.param("s");
        let a = b.read(u, &[-1]);
        let c = b.read(u, &[1]);
        let d = b.sub(c, a);
        let s = b.param_ref(s);
        let v = b.mul(s, d);
        b.store(out, v);
        let k = b.finish().unwrap();
        let terms = linear_terms(&k, stored(&k)).unwrap();
        assert_eq!(terms.len(), 2);
        assert!(!terms[0].negated && terms[1].negated);
        assert!(terms.iter().all(|t| t.coefficient.is_some()));
        let r = Retimed::of(&k, stored(&k)).unwrap();
        assert_eq!(r.groups.len(), 1);
        assert!(!r.pays());
    }
}
