//! The retimed point loop: partial sums computed once per vector and shifted along the row.
//!
//! For a kernel whose every stored value is linear in its reads and whose retimed form pays
//! ([`Retimed::pays`]: partial sums reused across at least three displacements on average,
//! as in the 27-point stencil), `__point_loop_retimed` follows
//! [`stencil_core::passes::linear`]: per vector of points (the build's lanes,
//! `stencil_cpu::lanes`) it loads and adds each partial sum of several reads once, one vector
//! ahead, and combines them per unit-stride displacement first ([`Retimed::combinations`]:
//! `Q_dx = sum of sign * coefficient * S_g`, with fused multiply-adds), so each distinct
//! combination is shifted once by lanes of its previous, current and next vectors instead of
//! every partial sum (the 27-point stencil: two combinations, one shifted by -1 and by +1,
//! one used in place: two shifts per vector where shifting its three sums took six).
//!
//! The vector loop itself is `stencil_cpu::lanes::sweep`: the generated code gives it the
//! member windows, the outputs and a `VectorBody` (a local type holding the coefficients and the
//! rolled combinations, whose `#[inline(always)] step` is the kernel's arithmetic); `sweep`
//! checks lengths and alignment once and runs an unchecked loop of loads, that arithmetic and
//! stores, monomorphised per store kind and prefetch on/off. Each input's leading row (the
//! one a sweep meets first) is prefetched `args.prefetch()` rows ahead, one line per vector,
//! so memory streams while the core computes. Instructions per AVX2 vector of the 27-point
//! loop: 56 with per-sum shifts and per-vector checks, 46 with combinations, about 30 in
//! `sweep`.
//!
//! Rows are computed two ways. `__run_retimed` takes the rows a run computes one at a time
//! in one call of `stencil_cpu::lanes::sweep_rows` (as the shifted loop does, `super::shifted`),
//! with the step type above as its `RowBody`: the members' windows are built and checked once
//! per run, and each row restarts the rolled combinations from the members' first two
//! vectors. Restarting per row in `__point_loop_retimed`, which built nine windows and their
//! combinations at every row, took more than half of the 27-point f32 sweep of a 64^3 grid
//! in cache (rows of four vectors): 0.22 ms a sweep, 0.106 ms run-level. It declines runs
//! that prefetch or stream (sweeps from memory) and runs whose windows leave an input's
//! storage (the first and last rows of a grid with a halo narrower than a vector, for the
//! 27-point stencil), which keep the row-at-a-time loop: that one prefetches, and streams
//! from each row's first line boundary, leaving the unaligned head and the tail to the plain
//! loop. Both start their vectors at the row's first point otherwise, unaligned, and compute
//! a row that is not a whole number of vectors by computing its last vector again from
//! `n - L` (the outputs are not inputs, and a point's value does not depend on where its
//! vector starts).
//!
//! `__point_loop_retimed` returns `false`, having written nothing, when it cannot run the
//! row (no fast lane shifts in this build, a reach beyond one vector, a row shorter than a
//! vector, or a widened read span that would leave an input's storage); `__rows` then runs
//! the plain point loop. Sums are reassociated, so results agree with the reference
//! interpreter to rounding, not bit for bit.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use stencil_core::passes::linear::{Combination, Retimed, retimed_stores};
use stencil_core::{BinaryOp, Expr, ExprId, Kernel, Offset, Stmt, UnaryOp};

use super::plan::{LoopPlan, RowBlock};
use super::run_level::{RunLevel, run_level_function};
use super::tokens::{elem_type, float_literal, int_tokens, lanes_type, offset_tokens};

/// The retimed forms of a kernel's stores, when every store has one and together they pay.
struct Plan {
    /// Per store (body order): its output ordinal and retimed form.
    stores: Vec<(usize, Retimed)>,
    /// Distinct (input ordinal, offset) pairs the partial sums read (unit-stride entry 0).
    members: Vec<(usize, Offset)>,
}

impl Plan {
    fn of(kernel: &Kernel) -> Option<Plan> {
        let output_ordinal = |field| kernel.outputs().position(|f| f == field);
        let stores = retimed_stores(kernel)?
            .into_iter()
            .map(|(field, form)| Some((output_ordinal(field)?, form)))
            .collect::<Option<Vec<_>>>()?;
        let mut members = Vec::new();
        for (_, r) in &stores {
            for group in &r.groups {
                for &(field, offset) in group {
                    let input = kernel.inputs().position(|f| f == field)?;
                    if !members.contains(&(input, offset)) {
                        members.push((input, offset));
                    }
                }
            }
        }
        Some(Plan { stores, members })
    }

    fn member(&self, kernel: &Kernel, field: stencil_core::FieldId, offset: Offset) -> usize {
        let input = kernel.inputs().position(|f| f == field);
        self.members
            .iter()
            .position(|&m| Some(m) == input.map(|i| (i, offset)))
            .unwrap_or_else(|| unreachable!("stencil!: bug in emit: member not planned"))
    }
}

/// A read-free expression as a scalar Rust expression of the element type, or `None` for
/// nodes the retimed loop does not evaluate (comparisons, selects, reads).
fn scalar(kernel: &Kernel, id: ExprId) -> Option<TokenStream> {
    let p = quote!(::stencil::__private);
    Some(match *kernel.expr(id) {
        Expr::Const(value) => float_literal(value, kernel.elem()),
        Expr::Param(param) => {
            let name = format_ident!("p{}", param.index());
            quote!(#name)
        }
        Expr::Let(var) => {
            let value = kernel.body.iter().find_map(|s| match *s {
                Stmt::Let { var: v, value } if v == var => Some(value),
                _ => None,
            })?;
            scalar(kernel, value)?
        }
        Expr::Unary {
            op: UnaryOp::Neg,
            arg,
        } => {
            let arg = scalar(kernel, arg)?;
            quote!((-(#arg)))
        }
        Expr::Unary { op, arg } => {
            let function = format_ident!("{}", op.name());
            let arg = scalar(kernel, arg)?;
            quote!(#p::Element::#function(#arg))
        }
        Expr::Binary { op, lhs, rhs } => {
            let (lhs, rhs) = (scalar(kernel, lhs)?, scalar(kernel, rhs)?);
            match op {
                BinaryOp::Add => quote!((#lhs + #rhs)),
                BinaryOp::Sub => quote!((#lhs - #rhs)),
                BinaryOp::Mul => quote!((#lhs * #rhs)),
                BinaryOp::Div => quote!((#lhs / #rhs)),
                BinaryOp::Min => quote!(#p::Element::min(#lhs, #rhs)),
                BinaryOp::Max => quote!(#p::Element::max(#lhs, #rhs)),
                BinaryOp::Pow => quote!(#p::Element::powf(#lhs, #rhs)),
            }
        }
        Expr::Fma { a, b, c } => {
            let (a, b, c) = (scalar(kernel, a)?, scalar(kernel, b)?, scalar(kernel, c)?);
            quote!(#p::Element::mul_add(#a, #b, #c))
        }
        _ => return None,
    })
}

/// Per input, the read a sweep meets first among `reads`: largest offset along the
/// outermost dimension, then the next, ... (the unit-stride entry set to 0). Empty in 1-D.
pub(super) fn leading(kernel: &Kernel, reads: &[(usize, Offset)]) -> Vec<(usize, Offset)> {
    let n = kernel.n_dims;
    if n < 2 {
        return Vec::new();
    }
    let mut lead: Vec<(usize, Offset)> = Vec::new();
    let key = |o: &Offset| (0..n - 1).map(|d| o.get(d)).collect::<Vec<i32>>();
    for &(input, offset) in reads {
        let mut offset = offset;
        offset.0[n - 1] = 0;
        match lead.iter_mut().find(|(i, _)| *i == input) {
            Some(slot) if key(&offset) > key(&slot.1) => slot.1 = offset,
            Some(_) => {}
            None => lead.push((input, offset)),
        }
    }
    lead
}

/// Tokens binding `name` to the leading read's window `[lo, lo + len)` (of the row arguments
/// `row_args`) of row `r` of a block
/// of `rows` rows, `max(args.prefetch(), rows) + r` rows further along the second-innermost
/// dimension: `args.prefetch()` rows ahead, but never a row of the block itself (an empty
/// slice when off or outside).
pub(super) fn prefetch_window(
    kernel: &Kernel,
    lead: (usize, Offset),
    name: &Ident,
    (rows, r): (usize, usize),
    (row_args, lo, len): (TokenStream, TokenStream, TokenStream),
) -> TokenStream {
    let ahead = format_ident!("__ahead");
    let (input, offset) = lead;
    let input = Literal::usize_unsuffixed(input);
    let offset = offset_tokens(offset, Some((kernel.n_dims - 2, &ahead)));
    let (rows, r) = (
        Literal::isize_unsuffixed(rows as isize),
        Literal::isize_unsuffixed(r as isize),
    );
    quote! {
        let #ahead = args.prefetch().max(#rows) as isize + #r;
        let #name: &[_] = if args.prefetch() > 0 {
            #row_args.window(#input, #offset, #lo, #len).unwrap_or(&[])
        } else {
            &[]
        };
    }
}

/// `fn __point_loop_retimed` for `kernel` and the tokens `__rows` runs first, or `None` when
/// the kernel's stores have no retimed form that pays.
pub(super) fn retimed_loop(kernel: &Kernel, plan: &LoopPlan) -> Option<(TokenStream, TokenStream)> {
    let retimed = Plan::of(kernel)?;
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let lanes = lanes_type(kernel.elem());
    let outputs: Vec<Ident> = (0..plan.n_outputs).map(|k| format_ident!("o{k}")).collect();
    let params: Vec<Ident> = plan.params.iter().map(|&k| format_ident!("p{k}")).collect();
    // The plain loop's windows, for the unaligned head and the tail of a row, and rows
    // shorter than a vector.
    let block = RowBlock::of(kernel, plan, 1);
    let reads: Vec<Ident> = (0..block.windows.len())
        .map(|k| format_ident!("r{k}"))
        .collect();
    let read_args = block.window_args();
    let (zero, n) = (quote!(0), quote!(n));
    let head_reads = block.window_ranges(&zero, &quote!(head));
    let tail_reads = block.window_ranges(&quote!(end), &n);
    let members: Vec<Ident> = (0..retimed.members.len())
        .map(|k| format_ident!("m{k}"))
        .collect();
    let member_windows = retimed
        .members
        .iter()
        .zip(&members)
        .map(|(&(input, offset), m)| {
            let input = Literal::usize_unsuffixed(input);
            let offset = offset_tokens(offset, None);
            quote! {
                let Some(#m) = args.window(#input, #offset, lo, span) else { return false; };
            }
        });
    let reach = retimed
        .stores
        .iter()
        .map(|(_, r)| r.reach.0.max(r.reach.1))
        .max()
        .unwrap_or(0) as usize;
    let lead = leading(kernel, &retimed.members);
    let pf: Vec<Ident> = (0..lead.len()).map(|k| format_ident!("__pf{k}")).collect();
    let prefetch_setup = lead.iter().zip(&pf).map(|(&lead, pf)| {
        prefetch_window(
            kernel,
            lead,
            pf,
            (1, 0),
            (quote!(args), quote!(lo), quote!(span)),
        )
    });

    // Per store: coefficients, one combination per displacement, the value and its store.
    let mut setup = Vec::new();
    // The coefficients, splatted once (`setup` then starts the rolled combinations at the
    // row's first vector; the run-level loop restarts those per row itself).
    let mut splats = Vec::new();
    // Per displaced combination, its field for the vector before a row; per combination, its
    // field for the row's first vector; each with the value from the members' vectors.
    let mut start_prev = Vec::new();
    let mut start_cur = Vec::new();
    let mut lookahead = Vec::new();
    let mut compute = Vec::new();
    let mut values: Vec<Option<Ident>> = vec![None; plan.n_outputs];
    let mut roll = Vec::new();
    // What the step carries: coefficients and the rolled combinations.
    let mut fields: Vec<Ident> = Vec::new();
    let mut coefficients: Vec<Ident> = Vec::new();
    for (s, (output, form)) in retimed.stores.iter().enumerate() {
        // The coefficients, splatted once.
        let mut factors = Vec::new();
        for (c, class) in form.classes.iter().enumerate() {
            factors.push(match class.coefficient {
                Some(id) => {
                    let factor = scalar(kernel, id)?;
                    let name = format_ident!("s{s}k{c}");
                    splats.push(quote!(let #name = V::splat(#factor);));
                    coefficients.push(name.clone());
                    fields.push(name.clone());
                    Some(name)
                }
                None => None,
            });
        }
        // The partial sums of one vector (tokens binding `s{s}g{g}`), each member's vector
        // given by `load`.
        let sums_of = |load: &dyn Fn(&Ident) -> TokenStream| {
            let sums = form.groups.iter().enumerate().map(|(g, group)| {
                let loads = group
                    .iter()
                    .map(|&(field, offset)| load(&members[retimed.member(kernel, field, offset)]));
                let name = format_ident!("s{s}g{g}");
                let sum = loads
                    .reduce(|acc, load| quote!(#acc.add(#load)))
                    .unwrap_or_else(|| unreachable!("stencil!: bug in emit: empty partial sum"));
                quote!(let #name = #sum;)
            });
            quote!(#(#sums)*)
        };
        // At window position `at` (the setup), and from the vectors `sweep` loaded (the loop).
        let sums_at = |at: TokenStream| sums_of(&|m: &Ident| quote!(V::load(#m, #at)));
        // A combination: `sum over its (class, group) terms of sign * coefficient * S_g`.
        let combination = |terms: &[(usize, usize)]| {
            let mut value: Option<TokenStream> = None;
            for &(c, g) in terms {
                let sum = format_ident!("s{s}g{g}");
                let negated = form.classes[c].negated;
                value = Some(match (value, &factors[c], negated) {
                    (None, Some(k), false) => quote!(#k.mul(#sum)),
                    (None, Some(k), true) => quote!(#k.neg_mul_add(#sum, V::splat(0.0))),
                    (None, None, false) => quote!(#sum),
                    (None, None, true) => quote!(V::splat(0.0).sub(#sum)),
                    (Some(v), Some(k), false) => quote!(#k.mul_add(#sum, #v)),
                    (Some(v), Some(k), true) => quote!(#k.neg_mul_add(#sum, #v)),
                    (Some(v), None, false) => quote!(#v.add(#sum)),
                    (Some(v), None, true) => quote!(#v.sub(#sum)),
                });
            }
            value.unwrap_or_else(|| unreachable!("stencil!: bug in emit: empty combination"))
        };
        let combinations = form.combinations();
        lookahead.push(sums_of(&|m: &Ident| quote!(#m)));
        let mut value: Option<TokenStream> = None;
        for (
            q,
            Combination {
                terms,
                displacements,
            },
        ) in combinations.iter().enumerate()
        {
            let (prev, cur, next) = (
                format_ident!("s{s}q{q}_prev"),
                format_ident!("s{s}q{q}_cur"),
                format_ident!("s{s}q{q}_next"),
            );
            let displaced = displacements.iter().any(|&dx| dx != 0);
            let combined = combination(terms);
            let (sums_0, sums_l) = (sums_at(quote!(0)), sums_at(quote!(L)));
            start_cur.push(quote!(self.#cur = #combined;));
            if displaced {
                start_prev.push(quote!(self.#prev = #combined;));
                setup.push(quote! {
                    let #prev = { #sums_0 #combined };
                    let #cur = { #sums_l #combined };
                });
                roll.push(quote!(self.#prev = #cur; self.#cur = #next;));
                fields.extend([prev.clone(), cur.clone()]);
            } else {
                setup.push(quote!(let #cur = { #sums_l #combined };));
                roll.push(quote!(self.#cur = #next;));
                fields.push(cur.clone());
            }
            compute.push(quote!(let #next = #combined;));
            for &dx in displacements {
                let shifted = if dx == 0 {
                    quote!(#cur)
                } else {
                    let dx = int_tokens(i64::from(dx));
                    quote!(V::shifted::<#dx>(#prev, #cur, #next))
                };
                value = Some(match value {
                    None => shifted,
                    Some(v) => quote!(#v.add(#shifted)),
                });
            }
        }
        let value = value.unwrap_or_else(|| unreachable!("stencil!: bug in emit: no value"));
        let name = format_ident!("s{s}v");
        compute.push(quote!(let #name = #value;));
        // Each output is stored once, or the plain loop runs.
        if values[*output].replace(name).is_some() {
            return None;
        }
    }
    let values: Vec<Ident> = values.into_iter().collect::<Option<_>>()?;
    let n_members = Literal::usize_unsuffixed(members.len());
    let n_outputs = Literal::usize_unsuffixed(plan.n_outputs);
    let reach_literal = Literal::usize_unsuffixed(reach);
    let first_output = &outputs[0];
    let function = quote! {
        /// The retimed point loop (see `stencil_core::passes::linear`): partial sums once per
        /// vector, shifted along the row; `false` (nothing written) when it cannot run.
        #[inline(always)]
        fn __point_loop_retimed(
            args: &#p::RowArgs<'_, #elem>,
            #(#outputs: &mut [#elem],)*
            #(#params: #elem),*
        ) -> bool {
            use #p::lanes::Lanes as _;
            type V = #p::lanes::#lanes;
            const L: usize = <V as #p::lanes::Lanes>::N;
            if !<V as #p::lanes::Lanes>::FAST_SHIFTS || #reach_literal > L {
                return false;
            }
            /// The `count` vectors of points from `from`, or `false` (nothing written) when
            /// a window leaves an input's storage.
            #[inline(always)]
            fn __vectors(
                args: &#p::RowArgs<'_, #elem>,
                #(#outputs: &mut [#elem],)*
                #(#params: #elem,)*
                from: usize,
                count: usize,
            ) -> bool {
                // Every window spans one vector either side of the vectors computed.
                let lo = from as isize - L as isize;
                let span = count * L + 2 * L;
                #(#member_windows)*
                #(#prefetch_setup)*
                #(#splats)*
                #(#setup)*
                // `sweep` loads every member one vector ahead of the output vector (the
                // windows start one vector before the first) and checks every bound once.
                #p::lanes::sweep(
                    [#(&#members[..span]),*],
                    2 * L,
                    [#(&mut #outputs[from..from + count * L]),*],
                    [#(#pf),*],
                    args.streaming(),
                    __RetimedStep { #(#fields),* },
                )
            }
            let n = #first_output.len();
            // Vectors from the row's first point, unaligned, but from the first line boundary
            // for streaming stores, which need aligned vectors.
            let head = if args.streaming() {
                #first_output.as_ptr().align_offset(#p::LINE_BYTES).min(n)
            } else {
                0
            };
            let vectors = (n - head) / L;
            if vectors == 0
                || !__vectors(args, #(&mut *#outputs,)* #(#params,)* head, vectors)
            {
                return false;
            }
            let mut end = head + vectors * L;
            // Without a head, the last vector again, ending at the row's end: its first points
            // get the values they hold (the outputs are not inputs).
            if head == 0
                && end < n
                && __vectors(args, #(&mut *#outputs,)* #(#params,)* n - L, 1)
            {
                end = n;
            }
            if head > 0 || end < n {
                #(let #reads = #read_args;)*
                __point_loop(#(&mut #outputs[..head],)* #(#head_reads,)* #(#params),*);
                __point_loop(#(&mut #outputs[end..n],)* #(#tail_reads,)* #(#params),*);
            }
            true
        }
    };
    let rolled: Vec<&Ident> = fields
        .iter()
        .filter(|f| !coefficients.contains(f))
        .collect();
    let function = quote! {
        #function

        /// One vector of the retimed loop: the coefficients, splatted, and each combination's
        /// previous and current vectors, rolled along the row.
        #[derive(Clone, Copy)]
        struct __RetimedStep {
            #(#fields: #p::lanes::#lanes,)*
        }

        impl #p::lanes::VectorBody<#p::lanes::#lanes, #n_members, #n_outputs> for __RetimedStep {
            #[inline(always)]
            fn step(
                &mut self,
                [#(#members),*]: [#p::lanes::#lanes; #n_members],
            ) -> [#p::lanes::#lanes; #n_outputs] {
                use #p::lanes::Lanes as _;
                type V = #p::lanes::#lanes;
                let __RetimedStep { #(#fields),* } = *self;
                #(#lookahead)*
                #(#compute)*
                #(#roll)*
                [#(#values),*]
            }
        }

        impl #p::lanes::RowBody<#p::lanes::#lanes, #n_members, #n_outputs> for __RetimedStep {
            #[inline(always)]
            fn start(
                &mut self,
                prev: [#p::lanes::#lanes; #n_members],
                cur: [#p::lanes::#lanes; #n_members],
            ) {
                use #p::lanes::Lanes as _;
                #[allow(dead_code)]
                type V = #p::lanes::#lanes;
                #[allow(unused_variables)]
                let __RetimedStep { #(#fields),* } = *self;
                {
                    let [#(#members),*] = prev;
                    #(#lookahead)*
                    #(#start_prev)*
                }
                let [#(#members),*] = cur;
                #(#lookahead)*
                #(#start_cur)*
            }
        }

    };
    let run_level = run_level_function(
        kernel,
        plan,
        RunLevel {
            name: format_ident!("__run_retimed"),
            doc: " The retimed loop over the rows `first..` of a run in one call, its windows \
                  checked once; `false` (nothing written) when the run does not fit it \
                  (`run_level.rs`): the row-at-a-time loop then runs.",
            shifts: format_ident!("FAST_SHIFTS"),
            reach,
            members: &retimed.members,
            aheads: retimed.members.iter().map(|_| quote!(2 * L)).collect(),
            setup: quote! {
                #(#splats)*
                let zero = V::splat(0.0);
                let body = __RetimedStep {
                    #(#coefficients,)*
                    #(#rolled: zero,)*
                };
            },
        },
    );
    let function = quote!(#function #run_level);
    let param_args = plan.params.iter().map(|&k| {
        let k = Literal::usize_unsuffixed(k);
        quote!(args.param(#k))
    });
    let call = quote! {
        if __point_loop_retimed(&args.nth_row(r), #(&mut #outputs[..n],)* #(#param_args),*) {
            return;
        }
    };
    Some((function, call))
}
