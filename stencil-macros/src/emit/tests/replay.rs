//! An interpreter for the builder calls `emit::builder` prints: it runs them on a real
//! `KernelBuilder`, so a test can check the printed calls rebuild the lowered kernel exactly.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::quote;
use stencil_core::{
    BinaryOp, CmpOp, ElemType, ExprId, FieldId, Kernel, KernelBuilder, LetId, LogicOp, ParamId,
    ReduceOp, ReductionId, UnaryOp,
};

#[derive(Clone, Copy, Debug)]
enum Value {
    Field(FieldId),
    Param(ParamId),
    Reduction(ReductionId),
    Expr(ExprId),
    Let(LetId),
}

struct Replay {
    builder: Option<KernelBuilder>,
    env: HashMap<String, Value>,
}

/// Runs the printed builder statements and returns the kernel `b.finish()` gives.
pub(super) fn replay(statements: TokenStream) -> Kernel {
    let block: syn::Block = syn::parse2(quote!({ #statements })).expect("statements parse");
    let mut replay = Replay {
        builder: None,
        env: HashMap::new(),
    };
    for statement in &block.stmts {
        let (name, expr) = match statement {
            syn::Stmt::Local(local) => {
                let syn::Pat::Ident(p) = &local.pat else {
                    panic!("unexpected pattern")
                };
                (
                    Some(p.ident.to_string()),
                    &*local.init.as_ref().unwrap().expr,
                )
            }
            syn::Stmt::Expr(expr, _) => (None, expr),
            other => panic!("unexpected statement {other:?}"),
        };
        if let Some(kernel) = replay.statement(name, expr) {
            return kernel;
        }
    }
    panic!("no `b.finish()` in the printed statements")
}

fn last_segment(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Path(p) => p.path.segments.last().unwrap().ident.to_string(),
        other => panic!("expected a path, found {other:?}"),
    }
}

fn string(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => s.value(),
        other => panic!("expected a string, found {other:?}"),
    }
}

fn number(expr: &syn::Expr) -> f64 {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit, .. }) => match lit {
            syn::Lit::Float(f) => f.base10_parse().unwrap(),
            syn::Lit::Int(i) => i.base10_parse().unwrap(),
            other => panic!("expected a number, found {other:?}"),
        },
        syn::Expr::Unary(u) => -number(&u.expr),
        other => panic!("expected a number, found {other:?}"),
    }
}

fn elements(expr: &syn::Expr) -> Vec<syn::Expr> {
    match expr {
        syn::Expr::Reference(r) => elements(&r.expr),
        syn::Expr::Array(a) => a.elems.iter().cloned().collect(),
        other => panic!("expected `&[...]`, found {other:?}"),
    }
}

impl Replay {
    fn value(&self, expr: &syn::Expr) -> Value {
        self.env[&last_segment(expr)]
    }

    fn statement(&mut self, name: Option<String>, expr: &syn::Expr) -> Option<Kernel> {
        if let syn::Expr::Call(call) = expr {
            assert_eq!(last_segment(&call.func), "new");
            let args: Vec<_> = call.args.iter().collect();
            let elem = match last_segment(args[2]).as_str() {
                "F32" => ElemType::F32,
                _ => ElemType::F64,
            };
            self.builder = Some(KernelBuilder::new(
                &string(args[0]),
                number(args[1]) as usize,
                elem,
            ));
            return None;
        }
        let syn::Expr::MethodCall(call) = expr else {
            panic!("unexpected expression {expr:?}")
        };
        if call.method == "expect" {
            return Some(self.builder.take().unwrap().finish().unwrap());
        }
        let args: Vec<&syn::Expr> = call.args.iter().collect();
        let b = self.builder.as_mut().unwrap();
        let result = match call.method.to_string().as_str() {
            "index_names" => {
                let names: Vec<String> = elements(args[0]).iter().map(string).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                b.index_names(&names);
                None
            }
            "input" => Some(Value::Field(b.input(&string(args[0])))),
            "output" => Some(Value::Field(b.output(&string(args[0])))),
            "param" => Some(Value::Param(b.param(&string(args[0])))),
            "reduction" => {
                let op = ReduceOp::from_type_name(&last_segment(args[1])).unwrap();
                Some(Value::Reduction(b.reduction(&string(args[0]), op)))
            }
            "constant" => Some(Value::Expr(b.constant(number(args[0])))),
            method => {
                let result = self.operation(method, &args);
                return self.bind(name, result);
            }
        };
        self.bind(name, result)
    }

    fn bind(&mut self, name: Option<String>, result: Option<Value>) -> Option<Kernel> {
        if let (Some(name), Some(value)) = (name, result) {
            self.env.insert(name, value);
        }
        None
    }

    fn operation(&mut self, method: &str, args: &[&syn::Expr]) -> Option<Value> {
        let values: Vec<Option<Value>> = args
            .iter()
            .map(|a| match a {
                syn::Expr::Path(p) if p.path.segments.len() == 1 => Some(self.value(a)),
                _ => None,
            })
            .collect();
        let e = |i: usize| match values[i] {
            Some(Value::Expr(e)) => e,
            other => panic!("expected an expression, found {other:?}"),
        };
        let op_name = |i: usize| last_segment(args[i]);
        let b = self.builder.as_mut().unwrap();
        let expr = match method {
            "param_ref" => match values[0] {
                Some(Value::Param(p)) => b.param_ref(p),
                other => panic!("expected a parameter, found {other:?}"),
            },
            "let_ref" => match values[0] {
                Some(Value::Let(l)) => b.let_ref(l),
                other => panic!("expected a let, found {other:?}"),
            },
            "read" => {
                let Some(Value::Field(f)) = values[0] else {
                    panic!("expected a field")
                };
                let offset: Vec<i32> = elements(args[1]).iter().map(|o| number(o) as i32).collect();
                b.read(f, &offset)
            }
            "unary" => {
                let op = *UnaryOp::ALL
                    .iter()
                    .find(|op| format!("{op:?}") == op_name(0))
                    .unwrap();
                b.unary(op, e(1))
            }
            "binary" => {
                let op = *BinaryOp::ALL
                    .iter()
                    .find(|op| format!("{op:?}") == op_name(0))
                    .unwrap();
                b.binary(op, e(1), e(2))
            }
            "compare" => {
                let all = [
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                    CmpOp::Eq,
                    CmpOp::Ne,
                ];
                let op = *all
                    .iter()
                    .find(|op| format!("{op:?}") == op_name(0))
                    .unwrap();
                b.compare(op, e(1), e(2))
            }
            "logic" => {
                let op = if op_name(0) == "And" {
                    LogicOp::And
                } else {
                    LogicOp::Or
                };
                b.logic(op, e(1), e(2))
            }
            "not" => b.not(e(0)),
            "select" => b.select(e(0), e(1), e(2)),
            "let_" => return Some(Value::Let(b.let_(&string(args[0]), e(1)))),
            "store" => {
                let Some(Value::Field(f)) = values[0] else {
                    panic!("expected a field")
                };
                b.store(f, e(1));
                return None;
            }
            "reduce" => {
                let Some(Value::Reduction(r)) = values[0] else {
                    panic!("expected a reduction")
                };
                b.reduce(r, e(1));
                return None;
            }
            other => panic!("unknown builder method {other}"),
        };
        Some(Value::Expr(expr))
    }
}
