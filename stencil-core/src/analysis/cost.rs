//! Arithmetic and compulsory memory traffic per output point, for rooflines and the tuner.
//!
//! # Counting rule for flops
//! Every *live* expression node (one a store depends on, see [`liveness`](super::liveness))
//! counts once, however many nodes use it, so a value shared through a `let` or by several
//! operands is paid for once, as a compiler would compute it:
//!
//! | node                                                        | flops |
//! |-------------------------------------------------------------|-------|
//! | `add`, `sub`, `mul`, `div`, `min`, `max`, `pow`             | 1     |
//! | `neg`, `abs`, `sqrt`, `exp`, `ln`, `sin`, `cos`, `tan`, `tanh`, `floor`, `ceil` | 1 |
//! | comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`)               | 1     |
//! | fused multiply-add (`#[fma]`)                                | 2 (a multiplication and an addition) |
//! | `&&`, `\|\|`, `!`, select (`if`)                            | 0 (mask logic, not arithmetic) |
//! | constant, parameter, read, `let` reference                  | 0     |
//!
//! Two structurally identical nodes count twice; run [`simplify`](crate::simplify::simplify)
//! first to count what common-subexpression elimination leaves.
//!
//! # Compulsory bytes
//! One element read from every input some store reads, one element written to every output:
//! the traffic of a sweep when every neighbour is reused from cache (the roofline's lower
//! bound), ignoring write-allocate.

use super::live::liveness;
use crate::ir::{Expr, Kernel, Role};

/// Floating-point operations per output point, by the rule in the module documentation.
pub fn flops_per_point(kernel: &Kernel) -> u32 {
    let live = liveness(kernel);
    let flops: usize = kernel
        .exprs
        .iter()
        .zip(&live.exprs)
        .filter(|(_, l)| **l)
        .map(|(e, _)| node_flops(e))
        .sum();
    u32::try_from(flops).unwrap_or(u32::MAX)
}

/// Flops of one node, by the rule in the module documentation.
fn node_flops(expr: &Expr) -> usize {
    match expr {
        Expr::Unary { .. } | Expr::Binary { .. } | Expr::Compare { .. } => 1,
        // A multiplication and an addition, as before contraction.
        Expr::Fma { .. } => 2,
        Expr::Const(_)
        | Expr::Param(_)
        | Expr::Read { .. }
        | Expr::Let(_)
        | Expr::Index(_)
        | Expr::Step
        | Expr::Logic { .. }
        | Expr::Not(_)
        | Expr::Select { .. } => 0,
    }
}

/// Compulsory bytes moved per output point: one element per input that is read, one per
/// output, and one more per output read in place, each of its field's element size.
pub fn bytes_per_point(kernel: &Kernel) -> usize {
    let fp = super::footprint(kernel);
    let read: usize = fp
        .inputs
        .iter()
        .filter(|f| !f.offsets.is_empty())
        .map(|f| kernel.field(f.field).elem.size_bytes())
        .sum();
    let written: usize = kernel
        .fields
        .iter()
        .filter(|f| f.role == Role::Output)
        .map(|f| f.elem.size_bytes())
        .sum();
    let in_place: usize = super::in_place_outputs(kernel)
        .into_iter()
        .map(|f| kernel.field(f).elem.size_bytes())
        .sum();
    read + written + in_place
}
