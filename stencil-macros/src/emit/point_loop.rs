//! The CPU specialisation of a kernel: its row function and point loop, from the lowered IR.
//!
//! Implements the row contract of [`stencil_core::row`]: `__rows` receives a [`RowArgs`]
//! and one output slice per output field, takes one input slice per distinct (input, offset)
//! the kernel reads, and calls `__point_loop`, a plain indexed loop over slices of equal length
//! that LLVM vectorises. Inside the loop every IR node reachable from a store is one `let`, in
//! arena order, computed with the same operations (and the same [`Element`] math functions) the
//! reference interpreter uses, so the two agree bit for bit.
//!
//! [`RowArgs`]: stencil_core::row::RowArgs
//! [`Element`]: stencil_core::Element

use std::collections::HashMap;

use proc_macro2::{Ident, TokenStream};
use quote::{ToTokens, format_ident, quote};
use stencil_core::{
    BinaryOp, CmpOp, Expr, ExprId, Kernel, LetId, LogicOp, MAX_DIMS, Offset, Role, Stmt, UnaryOp,
};

use super::{elem_type, float_literal, int_tokens};

/// What the point loop needs: reachable nodes, distinct reads, used parameters, outputs.
pub(super) struct LoopPlan {
    /// Per arena node: whether a store depends on it.
    pub(super) reachable: Vec<bool>,
    /// Distinct (input ordinal, offset) pairs read, in arena order of first use.
    pub(super) reads: Vec<(usize, Offset)>,
    /// Indices of the parameters used, ascending.
    pub(super) params: Vec<usize>,
    /// Per store: (output ordinal, value node), in body order.
    pub(super) stores: Vec<(usize, ExprId)>,
    /// Number of outputs.
    pub(super) n_outputs: usize,
}

impl LoopPlan {
    pub(super) fn of(kernel: &Kernel) -> LoopPlan {
        let let_values: HashMap<LetId, ExprId> = kernel
            .body
            .iter()
            .filter_map(|s| match *s {
                Stmt::Let { var, value } => Some((var, value)),
                Stmt::Store { .. } => None,
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
        let stores: Vec<(usize, ExprId)> = kernel
            .body
            .iter()
            .filter_map(|s| match *s {
                Stmt::Store { field, value } => Some((output_ordinal[field.index()], value)),
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
        for (i, node) in kernel.exprs.iter().enumerate() {
            if !reachable[i] {
                continue;
            }
            match *node {
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
            n_outputs: kernel.outputs().count(),
        }
    }
}

fn ident(prefix: &str, index: usize) -> Ident {
    format_ident!("{prefix}{index}")
}

/// `fn __rows` and `fn __point_loop` for `kernel`.
pub(super) fn row_functions(kernel: &Kernel) -> TokenStream {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let plan = LoopPlan::of(kernel);
    let outputs: Vec<Ident> = (0..plan.n_outputs).map(|k| ident("o", k)).collect();
    let reads: Vec<Ident> = (0..plan.reads.len()).map(|k| ident("r", k)).collect();
    let params: Vec<Ident> = plan.params.iter().map(|&k| ident("p", k)).collect();

    let read_args = plan.reads.iter().map(|(input, offset)| {
        let input = proc_macro2::Literal::usize_unsuffixed(*input);
        let entries = (0..MAX_DIMS).map(|d| int_tokens(i64::from(offset.get(d))));
        quote!(args.input(#input, [#(#entries),*]))
    });
    let param_args = plan.params.iter().map(|&k| {
        let k = proc_macro2::Literal::usize_unsuffixed(k);
        quote!(args.param(#k))
    });
    let (first_output, other_outputs) = outputs
        .split_first()
        .unwrap_or_else(|| unreachable!("stencil!: bug in emit: a verified kernel has an output"));

    let nodes = kernel
        .exprs
        .iter()
        .enumerate()
        .filter(|(i, _)| plan.reachable[*i])
        .map(|(i, node)| node_statement(kernel, &plan, i, node));
    let stores = plan.stores.iter().map(|&(output, value)| {
        let output = ident("o", output);
        let value = ident("e", value.index());
        quote!(#output[x] = #value;)
    });

    let read_args: Vec<TokenStream> = read_args.collect();
    let param_args: Vec<TokenStream> = param_args.collect();
    let lines: Vec<Ident> = (0..plan.n_outputs).map(|k| ident("l", k)).collect();
    let (retimed_fn, retimed_call) = super::retimed::retimed_loop(kernel, &plan).unzip();
    let n_lead =
        proc_macro2::Literal::usize_unsuffixed(super::retimed::leading(kernel, &plan.reads).len());
    // Each input's leading row `args.prefetch()` rows ahead (empty slices when off), one
    // line per line computed: interleaved with the work, the prefetches keep memory busy while
    // the core computes (a burst of the whole row before it measured 12% slower for W1).
    let lead = super::retimed::leading(kernel, &plan.reads);
    let pf: Vec<Ident> = (0..lead.len()).map(|k| ident("__pf", k)).collect();
    let pf_setup = lead
        .iter()
        .zip(&pf)
        .map(|(&lead, pf)| super::retimed::prefetch_window(kernel, lead, pf, quote!(0), quote!(n)));
    quote! {
        fn __rows(args: &#p::RowArgs<'_, #elem>, outs: &mut [&mut [#elem]]) {
            let n = args.len();
            let [#(#outputs),*] = outs else {
                ::core::unreachable!("stencil!: wrong output count")
            };
            #retimed_call
            #(#pf_setup)*
            let prefetch: [&[#elem]; #n_lead] = [#(#pf),*];
            if args.streaming() {
                return __point_loop_streaming(
                    &prefetch, #(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*
                );
            }
            if args.prefetch() > 0 {
                return __point_loop_prefetching(
                    &prefetch, #(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*
                );
            }
            __point_loop(#(&mut #outputs[..n],)* #(#read_args,)* #(#param_args),*);
        }

        #retimed_fn

        /// The point loop with streaming stores: plain up to the first output's first
        /// 64-byte boundary, then one cache line of every output at a time computed into
        /// registers and streamed out (prefetching the same line of every `prefetch` row),
        /// then the plain tail.
        #[inline(always)]
        fn __point_loop_streaming(
            prefetch: &[&[#elem]; #n_lead],
            #(#outputs: &mut [#elem],)*
            #(#reads: &[#elem],)*
            #(#params: #elem),*
        ) {
            const LINE: usize = #p::LINE_BYTES / ::core::mem::size_of::<#elem>();
            let n = #first_output.len();
            let head = #first_output.as_ptr().align_offset(#p::LINE_BYTES).min(n);
            let body = head + (n - head) / LINE * LINE;
            __point_loop(#(&mut #outputs[..head],)* #(&#reads[..head],)* #(#params),*);
            let mut at = head;
            while at < body {
                for row in prefetch {
                    #p::lanes::prefetch(row, at);
                }
                #(let mut #lines = [0.0 as #elem; LINE];)*
                __point_loop(#(&mut #lines,)* #(&#reads[at..at + LINE],)* #(#params),*);
                #(#p::stream_line(&mut #outputs[at..at + LINE], &#lines);)*
                at += LINE;
            }
            __point_loop(#(&mut #outputs[body..n],)* #(&#reads[body..n],)* #(#params),*);
        }

        /// The point loop in blocks of a few cache lines, prefetching each block of every
        /// `prefetch` row before computing it.
        #[inline(always)]
        fn __point_loop_prefetching(
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
                __point_loop(#(&mut #outputs[at..end],)* #(&#reads[at..end],)* #(#params),*);
                at = end;
            }
        }

        #[inline(always)]
        fn __point_loop(
            #(#outputs: &mut [#elem],)*
            #(#reads: &[#elem],)*
            #(#params: #elem),*
        ) {
            let n = #first_output.len();
            #(let #other_outputs = &mut #other_outputs[..n];)*
            #(let #reads = &#reads[..n];)*
            for x in 0..n {
                #(#nodes)*
                #(#stores)*
            }
        }
    }
}

/// `let eI: T = ...;` for node `i`.
fn node_statement(kernel: &Kernel, plan: &LoopPlan, i: usize, node: &Expr) -> TokenStream {
    let p = quote!(::stencil::__private);
    let elem = elem_type(kernel.elem());
    let name = ident("e", i);
    let e = |id: ExprId| ident("e", id.index());
    let value = match *node {
        Expr::Const(value) => float_literal(value, kernel.elem()),
        Expr::Param(param) => ident("p", param.index()).into_token_stream(),
        Expr::Read { field, offset } => {
            let input = kernel.inputs().position(|f| f == field).unwrap_or_else(|| {
                unreachable!("stencil!: bug in emit: a verified kernel reads only inputs")
            });
            let k = plan
                .reads
                .iter()
                .position(|r| *r == (input, offset))
                .unwrap_or_else(|| unreachable!("stencil!: bug in emit: read not planned"));
            let read = ident("r", k);
            quote!(#read[x])
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
