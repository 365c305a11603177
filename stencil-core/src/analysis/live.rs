//! Which expressions and `let`s a kernel's stores depend on.
//!
//! An expression is *live* when some [`Stmt::Store`] reaches it through operands, where a
//! [`Expr::Let`] node reaches the value of the statement that defines its temporary. Analyses
//! that describe what a kernel computes (footprint, flops, features) count live nodes only;
//! [`radius`](super::radius) deliberately does not (a dead read still needs a halo the caller
//! has to provide, because backends may evaluate it).
//!
//! Assumes every id is in range (a verified kernel); out-of-range ids are skipped, not followed.

use crate::ir::{Expr, ExprId, Kernel, Stmt};

/// Liveness of every expression and every `let` temporary of a kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Liveness {
    /// `exprs[e]`: whether expression `e` is reachable from a store.
    pub exprs: Vec<bool>,
    /// `lets[v]`: whether temporary `v` is read by a live expression.
    pub lets: Vec<bool>,
}

impl Liveness {
    /// Whether expression `id` is live.
    pub fn is_live(&self, id: ExprId) -> bool {
        self.exprs.get(id.index()).copied().unwrap_or(false)
    }

    /// Number of live expressions.
    pub fn n_live(&self) -> usize {
        self.exprs.iter().filter(|&&l| l).count()
    }
}

/// The liveness of `kernel`'s expressions and temporaries.
pub fn liveness(kernel: &Kernel) -> Liveness {
    let mut let_value = vec![None; kernel.lets.len()];
    for stmt in &kernel.body {
        if let Stmt::Let { var, value } = *stmt
            && let Some(slot) = let_value.get_mut(var.index())
        {
            *slot = Some(value);
        }
    }
    let mut live = Liveness {
        exprs: vec![false; kernel.exprs.len()],
        lets: vec![false; kernel.lets.len()],
    };
    let mut stack: Vec<ExprId> = kernel
        .body
        .iter()
        .filter_map(|s| match *s {
            Stmt::Store { value, .. } | Stmt::Reduce { value, .. } => Some(value),
            Stmt::Let { .. } => None,
        })
        .collect();
    while let Some(id) = stack.pop() {
        let Some(seen) = live.exprs.get_mut(id.index()) else {
            continue;
        };
        if *seen {
            continue;
        }
        *seen = true;
        let expr = &kernel.exprs[id.index()];
        if let Expr::Let(var) = *expr
            && let Some(flag) = live.lets.get_mut(var.index())
        {
            *flag = true;
            if let Some(Some(value)) = let_value.get(var.index()) {
                stack.push(*value);
            }
        }
        stack.extend(expr.operands());
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ElemType, KernelBuilder};

    #[test]
    fn reads_behind_lets_are_live_and_unused_ones_are_not() {
        let mut b = KernelBuilder::new("k", 1, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let left = b.read(u, &[-1]); // 0: live through `t`
        let unused = b.read(u, &[2]); // 1: dead
        let t = b.let_("t", left);
        let dead_let_value = b.neg(unused); // 2: dead (only its let is unused)
        b.let_("dead", dead_let_value);
        let t_ref = b.let_ref(t); // 3: live
        let right = b.read(u, &[1]); // 4: live
        let sum = b.add(t_ref, right); // 5: live
        b.store(out, sum);
        let k = b.finish().unwrap();
        let l = liveness(&k);
        assert_eq!(l.exprs, vec![true, false, false, true, true, true]);
        assert_eq!(l.lets, vec![true, false]);
        assert_eq!(l.n_live(), 4);
        let live: Vec<bool> = (0..7).map(|e| l.is_live(ExprId::new(e))).collect();
        assert_eq!(live, vec![true, false, false, true, true, true, false]);
    }
}
