//! The shifted point loop: each input row loaded once per vector, its neighbours along the row
//! taken by lane shifts, the kernel's own arithmetic in vector registers.
//!
//! The plain point loop reads `u[i, j, k-1]`, `u[i, j, k]` and `u[i, j, k+1]` as three loads,
//! two of them unaligned; with 64-byte vectors every unaligned one straddles two cache lines.
//! For a kernel whose values are sums, differences, products and quotients of its reads,
//! parameters and constants, `__run_shifted` instead loads each input row the kernel reads (a
//! *member*: one per input and offset across rows) once per vector, aligned, one vector ahead,
//! keeps the previous and current vectors in registers, and gets the read at `k + d` as
//! `Lanes::shifted::<d>(prev, cur, next)` (`valignq`/`valignd` with AVX-512F). It evaluates
//! every node of the kernel in arena order with the lane-wise operation the plain loop uses per
//! point, so the result is the plain loop's, bit for bit: a lane shift moves values and
//! computes nothing, Rust never contracts `a * b + c`, and a kernel's fused nodes (`#[fma]`)
//! round once lane-wise as the plain loop's `mul_add` does per point
//! (`Lanes::fused_mul_add`).
//!
//! It takes a whole run of rows at once (`stencil_cpu::lanes::sweep_rows`): the members'
//! windows, one vector wider than the row on either side, are built and checked once per run,
//! and each row then costs a pointer step per member, the row's first two vectors and the
//! vector loop (76 instructions a row besides the vectors for the 7-point stencil, against 174
//! when the same loop was called once per row). Vectors start at the row's first point,
//! unaligned, and a row that is not a whole number of vectors ends with its last vector
//! computed again from `n - L`; rows shorter than a vector are the plain loop's.
//!
//! It needs single-instruction lane shifts (`Lanes::SINGLE_SHIFTS`: AVX-512F). With AVX2 a
//! shift is two instructions and the loop ran the 7-point f64 sweep in cache 30% slower than
//! the plain loop, so AVX2 builds keep the plain loop.
//!
//! It runs for rows computed one at a time, in sweeps that neither prefetch nor stream
//! (`__run` asks it first and falls back to its other loops when it declines the run): rows
//! whose grids the cache holds, where loads and the per-row work set the pace. From memory,
//! bandwidth decides, and the prefetching or streaming loop keeps the row. A register block of
//! several rows ([`CpuSchedule::register_rows`](stencil_core::CpuSchedule::register_rows))
//! keeps its jammed plain loop, which shares loads across rows instead. Kernels with a retimed
//! loop (`super::retimed`) take that one.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use stencil_core::{BinaryOp, Expr, ExprId, Kernel, Offset, Stmt, UnaryOp};

use super::plan::LoopPlan;
use super::run_level::{RunLevel, run_level_function};
use super::tokens::{float_literal, int_tokens};

/// The most input rows (members) read displaced along the row a kernel may have for the
/// shifted loop: each one's previous and current vectors are carried from one vector to the
/// next, so many crowd the registers (the 7-point stencil carries 1, the 27-point one 9 if it
/// had no retimed loop). Members read only at the output's own points carry nothing.
const MAX_CARRIED: usize = 8;

/// The most members of any kind: each is a pointer stepped at every row.
const MAX_MEMBERS: usize = 32;

/// Each read of the plan as (member, displacement along the row), and the members: distinct
/// (input ordinal, offset with its unit-stride entry 0), in order of first read.
struct Members {
    members: Vec<(usize, Offset)>,
    reads: Vec<(usize, i32)>,
}

impl Members {
    fn of(kernel: &Kernel, plan: &LoopPlan) -> Members {
        let last = kernel.n_dims - 1;
        let mut members: Vec<(usize, Offset)> = Vec::new();
        let reads = plan
            .reads
            .iter()
            .map(|&(input, offset)| {
                let mut row = offset;
                row.0[last] = 0;
                let member = match members.iter().position(|&m| m == (input, row)) {
                    Some(m) => m,
                    None => {
                        members.push((input, row));
                        members.len() - 1
                    }
                };
                (member, offset.get(last))
            })
            .collect();
        Members { members, reads }
    }
}

/// Whether every node a store needs has a lane-wise form that computes the plain loop's bits:
/// constants, parameters, reads of inputs, `let`s, `+ - * /`, negation and fused
/// multiply-adds (`#[fma]`, rounded once as the plain loop's `mul_add`).
fn lane_wise(kernel: &Kernel, plan: &LoopPlan) -> bool {
    kernel
        .exprs
        .iter()
        .enumerate()
        .filter(|(i, _)| plan.reachable[*i])
        .all(|(_, node)| match *node {
            Expr::Const(_)
            | Expr::Param(_)
            | Expr::Let(_)
            | Expr::Fma { .. }
            | Expr::Unary {
                op: UnaryOp::Neg, ..
            } => true,
            Expr::Read { field, .. } => kernel.inputs().any(|f| f == field),
            Expr::Binary { op, .. } => matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            ),
            _ => false,
        })
}

/// `fn __run_shifted` for `kernel` (see the module documentation), or `None` when the kernel
/// has no shifted form: a node without a lane-wise form, reductions, an output read in place,
/// or no read displaced along the row (nothing to gain). `__run` calls it
/// for the rows it computes one at a time, as `__run_shifted(args, &mut [outputs], first)`;
/// it returns `false`, having written nothing, when the run does not fit it.
pub(super) fn shifted_loop(kernel: &Kernel, plan: &LoopPlan) -> Option<TokenStream> {
    if plan.n_outputs != plan.n_grids
        || plan.in_place
        || !lane_wise(kernel, plan)
        || plan
            .reads
            .iter()
            .all(|&(_, offset)| offset.get(kernel.n_dims - 1) == 0)
    {
        return None;
    }
    // Each output stored once.
    let mut stored = vec![false; plan.n_outputs];
    for &(output, _) in &plan.stores {
        if std::mem::replace(&mut stored[output], true) {
            return None;
        }
    }
    let Members { members, reads } = Members::of(kernel, plan);
    let carried_members = (0..members.len())
        .filter(|&m| reads.iter().any(|&(member, d)| member == m && d != 0))
        .count();
    if carried_members > MAX_CARRIED || members.len() > MAX_MEMBERS {
        return None;
    }
    let p = quote!(::stencil::__private);
    let params: Vec<Ident> = plan.params.iter().map(|&k| format_ident!("p{k}")).collect();
    let splats: Vec<Ident> = plan.params.iter().map(|&k| format_ident!("k{k}")).collect();
    let reach = reads
        .iter()
        .map(|&(_, d)| d.unsigned_abs() as usize)
        .max()
        .unwrap_or(0);
    // Members read displaced along the row are loaded one vector ahead and carry their
    // previous and current vectors; the others are loaded at the output's own points.
    let shifted: Vec<bool> = (0..members.len())
        .map(|m| reads.iter().any(|&(member, d)| member == m && d != 0))
        .collect();
    let (prev, cur, next): (Vec<Ident>, Vec<Ident>, Vec<Ident>) = (
        (0..members.len())
            .map(|m| format_ident!("m{m}_prev"))
            .collect(),
        (0..members.len())
            .map(|m| format_ident!("m{m}_cur"))
            .collect(),
        (0..members.len()).map(|m| format_ident!("m{m}")).collect(),
    );
    let carried: Vec<usize> = (0..members.len()).filter(|&m| shifted[m]).collect();
    let (carried_prev, carried_cur, carried_next): (Vec<&Ident>, Vec<&Ident>, Vec<&Ident>) = (
        carried.iter().map(|&m| &prev[m]).collect(),
        carried.iter().map(|&m| &cur[m]).collect(),
        carried.iter().map(|&m| &next[m]).collect(),
    );
    let aheads = shifted
        .iter()
        .map(|&s| if s { quote!(2 * L) } else { quote!(L) });
    let carried_index: Vec<Literal> = carried
        .iter()
        .map(|&m| Literal::usize_unsuffixed(m))
        .collect();
    // Every node a store needs, in arena order, as the plain loop computes it per point.
    let node = |id: ExprId| format_ident!("e{}", id.index());
    let mut compute = Vec::new();
    for (i, expr) in kernel.exprs.iter().enumerate() {
        if !plan.reachable[i] {
            continue;
        }
        let value = match *expr {
            Expr::Const(value) => {
                let value = float_literal(value, kernel.elem());
                quote!(V::splat(#value))
            }
            Expr::Param(param) => {
                let k = format_ident!("k{}", param.index());
                quote!(#k)
            }
            Expr::Read { field, offset } => {
                let input = kernel.inputs().position(|f| f == field)?;
                let k = plan.reads.iter().position(|r| *r == (input, offset))?;
                let (m, d) = reads[k];
                let (prev, cur, next) = (&prev[m], &cur[m], &next[m]);
                if !shifted[m] {
                    // Loaded at the output's own points.
                    quote!(#next)
                } else if d == 0 {
                    quote!(#cur)
                } else {
                    let d = int_tokens(i64::from(d));
                    quote!(V::shifted::<#d>(#prev, #cur, #next))
                }
            }
            Expr::Let(var) => {
                let value = kernel.body.iter().find_map(|s| match *s {
                    Stmt::Let { var: v, value } if v == var => Some(value),
                    _ => None,
                })?;
                let value = node(value);
                quote!(#value)
            }
            Expr::Binary { op, lhs, rhs } => {
                let (lhs, rhs) = (node(lhs), node(rhs));
                let method = match op {
                    BinaryOp::Add => format_ident!("add"),
                    BinaryOp::Sub => format_ident!("sub"),
                    BinaryOp::Mul => format_ident!("mul"),
                    BinaryOp::Div => format_ident!("div"),
                    _ => return None,
                };
                quote!(#lhs.#method(#rhs))
            }
            Expr::Unary {
                op: UnaryOp::Neg,
                arg,
            } => {
                let arg = node(arg);
                quote!(#arg.neg())
            }
            Expr::Fma { a, b, c } => {
                let (a, b, c) = (node(a), node(b), node(c));
                quote!(#a.fused_mul_add(#b, #c))
            }
            _ => return None,
        };
        let name = node(ExprId::new(i));
        compute.push(quote!(let #name = #value;));
    }
    let mut values: Vec<Option<Ident>> = vec![None; plan.n_outputs];
    for &(output, value) in &plan.stores {
        values[output] = Some(node(value));
    }
    let values: Vec<Ident> = values.into_iter().collect::<Option<_>>()?;
    let n_members = Literal::usize_unsuffixed(members.len());
    let n_outputs = Literal::usize_unsuffixed(plan.n_outputs);
    let setup = quote! {
        // Carries each member's previous and current vectors and the splatted parameters.
        #[derive(Clone, Copy)]
        struct __Step {
            #(#splats: V,)*
            #(#carried_prev: V, #carried_cur: V,)*
        }
        impl #p::lanes::VectorBody<V, #n_members, #n_outputs> for __Step {
            #[inline(always)]
            fn step(&mut self, [#(#next),*]: [V; #n_members]) -> [V; #n_outputs] {
                let __Step { #(#splats,)* #(#carried_prev, #carried_cur,)* } = *self;
                #(#compute)*
                #(self.#carried_prev = #carried_cur; self.#carried_cur = #carried_next;)*
                [#(#values),*]
            }
        }
        impl #p::lanes::RowBody<V, #n_members, #n_outputs> for __Step {
            #[inline(always)]
            fn start(&mut self, prev: [V; #n_members], cur: [V; #n_members]) {
                #(
                    self.#carried_prev = prev[#carried_index];
                    self.#carried_cur = cur[#carried_index];
                )*
            }
        }
        let body = __Step {
            #(#splats: V::splat(#params),)*
            #(#carried_prev: V::splat(0.0), #carried_cur: V::splat(0.0),)*
        };
    };
    Some(run_level_function(
        kernel,
        plan,
        RunLevel {
            name: format_ident!("__run_shifted"),
            doc: " The shifted point loop over the rows `first..` of a run (see `stencil!`'s \
                  emitter, `shifted.rs`): each input row loaded once per vector, its \
                  neighbours along the row by lane shifts, the plain loop's bits; `false` \
                  (nothing written) when the run does not fit it (`run_level.rs`).",
            shifts: format_ident!("SINGLE_SHIFTS"),
            reach,
            members: &members,
            aheads: aheads.collect(),
            setup,
        },
    ))
}
