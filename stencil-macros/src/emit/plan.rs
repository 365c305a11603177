//! The plan of a kernel's point loops, shared by the plain and the retimed loop: the nodes a
//! store depends on, the distinct reads, the parameters and outputs ([`LoopPlan`]), and the
//! register blocks that read each input row once through a window ([`RowBlock`]).

use std::collections::HashMap;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use stencil_core::{Expr, ExprId, Kernel, LetId, MAX_DIMS, Offset, Role, Stmt};

use super::tokens::{ident, int_tokens};

/// What the point loop needs: reachable nodes, distinct reads, used parameters, outputs (the
/// output grids, then the reductions).
pub(super) struct LoopPlan {
    /// Per arena node: whether a store depends on it.
    pub(super) reachable: Vec<bool>,
    /// Distinct (input ordinal, offset) pairs read, in arena order of first use.
    pub(super) reads: Vec<(usize, Offset)>,
    /// Indices of the parameters used, ascending.
    pub(super) params: Vec<usize>,
    /// Per store or reduce statement: (output ordinal, value node), in body order; reduction
    /// `r` is output `n_grids + r`.
    pub(super) stores: Vec<(usize, ExprId)>,
    /// Number of outputs: output grids and reductions.
    pub(super) n_outputs: usize,
    /// Number of output grids (the outputs before the reductions; the only ones streamed).
    pub(super) n_grids: usize,
    /// Whether the kernel reads an output in place (then nothing is streamed).
    pub(super) in_place: bool,
}

impl LoopPlan {
    pub(super) fn of(kernel: &Kernel) -> LoopPlan {
        let let_values: HashMap<LetId, ExprId> = kernel
            .body
            .iter()
            .filter_map(|s| match *s {
                Stmt::Let { var, value } => Some((var, value)),
                Stmt::Store { .. } | Stmt::Reduce { .. } => None,
            })
            .collect();
        let ordinal_among = |role: Role| {
            let mut ordinals = vec![usize::MAX; kernel.fields.len()];
            for (n, (i, _)) in kernel
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| f.role == role)
                .enumerate()
            {
                ordinals[i] = n;
            }
            ordinals
        };
        let input_ordinal = ordinal_among(Role::Input);
        let output_ordinal = ordinal_among(Role::Output);
        let n_grids = kernel.outputs().count();
        let stores: Vec<(usize, ExprId)> = kernel
            .body
            .iter()
            .filter_map(|s| match *s {
                Stmt::Store { field, value } => Some((output_ordinal[field.index()], value)),
                Stmt::Reduce { reduction, value } => Some((n_grids + reduction.index(), value)),
                Stmt::Let { .. } => None,
            })
            .collect();

        let mut reachable = vec![false; kernel.exprs.len()];
        let mut stack: Vec<ExprId> = stores.iter().map(|&(_, v)| v).collect();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut reachable[id.index()], true) {
                continue;
            }
            let node = kernel.expr(id);
            stack.extend(node.operands());
            if let Expr::Let(var) = *node {
                stack.push(let_values[&var]);
            }
        }

        let mut reads = Vec::new();
        let mut params = Vec::new();
        let mut in_place = false;
        for (i, node) in kernel.exprs.iter().enumerate() {
            if !reachable[i] {
                continue;
            }
            match *node {
                Expr::Read { field, .. } if kernel.field(field).role == Role::Output => {
                    in_place = true;
                }
                Expr::Read { field, offset } => {
                    let read = (input_ordinal[field.index()], offset);
                    if !reads.contains(&read) {
                        reads.push(read);
                    }
                }
                Expr::Param(p) => params.push(p.index()),
                _ => {}
            }
        }
        params.sort_unstable();
        params.dedup();
        LoopPlan {
            reachable,
            reads,
            params,
            stores,
            n_outputs: n_grids + kernel.reductions.len(),
            n_grids,
            in_place,
        }
    }
}

/// A register block of `rows` adjacent rows along the second-innermost dimension, as one pass
/// of a point loop computes them, reading each input row it needs once: through a *window*
/// per (input, offset along the other dimensions), a slice that spans every unit-stride
/// offset the block reads of that row. Fewer slices than distinct reads keep the loop's
/// pointers in registers (the 7-point stencil reads 7 offsets of 5 rows; two jammed rows of
/// it read 12 offsets of 8 rows).
pub(super) struct RowBlock {
    pub(super) rows: usize,
    /// The windows, in order of first use.
    pub(super) windows: Vec<Window>,
    /// Per row, per read of the plan: its window and its position in the window at point 0.
    read_at: Vec<Vec<(usize, i32)>>,
}

/// The slice of one input row a point loop reads (see [`RowBlock`]).
pub(super) struct Window {
    /// Input ordinal.
    input: usize,
    /// Offset from row 0 of the block, unit-stride entry 0.
    offset: Offset,
    /// Least and greatest unit-stride offset read.
    lo: i32,
    hi: i32,
}

impl Window {
    /// Elements beyond the point count the window holds (`hi - lo`).
    pub(super) fn extra(&self) -> proc_macro2::Literal {
        proc_macro2::Literal::usize_unsuffixed((self.hi - self.lo) as usize)
    }

    /// The window's [`RowWindow`](stencil_core::row::RowWindow), from the run arguments.
    pub(super) fn descriptor(&self) -> TokenStream {
        let input = proc_macro2::Literal::usize_unsuffixed(self.input);
        let entries = (0..MAX_DIMS).map(|d| int_tokens(i64::from(self.offset.get(d))));
        let lo = int_tokens(i64::from(self.lo));
        quote!(args.row_window(#input, [#(#entries),*], #lo))
    }

    /// The window over `n` points, from the row arguments.
    pub(super) fn arg(&self, n: &TokenStream) -> TokenStream {
        let input = proc_macro2::Literal::usize_unsuffixed(self.input);
        let entries = (0..MAX_DIMS).map(|d| int_tokens(i64::from(self.offset.get(d))));
        let lo = int_tokens(i64::from(self.lo));
        let extra = self.extra();
        quote!(args.span(#input, [#(#entries),*], #lo, #n + #extra))
    }
}

impl RowBlock {
    pub(super) fn of(kernel: &Kernel, plan: &LoopPlan, rows: usize) -> RowBlock {
        let unit = kernel.n_dims - 1;
        let mut windows: Vec<Window> = Vec::new();
        let mut read_at = Vec::new();
        for r in 0..rows {
            let mut row = Vec::new();
            for &(input, offset) in &plan.reads {
                let mut row_offset = offset;
                row_offset.0[unit] = 0;
                if r > 0 {
                    row_offset.0[kernel.n_dims - 2] += i32::try_from(r).unwrap_or_else(|_| {
                        unreachable!("stencil!: bug in emit: register block too tall")
                    });
                }
                let dx = offset.get(unit);
                let w = match windows
                    .iter()
                    .position(|w| w.input == input && w.offset == row_offset)
                {
                    Some(w) => {
                        windows[w].lo = windows[w].lo.min(dx);
                        windows[w].hi = windows[w].hi.max(dx);
                        w
                    }
                    None => {
                        windows.push(Window {
                            input,
                            offset: row_offset,
                            lo: dx,
                            hi: dx,
                        });
                        windows.len() - 1
                    }
                };
                row.push((w, dx));
            }
            read_at.push(row);
        }
        RowBlock {
            rows,
            windows,
            read_at,
        }
    }

    /// The window arguments of the block's loops over points `from..to` of the row (as
    /// sub-slices of windows named `rK` over the whole row).
    pub(super) fn window_ranges(&self, from: &TokenStream, to: &TokenStream) -> Vec<TokenStream> {
        self.windows
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let name = ident("r", k);
                let extra = w.extra();
                quote!(&#name[#from..#to + #extra])
            })
            .collect()
    }

    /// The window arguments over the whole row, from the row arguments (`n` points).
    pub(super) fn window_args(&self) -> Vec<TokenStream> {
        self.windows.iter().map(|w| w.arg(&quote!(n))).collect()
    }

    /// The window arguments over the whole row `r` of the run (`n` points), from the block's
    /// window descriptors `w`.
    pub(super) fn window_rows(&self) -> Vec<TokenStream> {
        self.windows
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let k = proc_macro2::Literal::usize_unsuffixed(k);
                let extra = w.extra();
                quote!(w[#k].at(r, n + #extra))
            })
            .collect()
    }

    /// Tokens reading row `r`'s read number `k` of the plan at point `x`.
    pub(super) fn read(&self, r: usize, k: usize) -> TokenStream {
        let (w, dx) = self.read_at[r][k];
        let name = ident("r", w);
        let at = (dx - self.windows[w].lo) as usize;
        if at == 0 {
            quote!(#name[x])
        } else {
            let at = proc_macro2::Literal::usize_unsuffixed(at);
            quote!(#name[x + #at])
        }
    }

    /// Tokens reading row `r`'s read number `k` of the plan at point `x` of its window's
    /// shifted slice (see [`shifts`](Self::shifts)): `rW_A[x]` for window `W` read `A` points
    /// into it.
    pub(super) fn read_shifted(&self, r: usize, k: usize) -> TokenStream {
        let (w, dx) = self.read_at[r][k];
        let name = shifted_name(w, (dx - self.windows[w].lo) as usize);
        quote!(#name[x])
    }

    /// `let rW_A = &rW[A..A + n];` for every window `W` and shift `A` the block reads: one
    /// slice of exactly `n` points per unit-stride offset read, so that each read is the
    /// loop's index into a slice of the loop's length (the slices share the window's base
    /// register). Indexing one window at `x + A` instead let LLVM forward each load to the
    /// next iteration's neighbour, a recurrence it vectorised with two lane shuffles per
    /// vector where gcc folds a load into the add, or kept a scalar remainder of four points
    /// per row (W1 at 64^3, one AVX2 thread, no prefetch: 5.2-5.7 instructions per point,
    /// 4.0 with shifted slices; gcc's naive loop 3.2).
    pub(super) fn shifts(&self) -> TokenStream {
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for row in &self.read_at {
            for &(w, dx) in row {
                let shift = (w, (dx - self.windows[w].lo) as usize);
                if !seen.contains(&shift) {
                    seen.push(shift);
                }
            }
        }
        let lets = seen.iter().map(|&(w, at)| {
            let name = shifted_name(w, at);
            let window = ident("r", w);
            let at = proc_macro2::Literal::usize_unsuffixed(at);
            quote!(let #name = &#window[#at..#at + n];)
        });
        quote!(#(#lets)*)
    }

    /// Suffix of this block's function names (none for one row).
    pub(super) fn suffix(&self) -> String {
        if self.rows == 1 {
            String::new()
        } else {
            format!("_j{}", self.rows)
        }
    }

    /// Name of output `k` of row `r` (`oK` for one row, `oK_R` for more).
    pub(super) fn output(&self, k: usize, r: usize) -> Ident {
        if self.rows == 1 {
            ident("o", k)
        } else {
            format_ident!("o{k}_{r}")
        }
    }

    /// Name of node `i` of row `r` (`eI` for one row, `eI_R` for more).
    pub(super) fn node(&self, i: usize, r: usize) -> Ident {
        if self.rows == 1 {
            ident("e", i)
        } else {
            format_ident!("e{i}_{r}")
        }
    }
}

/// Name of window `w`'s slice from point `at` (see [`RowBlock::shifts`]).
fn shifted_name(w: usize, at: usize) -> Ident {
    format_ident!("r{w}_{at}")
}
