//! The CPU specialisation of a kernel: its row function and point loops, from the lowered IR.
//!
//! Implements the row contract of [`stencil_core::row`]: `__rows` receives a [`RowArgs`]
//! and one output slice per output field and row, takes one input slice per *window* (an
//! input row the kernel reads, spanning every unit-stride offset it reads of that row, so the
//! 7-point stencil's seven reads are five slices), and calls `__point_loop`, a plain indexed
//! loop over slices of exact lengths that LLVM vectorises. Inside the loop every IR node
//! reachable from a store is one `let`, in arena order, computed with the same operations (and
//! the same [`Element`] math functions) the reference interpreter uses, so the two agree bit
//! for bit.
//!
//! An output read in place (`y[i] = a * x[i] + y[i]`: at offset zero only) is read from the
//! output's own row at the point, before the point's store; such kernels take plain stores
//! (their streaming loop is the prefetching one: the line is read anyway).
//!
//! Reductions are outputs to the loop (the row contract's "Reductions"): after the output
//! grids, one output slice per reduction, written with each point's value; the streaming
//! loop streams the grids' lines only and stores the reductions' with plain stores.
//!
//! Register blocks (Datta's `RY`, [`JAMMED_ROWS`]): for kernels of two dimensions or more
//! without a retimed loop, `__rows_jR` and its loops compute `R` adjacent rows of the
//! second-innermost dimension in one pass (unroll-and-jam), each window the rows share loaded
//! once; `__rows` hands a block of `R` rows to it, and any other count row by row.
//!
//! [`RowArgs`]: stencil_core::row::RowArgs
//! [`Element`]: stencil_core::Element

use std::collections::HashMap;

use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, format_ident, quote};
use stencil_core::{
    BinaryOp, CmpOp, Expr, ExprId, JAMMED_ROWS, Kernel, LetId, LogicOp, MAX_DIMS, Offset, Role,
    Stmt, UnaryOp,
};

use super::{elem_type, float_literal, int_tokens};

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

fn ident(prefix: &str, index: usize) -> Ident {
    format_ident!("{prefix}{index}")
}

/// A register block of `rows` adjacent rows along the second-innermost dimension, as one pass
/// of a point loop computes them, reading each input row it needs once: through a *window*
/// per (input, offset along the other dimensions), a slice that spans every unit-stride
/// offset the block reads of that row. Fewer slices than distinct reads keep the loop's
/// pointers in registers (the 7-point stencil reads 7 offsets of 5 rows; two jammed rows of
/// it read 12 offsets of 8 rows).
pub(super) struct RowBlock {
    rows: usize,
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
    fn extra(&self) -> proc_macro2::Literal {
        proc_macro2::Literal::usize_unsuffixed((self.hi - self.lo) as usize)
    }

    /// The window's [`RowWindow`](stencil_core::row::RowWindow), from the run arguments.
    fn descriptor(&self) -> TokenStream {
        let input = proc_macro2::Literal::usize_unsuffixed(self.input);
        let entries = (0..MAX_DIMS).map(|d| int_tokens(i64::from(self.offset.get(d))));
        let lo = int_tokens(i64::from(self.lo));
        quote!(args.row_window(#input, [#(#entries),*], #lo))
    }

    /// The window over `n` points, from the row arguments.
    fn arg(&self, n: &TokenStream) -> TokenStream {
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
    fn window_rows(&self) -> Vec<TokenStream> {
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
    fn read(&self, r: usize, k: usize) -> TokenStream {
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

    /// Suffix of this block's function names (none for one row).
    fn suffix(&self) -> String {
        if self.rows == 1 {
            String::new()
        } else {
            format!("_j{}", self.rows)
        }
    }

    /// Name of output `k` of row `r` (`oK` for one row, `oK_R` for more).
    fn output(&self, k: usize, r: usize) -> Ident {
        if self.rows == 1 {
            ident("o", k)
        } else {
            format_ident!("o{k}_{r}")
        }
    }

    /// Name of node `i` of row `r` (`eI` for one row, `eI_R` for more).
    fn node(&self, i: usize, r: usize) -> Ident {
        if self.rows == 1 {
            ident("e", i)
        } else {
            format_ident!("e{i}_{r}")
        }
    }
}

/// `fn __run`, the row functions and point loops it calls, and their jammed forms for
/// `kernel`.
///
/// `__run` walks the rows of a run: in blocks of the largest jammed count ([`JAMMED_ROWS`]:
/// kernels of two dimensions or more whose loop is not retimed) that the run's register block
/// allows and that fits the rows left, through `__rows_jR`, then one row at a time through
/// `__rows`. Each form computes its windows' [`RowWindow`]s once per run; a row's windows
/// are then a multiply-add each. A block's loops are generated by [`block_functions`].
///
/// [`RowWindow`]: stencil_core::row::RowWindow
pub(super) fn row_functions(kernel: &Kernel) -> TokenStream {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let plan = LoopPlan::of(kernel);
    let (retimed_fn, retimed_call) = super::retimed::retimed_loop(kernel, &plan).unzip();
    let reducing = plan.n_outputs > plan.n_grids;
    let mut jammed: Vec<usize> = if kernel.n_dims >= 2 && retimed_fn.is_none() && !reducing {
        JAMMED_ROWS.to_vec()
    } else {
        Vec::new()
    };
    jammed.sort_unstable_by(|a, b| b.cmp(a));
    let outputs: Vec<Ident> = (0..plan.n_outputs).map(|k| ident("__out", k)).collect();
    let mut forms = Vec::new();
    let mut walks = Vec::new();
    for rows in jammed.iter().copied().chain([1]) {
        let block = RowBlock::of(kernel, &plan, rows);
        let first = if rows == 1 {
            retimed_call.clone()
        } else {
            None
        };
        let (fns, body) = if reducing {
            reducing_functions(kernel, &plan, &block)
        } else {
            block_functions(kernel, &plan, &block, first)
        };
        let name = format_ident!("__rows{}", block.suffix());
        let n_windows = proc_macro2::Literal::usize_unsuffixed(block.windows.len());
        let descriptors = block.windows.iter().map(Window::descriptor);
        let count = proc_macro2::Literal::usize_unsuffixed(rows);
        let row_outputs: Vec<Ident> = (0..rows)
            .flat_map(|r| (0..plan.n_outputs).map(move |k| (k, r)))
            .map(|(k, r)| block.output(k, r))
            .collect();
        // Per output, its rows of the block, bound by one `rows_mut`.
        let bind_rows = (0..plan.n_outputs).map(|k| {
            let names = (0..rows).map(|r| block.output(k, r));
            let output = &outputs[k];
            quote!(let [#(#names),*] = #output.rows_mut::<#count>(r);)
        });
        let inline = if rows == 1 {
            quote!(#[inline(always)])
        } else {
            quote!(#[inline(never)])
        };
        forms.push(quote! {
            #inline
            fn #name(
                args: &#p::RowArgs<'_, #elem>,
                w: &[#p::RowWindow<'_, #elem>; #n_windows],
                r: usize,
                #(#row_outputs: &mut [#elem],)*
            ) {
                #body
            }
            #fns
        });
        let condition = if rows == 1 {
            quote!(r < rows)
        } else {
            quote!(jam >= #count && r + #count <= rows)
        };
        walks.push(quote! {
            if #condition {
                let w: [#p::RowWindow<'_, #elem>; #n_windows] = [#(#descriptors),*];
                while r + #count <= rows {
                    #(#bind_rows)*
                    #name(args, &w, r, #(#row_outputs),*);
                    r += #count;
                }
            }
        });
    }
    quote! {
        fn __run(args: &#p::RowArgs<'_, #elem>, outs: &mut [#p::OutputRun<'_, #elem>]) {
            let [#(#outputs),*] = outs else {
                ::core::unreachable!("stencil!: wrong output count")
            };
            let rows = args.rows();
            let jam = args.register_rows();
            let mut r = 0;
            #(#walks)*
        }

        #retimed_fn

        #(#forms)*
    }
}

/// The names and arguments every point loop of `block` takes besides its outputs: one window
/// per input row read (`rK`, with `extras[K]` points beyond the row) and the parameters used
/// (`pK`), and the row function's expressions for them.
struct LoopArgs {
    reads: Vec<Ident>,
    extras: Vec<proc_macro2::Literal>,
    params: Vec<Ident>,
    read_args: Vec<TokenStream>,
    param_args: Vec<TokenStream>,
}

impl LoopArgs {
    fn of(plan: &LoopPlan, block: &RowBlock) -> LoopArgs {
        LoopArgs {
            reads: (0..block.windows.len()).map(|k| ident("r", k)).collect(),
            extras: block.windows.iter().map(Window::extra).collect(),
            params: plan.params.iter().map(|&k| ident("p", k)).collect(),
            read_args: block.window_rows(),
            param_args: plan
                .params
                .iter()
                .map(|&k| {
                    let k = proc_macro2::Literal::usize_unsuffixed(k);
                    quote!(args.param(#k))
                })
                .collect(),
        }
    }
}

/// The point loops of `block` (`__point_loop`, `__point_loop_streaming`,
/// `__point_loop_prefetching`, suffixed for a jammed block) and the body of the row function
/// that calls them (running `first` before anything else).
fn block_functions(
    kernel: &Kernel,
    plan: &LoopPlan,
    block: &RowBlock,
    first: Option<TokenStream>,
) -> (TokenStream, TokenStream) {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let suffix = block.suffix();
    let point_loop = format_ident!("__point_loop{suffix}");
    let streaming = format_ident!("__point_loop_streaming{suffix}");
    let prefetching = format_ident!("__point_loop_prefetching{suffix}");
    // Outputs row by row, as the row contract orders them.
    let outputs: Vec<Ident> = (0..block.rows)
        .flat_map(|r| (0..plan.n_outputs).map(move |k| (k, r)))
        .map(|(k, r)| block.output(k, r))
        .collect();
    let LoopArgs {
        reads,
        extras,
        params,
        read_args,
        param_args,
    } = LoopArgs::of(plan, block);
    let (first_output, other_outputs) = outputs
        .split_first()
        .unwrap_or_else(|| unreachable!("stencil!: bug in emit: a verified kernel has an output"));

    // Per row, every node a store needs, then every row's stores: the rows share the loads
    // of the reads they have in common. Beyond one row, each row's nodes sit in a block of
    // their own, so the nesting of `let` scopes (which the compiler's debug information walks
    // recursively) stays that of one row.
    let mut nodes = Vec::new();
    let mut stores = Vec::new();
    for r in 0..block.rows {
        let name = |id: ExprId| block.node(id.index(), r);
        let read = |k: usize| block.read(r, k);
        let own = |k: usize| {
            let output = block.output(k, r);
            quote!(#output[x])
        };
        let statements: Vec<TokenStream> = kernel
            .exprs
            .iter()
            .enumerate()
            .filter(|(i, _)| plan.reachable[*i])
            .map(|(i, node)| node_statement(kernel, plan, i, node, &name, (&read, &own)))
            .collect();
        let values: Vec<Ident> = plan.stores.iter().map(|&(_, value)| name(value)).collect();
        let targets: Vec<Ident> = plan
            .stores
            .iter()
            .map(|&(output, _)| block.output(output, r))
            .collect();
        if block.rows == 1 {
            nodes.extend(statements);
            stores.push(quote!(#(#targets[x] = #values;)*));
        } else {
            let row_values: Vec<Ident> = (0..values.len())
                .map(|v| format_ident!("v{v}_{r}"))
                .collect();
            nodes.push(quote! {
                let (#(#row_values,)*) = { #(#statements)* (#(#values,)*) };
            });
            stores.push(quote!(#(#targets[x] = #row_values;)*));
        }
    }

    let lines: Vec<Ident> = (0..outputs.len()).map(|k| ident("l", k)).collect();
    // Each line computed goes out by a streaming store for a grid, a plain one for a
    // reduction (its scratch row is read back at once).
    let line_stores = (0..block.rows)
        .flat_map(|_| (0..plan.n_outputs).map(|k| k < plan.n_grids))
        .zip(outputs.iter().zip(&lines))
        .map(|(streamed, (output, line))| {
            if streamed {
                quote!(#p::stream_line(&mut #output[at..at + LINE], &#line);)
            } else {
                quote!(#output[at..at + LINE].copy_from_slice(&#line);)
            }
        });
    // Each input's leading row `args.prefetch()` rows ahead (at least the block's height;
    // empty slices when off), for every row of the block, one line per line computed: interleaved with the work, the
    // prefetches keep memory busy while the core computes (a burst of the whole row before it
    // measured 12% slower for W1).
    let lead = super::retimed::leading(kernel, &plan.reads);
    let mut pf = Vec::new();
    let mut pf_setup = Vec::new();
    for &lead in &lead {
        for r in 0..block.rows {
            let name = ident("__pf", pf.len());
            pf_setup.push(super::retimed::prefetch_window(
                kernel,
                lead,
                &name,
                (block.rows, r),
                (quote!(args.nth_row(r)), quote!(0), quote!(n)),
            ));
            pf.push(name);
        }
    }
    let n_lead = proc_macro2::Literal::usize_unsuffixed(pf.len());
    let body = quote! {
        let n = args.len();
        #first
        #(#pf_setup)*
        let prefetch: [&[#elem]; #n_lead] = [#(#pf),*];
        if args.streaming() {
            return #streaming(
                &prefetch, #(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*
            );
        }
        if args.prefetch() > 0 {
            return #prefetching(
                &prefetch, #(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*
            );
        }
        #point_loop(#(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*);
    };
    let streaming_fn = if plan.n_grids == 0 || plan.in_place {
        // Nothing to stream: reductions take plain stores, and an output read in place has
        // its line read anyway (and the streaming loop computes lines into fresh registers).
        quote! {
            /// The point loop for streaming stores: the kernel has no output grid or reads one
            /// in place, and its reductions take plain stores, so this is the prefetching loop.
            #[inline(always)]
            fn #streaming(
                prefetch: &[&[#elem]; #n_lead],
                #(#outputs: &mut [#elem],)*
                #(#reads: &[#elem],)*
                #(#params: #elem),*
            ) {
                #prefetching(prefetch, #(#outputs,)* #(#reads,)* #(#params),*);
            }
        }
    } else {
        quote! {
            /// The point loop with streaming stores: plain up to the first output's first
            /// 64-byte boundary, then one cache line of every output at a time computed into
            /// registers and streamed out (prefetching the same line of every `prefetch` row;
            /// reductions' lines stored plainly), then the plain tail.
            #[inline(always)]
            fn #streaming(
                prefetch: &[&[#elem]; #n_lead],
                #(#outputs: &mut [#elem],)*
                #(#reads: &[#elem],)*
                #(#params: #elem),*
            ) {
                const LINE: usize = #p::LINE_BYTES / ::core::mem::size_of::<#elem>();
                let n = #first_output.len();
                let head = #first_output.as_ptr().align_offset(#p::LINE_BYTES).min(n);
                let body = head + (n - head) / LINE * LINE;
                #point_loop(#(&mut #outputs[..head],)* #(&#reads[..head + #extras],)* #(#params),*);
                let mut at = head;
                while at < body {
                    for row in prefetch {
                        #p::lanes::prefetch(row, at);
                    }
                    #(let mut #lines = [0.0 as #elem; LINE];)*
                    #point_loop(
                        #(&mut #lines,)* #(&#reads[at..at + LINE + #extras],)* #(#params),*
                    );
                    #(#line_stores)*
                    at += LINE;
                }
                #point_loop(#(&mut #outputs[body..n],)* #(&#reads[body..n + #extras],)* #(#params),*);
            }
        }
    };
    let functions = quote! {
        #streaming_fn

        /// The point loop in blocks of a few cache lines, prefetching each block of every
        /// `prefetch` row before computing it.
        #[inline(always)]
        fn #prefetching(
            prefetch: &[&[#elem]; #n_lead],
            #(#outputs: &mut [#elem],)*
            #(#reads: &[#elem],)*
            #(#params: #elem),*
        ) {
            const BLOCK: usize = 4 * #p::LINE_BYTES / ::core::mem::size_of::<#elem>();
            let n = #first_output.len();
            let mut at = 0;
            while at < n {
                let end = n.min(at + BLOCK);
                for row in prefetch {
                    #p::lanes::prefetch_lines(row.get(at..end).unwrap_or(&[]));
                }
                #point_loop(
                    #(&mut #outputs[at..end],)* #(&#reads[at..end + #extras],)* #(#params),*
                );
                at = end;
            }
        }

        #[inline(always)]
        fn #point_loop(
            #(#outputs: &mut [#elem],)*
            #(#reads: &[#elem],)*
            #(#params: #elem),*
        ) {
            let n = #first_output.len();
            #(let #other_outputs = &mut #other_outputs[..n];)*
            #(let #reads = &#reads[..n + #extras];)*
            for x in 0..n {
                #(#nodes)*
                #(#stores)*
            }
        }
    };
    (functions, body)
}

/// The point loop of a kernel with reductions (one row: such kernels have no jammed forms)
/// and the body of the row function that calls it. The row contract's reduction runs then
/// hold block values (see `stencil_core::row`): the loop walks the row in blocks of
/// `reduce::BLOCK` points from its start and each block in chunks of `reduce::LANES` points,
/// folding point `x` of a chunk into lane `x` of each reduction as it computes it (the lanes
/// stay in registers, and the loads of the next points overlap the adds), then stores each
/// block's `reduce::combine_lanes`: the bits of `reduce::block`, with no scratch row. Grids
/// take plain stores.
fn reducing_functions(
    kernel: &Kernel,
    plan: &LoopPlan,
    block: &RowBlock,
) -> (TokenStream, TokenStream) {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let grids: Vec<Ident> = (0..plan.n_grids).map(|k| block.output(k, 0)).collect();
    let blocks: Vec<Ident> = (plan.n_grids..plan.n_outputs)
        .map(|k| block.output(k, 0))
        .collect();
    let accs: Vec<Ident> = (0..blocks.len()).map(|k| ident("acc", k)).collect();
    let vals: Vec<Ident> = (0..blocks.len()).map(|k| ident("val", k)).collect();
    let ops: Vec<TokenStream> = kernel
        .reductions
        .iter()
        .map(|r| {
            let op = format_ident!("{}", r.op.type_name());
            quote!(#p::ReduceOp::#op)
        })
        .collect();
    let LoopArgs {
        reads,
        extras,
        params,
        read_args,
        param_args,
    } = LoopArgs::of(plan, block);
    let name = |id: ExprId| block.node(id.index(), 0);
    let read = |k: usize| block.read(0, k);
    let own = |k: usize| {
        let output = block.output(k, 0);
        quote!(#output[x])
    };
    let nodes: Vec<TokenStream> = kernel
        .exprs
        .iter()
        .enumerate()
        .filter(|(i, _)| plan.reachable[*i])
        .map(|(i, node)| node_statement(kernel, plan, i, node, &name, (&read, &own)))
        .collect();
    // Per point: the grids' stores and each reduction's value into its chunk array; per
    // chunk: the values folded into the lanes (two fixed-size loops LLVM vectorises whole).
    let mut updates = Vec::new();
    let mut folds = Vec::new();
    for &(output, value) in &plan.stores {
        let value = name(value);
        if output < plan.n_grids {
            let target = block.output(output, 0);
            updates.push(quote!(#target[x] = #value;));
        } else {
            let r = output - plan.n_grids;
            let (acc, val) = (&accs[r], &vals[r]);
            updates.push(quote!(#val[x] = #value;));
            folds.push(match kernel.reductions[r].op {
                stencil_core::ReduceOp::Sum => quote!(#acc[l] = #acc[l] + #val[l];),
                stencil_core::ReduceOp::Min => {
                    quote!(#acc[l] = #p::Element::min(#acc[l], #val[l]);)
                }
                stencil_core::ReduceOp::Max => {
                    quote!(#acc[l] = #p::Element::max(#acc[l], #val[l]);)
                }
            });
        }
    }
    let looped = format_ident!("__point_loop_reducing");
    let body = quote! {
        let n = args.len();
        #looped(n, #(#grids,)* #(#blocks,)* #(#read_args,)* #(#param_args),*);
    };
    let functions = quote! {
        /// The point loop of a kernel with reductions: blocks of `BLOCK` points, chunks of
        /// `LANES` points folded into the lanes as they are computed.
        #[inline(always)]
        fn #looped(
            n: usize,
            #(#grids: &mut [#elem],)*
            #(#blocks: &mut [#elem],)*
            #(#reads: &[#elem],)*
            #(#params: #elem),*
        ) {
            const BLOCK: usize = #p::reduce::BLOCK;
            const LANES: usize = #p::reduce::LANES;
            #(let #grids = &mut #grids[..n];)*
            #(let #reads = &#reads[..n + #extras];)*
            let mut at = 0usize;
            let mut index = 0usize;
            while at < n {
                let end = if n - at < BLOCK { n } else { at + BLOCK };
                #(let mut #accs = [#p::reduce::identity::<#elem>(#ops); LANES];)*
                #(let mut #vals = [#p::reduce::identity::<#elem>(#ops); LANES];)*
                while at + LANES <= end {
                    #(let #grids = &mut #grids[at..at + LANES];)*
                    #(let #reads = &#reads[at..at + LANES + #extras];)*
                    for x in 0..LANES {
                        #(#nodes)*
                        #(#updates)*
                    }
                    for l in 0..LANES {
                        #(#folds)*
                    }
                    at += LANES;
                }
                if at < end {
                    let tail = end - at;
                    #(let #grids = &mut #grids[at..end];)*
                    #(let #reads = &#reads[at..end + #extras];)*
                    for x in 0..tail {
                        #(#nodes)*
                        #(#updates)*
                    }
                    for l in 0..tail {
                        #(#folds)*
                    }
                    at = end;
                }
                #(#blocks[index] = #p::reduce::combine_lanes(#ops, #accs);)*
                index += 1;
            }
        }
    };
    (functions, body)
}

/// `let eI: T = ...;` for node `i`, naming nodes by `name`, reading read number `k` of the
/// plan at point `x` by the tokens `read(k)` and output `k` read in place by `own(k)`.
fn node_statement(
    kernel: &Kernel,
    plan: &LoopPlan,
    i: usize,
    node: &Expr,
    name: &dyn Fn(ExprId) -> Ident,
    (read, own): (&dyn Fn(usize) -> TokenStream, &dyn Fn(usize) -> TokenStream),
) -> TokenStream {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let e = name;
    let name = e(ExprId::new(i));
    let value = match *node {
        Expr::Const(value) => float_literal(value, kernel.elem()),
        Expr::Param(param) => ident("p", param.index()).into_token_stream(),
        Expr::Read { field, .. } if kernel.field(field).role == Role::Output => {
            // In place, at offset zero (the verifier allows no other read of an output).
            let output = kernel
                .outputs()
                .position(|f| f == field)
                .unwrap_or_else(|| {
                    unreachable!("stencil!: bug in emit: an output that is not an output")
                });
            own(output)
        }
        Expr::Read { field, offset } => {
            let input = kernel.inputs().position(|f| f == field).unwrap_or_else(|| {
                unreachable!("stencil!: bug in emit: a verified kernel reads only inputs")
            });
            let k = plan
                .reads
                .iter()
                .position(|r| *r == (input, offset))
                .unwrap_or_else(|| unreachable!("stencil!: bug in emit: read not planned"));
            read(k)
        }
        Expr::Let(var) => {
            let value = kernel
                .body
                .iter()
                .find_map(|s| match *s {
                    Stmt::Let { var: v, value } if v == var => Some(value),
                    _ => None,
                })
                .unwrap_or_else(|| unreachable!("stencil!: bug in emit: undefined let"));
            e(value).into_token_stream()
        }
        Expr::Unary {
            op: UnaryOp::Neg,
            arg,
        } => {
            let arg = e(arg);
            quote!(-#arg)
        }
        Expr::Unary { op, arg } => {
            let function = format_ident!("{}", op.name());
            let arg = e(arg);
            quote!(#p::Element::#function(#arg))
        }
        Expr::Binary { op, lhs, rhs } => {
            let (lhs, rhs) = (e(lhs), e(rhs));
            match op {
                BinaryOp::Add => quote!(#lhs + #rhs),
                BinaryOp::Sub => quote!(#lhs - #rhs),
                BinaryOp::Mul => quote!(#lhs * #rhs),
                BinaryOp::Div => quote!(#lhs / #rhs),
                BinaryOp::Min => quote!(#p::Element::min(#lhs, #rhs)),
                BinaryOp::Max => quote!(#p::Element::max(#lhs, #rhs)),
                BinaryOp::Pow => quote!(#p::Element::powf(#lhs, #rhs)),
            }
        }
        Expr::Compare { op, lhs, rhs } => {
            let (lhs, rhs) = (e(lhs), e(rhs));
            match op {
                CmpOp::Lt => quote!(#lhs < #rhs),
                CmpOp::Le => quote!(#lhs <= #rhs),
                CmpOp::Gt => quote!(#lhs > #rhs),
                CmpOp::Ge => quote!(#lhs >= #rhs),
                CmpOp::Eq => quote!(#lhs == #rhs),
                CmpOp::Ne => quote!(#lhs != #rhs),
            }
        }
        Expr::Logic { op, lhs, rhs } => {
            let (lhs, rhs) = (e(lhs), e(rhs));
            match op {
                LogicOp::And => quote!(#lhs && #rhs),
                LogicOp::Or => quote!(#lhs || #rhs),
            }
        }
        Expr::Not(arg) => {
            let arg = e(arg);
            quote!(!#arg)
        }
        Expr::Select {
            cond,
            then,
            otherwise,
        } => {
            let (cond, then, otherwise) = (e(cond), e(then), e(otherwise));
            quote!(if #cond { #then } else { #otherwise })
        }
    };
    let ty = if node.is_boolean() {
        quote!(bool)
    } else {
        quote!(#elem)
    };
    quote!(let #name: #ty = #value;)
}
