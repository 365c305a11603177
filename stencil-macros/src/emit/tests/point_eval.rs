//! An evaluator for the row functions `emit::point_loop` prints (f64 kernels), at one point:
//! it reads which (input, offset) and parameter each argument of `__point_loop` is from
//! `__rows`, then evaluates the loop body as written. Tests compare it with core's interpreter.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use stencil_core::Element;

/// Where a `__point_loop` argument comes from.
#[derive(Clone, Debug)]
enum Source {
    Output,
    Input(usize, [isize; 4]),
    Param(usize),
}

#[derive(Clone, Copy, Debug)]
enum Value {
    Real(f64),
    Bool(bool),
}

impl Value {
    fn real(self) -> f64 {
        match self {
            Value::Real(v) => v,
            Value::Bool(_) => panic!("expected a number"),
        }
    }

    fn boolean(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Real(_) => panic!("expected a boolean"),
        }
    }
}

fn function<'f>(file: &'f syn::File, name: &str) -> &'f syn::ItemFn {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no fn {name}"))
}

fn int(expr: &syn::Expr) -> isize {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().unwrap(),
        syn::Expr::Unary(u) => -int(&u.expr),
        other => panic!("expected an integer, found {other:?}"),
    }
}

/// What each `__point_loop` argument is, from the call in `__rows`.
fn sources(rows: &syn::ItemFn) -> Vec<Source> {
    let call = rows
        .block
        .stmts
        .iter()
        .find_map(|s| match s {
            syn::Stmt::Expr(syn::Expr::Call(call), _) => Some(call),
            _ => None,
        })
        .expect("__rows calls __point_loop");
    call.args
        .iter()
        .map(|arg| match arg {
            syn::Expr::Reference(_) => Source::Output,
            syn::Expr::MethodCall(m) if m.method == "input" => {
                let args: Vec<_> = m.args.iter().collect();
                let syn::Expr::Array(offset) = args[1] else {
                    panic!("offset array")
                };
                let mut o = [0; 4];
                for (d, e) in offset.elems.iter().enumerate() {
                    o[d] = int(e);
                }
                Source::Input(int(args[0]) as usize, o)
            }
            syn::Expr::MethodCall(m) if m.method == "param" => {
                Source::Param(int(m.args.first().unwrap()) as usize)
            }
            other => panic!("unexpected argument {other:?}"),
        })
        .collect()
}

/// The values the printed row functions store at one point: `read(input, offset)` gives the
/// input values around it, `params` the parameters.
pub(super) fn evaluate(
    rows: TokenStream,
    read: impl Fn(usize, [isize; 4]) -> f64,
    params: &[f64],
) -> Vec<f64> {
    let file: syn::File = syn::parse2(rows).expect("row functions parse");
    let sources = sources(function(&file, "__rows"));
    let point_loop = function(&file, "__point_loop");
    let mut env: HashMap<String, Value> = HashMap::new();
    let mut n_outputs = 0;
    for (input, source) in point_loop.sig.inputs.iter().zip(&sources) {
        let syn::FnArg::Typed(typed) = input else {
            panic!("no self")
        };
        let syn::Pat::Ident(name) = &*typed.pat else {
            panic!("plain names")
        };
        let value = match *source {
            Source::Output => {
                n_outputs += 1;
                continue;
            }
            Source::Input(i, offset) => read(i, offset),
            Source::Param(p) => params[p],
        };
        env.insert(name.ident.to_string(), Value::Real(value));
    }
    let body = point_loop
        .block
        .stmts
        .iter()
        .find_map(|s| match s {
            syn::Stmt::Expr(syn::Expr::ForLoop(f), _) => Some(&f.body),
            _ => None,
        })
        .expect("a point loop");
    let mut stored = vec![f64::NAN; n_outputs];
    for statement in &body.stmts {
        match statement {
            syn::Stmt::Local(local) => {
                let syn::Pat::Type(typed) = &local.pat else {
                    panic!("typed let")
                };
                let syn::Pat::Ident(name) = &*typed.pat else {
                    panic!("plain let")
                };
                let value = eval(&local.init.as_ref().unwrap().expr, &env);
                env.insert(name.ident.to_string(), value);
            }
            syn::Stmt::Expr(syn::Expr::Assign(assign), _) => {
                let syn::Expr::Index(index) = &*assign.left else {
                    panic!("store to an index")
                };
                let syn::Expr::Path(output) = &*index.expr else {
                    panic!("store to an output slice")
                };
                let output = output.path.get_ident().unwrap().to_string();
                let slot: usize = output.strip_prefix('o').unwrap().parse().unwrap();
                stored[slot] = eval(&assign.right, &env).real();
            }
            other => panic!("unexpected statement {other:?}"),
        }
    }
    stored
}

fn eval(expr: &syn::Expr, env: &HashMap<String, Value>) -> Value {
    use syn::BinOp as B;
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => Value::Real(f.base10_parse().unwrap()),
        syn::Expr::Path(p) => env[&p.path.get_ident().unwrap().to_string()],
        // `rK[x]`: the slot already holds the value at this point.
        syn::Expr::Index(index) => eval(&index.expr, env),
        syn::Expr::Paren(p) => eval(&p.expr, env),
        syn::Expr::Unary(u) => match u.op {
            syn::UnOp::Neg(_) => Value::Real(-eval(&u.expr, env).real()),
            syn::UnOp::Not(_) => Value::Bool(!eval(&u.expr, env).boolean()),
            _ => panic!("unexpected unary operator"),
        },
        syn::Expr::Binary(b) => {
            let (l, r) = (eval(&b.left, env), eval(&b.right, env));
            match b.op {
                B::Add(_) => Value::Real(l.real() + r.real()),
                B::Sub(_) => Value::Real(l.real() - r.real()),
                B::Mul(_) => Value::Real(l.real() * r.real()),
                B::Div(_) => Value::Real(l.real() / r.real()),
                B::Lt(_) => Value::Bool(l.real() < r.real()),
                B::Le(_) => Value::Bool(l.real() <= r.real()),
                B::Gt(_) => Value::Bool(l.real() > r.real()),
                B::Ge(_) => Value::Bool(l.real() >= r.real()),
                B::Eq(_) => Value::Bool(l.real() == r.real()),
                B::Ne(_) => Value::Bool(l.real() != r.real()),
                B::And(_) => Value::Bool(l.boolean() && r.boolean()),
                B::Or(_) => Value::Bool(l.boolean() || r.boolean()),
                _ => panic!("unexpected binary operator"),
            }
        }
        syn::Expr::Call(call) => {
            let syn::Expr::Path(p) = &*call.func else {
                panic!("call by path")
            };
            let segments: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            assert_eq!(segments[..3], ["stencil", "__private", "Element"]);
            let args: Vec<f64> = call.args.iter().map(|a| eval(a, env).real()).collect();
            Value::Real(match segments[3].as_str() {
                "abs" => Element::abs(args[0]),
                "sqrt" => Element::sqrt(args[0]),
                "exp" => Element::exp(args[0]),
                "ln" => Element::ln(args[0]),
                "sin" => Element::sin(args[0]),
                "cos" => Element::cos(args[0]),
                "tan" => Element::tan(args[0]),
                "tanh" => Element::tanh(args[0]),
                "floor" => Element::floor(args[0]),
                "ceil" => Element::ceil(args[0]),
                "min" => Element::min(args[0], args[1]),
                "max" => Element::max(args[0], args[1]),
                "powf" => Element::powf(args[0], args[1]),
                other => panic!("unknown function {other}"),
            })
        }
        syn::Expr::If(e) => {
            let branch = |block: &syn::Block| match block.stmts.as_slice() {
                [syn::Stmt::Expr(value, None)] => eval(value, env),
                _ => panic!("single-value branch"),
            };
            let Some((_, otherwise)) = &e.else_branch else {
                panic!("else branch")
            };
            let syn::Expr::Block(otherwise) = &**otherwise else {
                panic!("else block")
            };
            if eval(&e.cond, env).boolean() {
                branch(&e.then_branch)
            } else {
                branch(&otherwise.block)
            }
        }
        other => panic!("unexpected expression {other:?}"),
    }
}
