//! The builder calls that rebuild a lowered kernel at run time, node for node.
//!
//! [`replay_order`] interleaves the expression arena with the statements so that replaying
//! the steps on a fresh [`KernelBuilder`](stencil_core::KernelBuilder) reproduces the same
//! arena ids, `let` ids and statement order; [`build_statements`] prints each step as a call.
//! The IR is the source: nothing here looks at the user's syntax.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use stencil_core::{BinaryOp, CmpOp, ElemType, Expr, Kernel, LogicOp, Role, Stmt, UnaryOp};

use super::tokens::{float_literal, int_tokens};

/// One builder call of the replay.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Step {
    /// Push expression number `.0` (arena order).
    Expr(usize),
    /// Push statement number `.0` (body order).
    Stmt(usize),
}

/// Every expression and statement of `kernel`, in an order a builder can replay: a statement
/// comes after the expressions up to its value, expressions stay in arena order.
pub(super) fn replay_order(kernel: &Kernel) -> Vec<Step> {
    let mut steps = Vec::with_capacity(kernel.exprs.len() + kernel.body.len());
    let mut next_expr = 0;
    for (s, statement) in kernel.body.iter().enumerate() {
        let value = statement.value().index();
        while next_expr <= value {
            steps.push(Step::Expr(next_expr));
            next_expr += 1;
        }
        steps.push(Step::Stmt(s));
    }
    steps.extend((next_expr..kernel.exprs.len()).map(Step::Expr));
    steps
}

fn ident(prefix: &str, index: usize) -> Ident {
    format_ident!("{prefix}{index}")
}

/// What is referenced by some node or statement (so only those get a variable).
struct Uses {
    fields: Vec<bool>,
    params: Vec<bool>,
    reductions: Vec<bool>,
    lets: Vec<bool>,
    exprs: Vec<bool>,
}

impl Uses {
    fn of(kernel: &Kernel) -> Uses {
        let mut uses = Uses {
            fields: vec![false; kernel.fields.len()],
            params: vec![false; kernel.params.len()],
            reductions: vec![false; kernel.reductions.len()],
            lets: vec![false; kernel.lets.len()],
            exprs: vec![false; kernel.exprs.len()],
        };
        for expr in &kernel.exprs {
            match *expr {
                Expr::Read { field, .. } => uses.fields[field.index()] = true,
                Expr::Param(p) => uses.params[p.index()] = true,
                Expr::Let(var) => uses.lets[var.index()] = true,
                _ => {}
            }
            for operand in expr.operands() {
                uses.exprs[operand.index()] = true;
            }
        }
        for statement in &kernel.body {
            match *statement {
                Stmt::Let { value, .. } => uses.exprs[value.index()] = true,
                Stmt::Store { field, value } => {
                    uses.exprs[value.index()] = true;
                    uses.fields[field.index()] = true;
                }
                Stmt::Reduce { reduction, value } => {
                    uses.exprs[value.index()] = true;
                    uses.reductions[reduction.index()] = true;
                }
            }
        }
        uses
    }
}

/// Binds `call`'s result to `name` when it is used, else evaluates it for its effect.
fn bind(used: bool, name: &Ident, call: TokenStream) -> TokenStream {
    if used {
        quote!(let #name = #call;)
    } else {
        quote!(#call;)
    }
}

/// The statements of the `LazyLock` initialiser: builder calls replaying `kernel`, then the
/// `Stencil` with the generated point loop (the last expression).
pub(super) fn build_statements(kernel: &Kernel) -> TokenStream {
    let p = quote!(::stencil::__private);
    let uses = Uses::of(kernel);
    let name = &kernel.name;
    let n_dims = proc_macro2::Literal::usize_unsuffixed(kernel.n_dims);
    let elem = match kernel.elem() {
        ElemType::F32 => quote!(#p::ElemType::F32),
        ElemType::F64 => quote!(#p::ElemType::F64),
    };
    let index_names = &kernel.index_names;
    let mut out = quote! {
        let mut b = #p::KernelBuilder::new(#name, #n_dims, #elem);
        b.index_names(&[#(#index_names),*]);
    };
    if kernel.fma {
        // Replayed on fused nodes, the contraction at `finish` changes nothing.
        out.extend(quote!(b.fma(true);));
    }
    for (i, field) in kernel.fields.iter().enumerate() {
        let field_name = &field.name;
        let call = match field.role {
            Role::Input => quote!(b.input(#field_name)),
            Role::Output => quote!(b.output(#field_name)),
        };
        out.extend(bind(uses.fields[i], &ident("f", i), call));
    }
    for (i, param) in kernel.params.iter().enumerate() {
        let param_name = &param.name;
        out.extend(bind(
            uses.params[i],
            &ident("p", i),
            quote!(b.param(#param_name)),
        ));
    }
    for (i, reduction) in kernel.reductions.iter().enumerate() {
        let reduction_name = &reduction.name;
        let op = format_ident!("{}", reduction.op.type_name());
        out.extend(bind(
            uses.reductions[i],
            &ident("r", i),
            quote!(b.reduction(#reduction_name, #p::ReduceOp::#op)),
        ));
    }
    for step in replay_order(kernel) {
        out.extend(match step {
            Step::Expr(i) => bind(uses.exprs[i], &ident("e", i), expr_call(kernel, i)),
            Step::Stmt(s) => stmt_call(kernel, s, &uses),
        });
    }
    out.extend(quote! {
        let kernel = b.finish().expect("stencil!: verified at compile time");
        #p::Stencil::with_cpu_runs(kernel, __run).expect("stencil!: verified at compile time")
    });
    out
}

fn expr_call(kernel: &Kernel, i: usize) -> TokenStream {
    let p = quote!(::stencil::__private);
    let e = |id: stencil_core::ExprId| ident("e", id.index());
    match kernel.exprs[i] {
        Expr::Const(value) => {
            let value = float_literal(value, ElemType::F64);
            quote!(b.constant(#value))
        }
        Expr::Param(param) => {
            let param = ident("p", param.index());
            quote!(b.param_ref(#param))
        }
        Expr::Read { field, offset } => {
            let field = ident("f", field.index());
            let entries = offset
                .as_slice(kernel.n_dims)
                .iter()
                .map(|&o| int_tokens(i64::from(o)));
            quote!(b.read(#field, &[#(#entries),*]))
        }
        Expr::Let(var) => {
            let var = ident("l", var.index());
            quote!(b.let_ref(#var))
        }
        Expr::Index(dim) => {
            let dim = proc_macro2::Literal::usize_unsuffixed(dim);
            quote!(b.index(#dim))
        }
        Expr::Step => quote!(b.step()),
        Expr::Unary { op, arg } => {
            let op = unary_variant(op);
            let arg = e(arg);
            quote!(b.unary(#p::UnaryOp::#op, #arg))
        }
        Expr::Binary { op, lhs, rhs } => {
            let op = binary_variant(op);
            let (lhs, rhs) = (e(lhs), e(rhs));
            quote!(b.binary(#p::BinaryOp::#op, #lhs, #rhs))
        }
        Expr::Compare { op, lhs, rhs } => {
            let op = compare_variant(op);
            let (lhs, rhs) = (e(lhs), e(rhs));
            quote!(b.compare(#p::CmpOp::#op, #lhs, #rhs))
        }
        Expr::Logic { op, lhs, rhs } => {
            let op = match op {
                LogicOp::And => format_ident!("And"),
                LogicOp::Or => format_ident!("Or"),
            };
            let (lhs, rhs) = (e(lhs), e(rhs));
            quote!(b.logic(#p::LogicOp::#op, #lhs, #rhs))
        }
        Expr::Not(arg) => {
            let arg = e(arg);
            quote!(b.not(#arg))
        }
        Expr::Select {
            cond,
            then,
            otherwise,
        } => {
            let (cond, then, otherwise) = (e(cond), e(then), e(otherwise));
            quote!(b.select(#cond, #then, #otherwise))
        }
        Expr::Fma { a, b, c } => {
            let (a, b, c) = (e(a), e(b), e(c));
            quote!(b.fma_node(#a, #b, #c))
        }
    }
}

fn stmt_call(kernel: &Kernel, s: usize, uses: &Uses) -> TokenStream {
    match kernel.body[s] {
        Stmt::Let { var, value } => {
            let name = &kernel.lets[var.index()].name;
            let value = ident("e", value.index());
            bind(
                uses.lets[var.index()],
                &ident("l", var.index()),
                quote!(b.let_(#name, #value)),
            )
        }
        Stmt::Store { field, value } => {
            let field = ident("f", field.index());
            let value = ident("e", value.index());
            quote!(b.store(#field, #value);)
        }
        Stmt::Reduce { reduction, value } => {
            let reduction = ident("r", reduction.index());
            let value = ident("e", value.index());
            quote!(b.reduce(#reduction, #value);)
        }
    }
}

fn unary_variant(op: UnaryOp) -> Ident {
    format_ident!(
        "{}",
        match op {
            UnaryOp::Neg => "Neg",
            UnaryOp::Abs => "Abs",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Exp => "Exp",
            UnaryOp::Ln => "Ln",
            UnaryOp::Sin => "Sin",
            UnaryOp::Cos => "Cos",
            UnaryOp::Tan => "Tan",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Floor => "Floor",
            UnaryOp::Ceil => "Ceil",
        }
    )
}

fn binary_variant(op: BinaryOp) -> Ident {
    format_ident!(
        "{}",
        match op {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Min => "Min",
            BinaryOp::Max => "Max",
            BinaryOp::Pow => "Pow",
        }
    )
}

fn compare_variant(op: CmpOp) -> Ident {
    format_ident!(
        "{}",
        match op {
            CmpOp::Lt => "Lt",
            CmpOp::Le => "Le",
            CmpOp::Gt => "Gt",
            CmpOp::Ge => "Ge",
            CmpOp::Eq => "Eq",
            CmpOp::Ne => "Ne",
        }
    )
}
