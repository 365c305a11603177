//! The shell both run-level loops share, `__run_shifted` ([`super::shifted`]) and
//! `__run_retimed` ([`super::retimed`]): a function that takes the rows `first..` of a run in
//! one call of `stencil_cpu::lanes::sweep_rows`, building and checking each member's windows
//! (one vector wider than the row on either side) once per run, or every plane of a 3-D
//! block's run in one call of `sweep_planes`, with the plain point loop for rows shorter than
//! a vector. It declines a run (`false`, nothing written) when the build's
//! lane shifts are not fast enough for the loop, the reach along the row exceeds a vector, a
//! row is shorter than a vector, a window leaves an input's storage, or the run prefetches or
//! streams (sweeps from memory keep the loops that do both). The loop's own part is its
//! `RowBody`: the type, its setup and the value the shell hands to `sweep_rows`.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};
use stencil_core::{Kernel, Offset};

use super::plan::{LoopPlan, RowBlock};
use super::tokens::{elem_type, lanes_type, offset_tokens};

/// What distinguishes one run-level loop from the other.
pub(super) struct RunLevel<'a> {
    /// The function's name and its doc comment.
    pub name: Ident,
    pub doc: &'a str,
    /// The `Lanes` constant that says whether the build's shifts pay for this loop
    /// (`SINGLE_SHIFTS` or `FAST_SHIFTS`).
    pub shifts: Ident,
    /// The farthest read along the row, in points.
    pub reach: usize,
    /// Each member: (input ordinal, offset with its unit-stride entry 0), and how far ahead of
    /// its window's start `sweep_rows` loads it (`2 * L` or `L` tokens).
    pub members: &'a [(usize, Offset)],
    pub aheads: Vec<TokenStream>,
    /// Items and statements that define the body's type and bind `body`, with the kernel's
    /// parameters bound as `p{k}`, `V` the lanes type and `L` its width.
    pub setup: TokenStream,
}

/// The run-level function for `kernel` (see the module documentation).
pub(super) fn run_level_function(
    kernel: &Kernel,
    plan: &LoopPlan,
    run: RunLevel<'_>,
) -> TokenStream {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let lanes = lanes_type(kernel.elem());
    let outputs: Vec<Ident> = (0..plan.n_outputs).map(|k| format_ident!("o{k}")).collect();
    let params: Vec<Ident> = plan.params.iter().map(|&k| format_ident!("p{k}")).collect();
    let param_values = plan.params.iter().map(|&k| {
        let k = Literal::usize_unsuffixed(k);
        quote!(args.param(#k))
    });
    // The plain loop's windows, for rows shorter than a vector.
    let block = RowBlock::of(kernel, plan, 1);
    let row_reads: Vec<Ident> = (0..block.windows.len())
        .map(|k| format_ident!("r{k}"))
        .collect();
    let read_args = block.window_args();
    let part_reads = block.window_ranges(&quote!(from), &quote!(from + len));
    let run_windows = run.members.iter().map(|&(input, offset)| {
        let input = Literal::usize_unsuffixed(input);
        let offset = offset_tokens(offset, None);
        quote! {
            args.try_row_window(#input, #offset, -(L as isize))?.try_rows(rows, n + 2 * L)?
        }
    });
    let RunLevel {
        name,
        doc,
        shifts,
        reach,
        aheads,
        setup,
        ..
    } = run;
    let n_outputs = Literal::usize_unsuffixed(plan.n_outputs);
    let plain_loop = quote! {
        let len = o0.len();
        #(let #row_reads = #read_args;)*
        __point_loop(#(#outputs,)* #(#part_reads,)* #(#params),*);
    };
    let sweep_rows = quote! {
        #p::lanes::sweep_rows(
            &windows,
            [#(#aheads),*],
            outs,
            first..rows,
            n,
            body,
            |r, from, [#(#outputs),*]: [&mut [#elem]; #n_outputs]| {
                let args = &args.nth_row(r);
                #plain_loop
            },
        );
    };
    // Several planes (a 3-D block) go whole to `sweep_planes`, saving the setup per plane
    // (windows built and checked, the arguments: the 7-point and 27-point 64^3 sweeps in
    // cache went from 62-64 to 57-58 us and from 105-106 to 94-97 us; the radius-4 star, which
    // had lost 5-7% in the plane loop while it recomputed its row pointers, runs alike since
    // they advance). One plane (every run below three dimensions) keeps `sweep_rows`: through
    // the plane loop the 5-point 2-D f32 sweep of 1024^2 ran 1.10-1.12x gcc's loop, against
    // 1.18-1.22.
    let sweep = quote! {
        if args.planes() > 1 {
            #p::lanes::sweep_planes(
                &windows,
                [#(#aheads),*],
                outs,
                first..rows,
                n,
                body,
                |plane, r, from, [#(#outputs),*]: [&mut [#elem]; #n_outputs]| {
                    let args = &args.nth_plane(plane).nth_row(r);
                    #plain_loop
                },
            );
        } else {
            #sweep_rows
        }
    };
    let reach = Literal::usize_unsuffixed(reach);
    quote! {
        #[doc = #doc]
        #[inline(never)]
        fn #name(
            args: &#p::RowArgs<'_, #elem>,
            outs: &mut [&mut #p::OutputRun<'_, #elem>; #n_outputs],
            first: usize,
        ) -> bool {
            use #p::lanes::Lanes as _;
            type V = #p::lanes::#lanes;
            const L: usize = <V as #p::lanes::Lanes>::N;
            let rows = args.rows();
            let n = args.len();
            if !<V as #p::lanes::Lanes>::#shifts
                || #reach > L
                || n < L
                || args.prefetch() > 0
                || args.streaming()
            {
                return false;
            }
            let windows = (|| {
                ::core::option::Option::Some([#(#run_windows),*])
            })();
            let ::core::option::Option::Some(windows) = windows else {
                return false;
            };
            #(let #params: #elem = #param_values;)*
            #setup
            #sweep
            true
        }
    }
}
