//! An evaluator for the row functions `emit::point_loop` prints (f64 kernels), at one point:
//! it reads which input window (input, row offset, first unit-stride offset) and parameter
//! each argument of a point loop is from the row function that calls it (`__rows`, or
//! `__rows_jR` for a jammed block of `R` rows) and the window descriptors `__run` hands that
//! function, then evaluates the loop body as written. Tests compare it with core's
//! interpreter.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use stencil_core::Element;

/// Where a point loop argument comes from.
#[derive(Clone, Debug)]
enum Source {
    Output,
    /// A window: input, offset of its row, unit-stride offset of its first element.
    Window(usize, [isize; 4], isize),
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

/// The window descriptors `__run_plane` computes for the row function named `row_fn`: the array
/// `w` bound in the branch whose loop calls it, each entry `args.row_window(input, offset,
/// lo).rows(count, len)`.
fn descriptors(run: &syn::ItemFn, row_fn: &str) -> Vec<(usize, [isize; 4], isize)> {
    for statement in &run.block.stmts {
        let syn::Stmt::Expr(syn::Expr::If(branch), _) = statement else {
            continue;
        };
        // The branch handing rows to the shifted loop (whose bits the suite's `shifted`
        // tests check at run time) binds no windows here.
        if quote::ToTokens::to_token_stream(&branch.cond)
            .to_string()
            .contains("__run_shifted")
        {
            continue;
        }
        let [
            syn::Stmt::Local(w),
            syn::Stmt::Expr(syn::Expr::While(walk), _),
        ] = branch.then_branch.stmts.as_slice()
        else {
            panic!("a branch of __run_plane binds `w` and walks the rows")
        };
        let calls_it = walk.body.stmts.iter().any(|s| {
            matches!(s, syn::Stmt::Expr(syn::Expr::Call(call), _)
                if matches!(&*call.func, syn::Expr::Path(p) if p.path.is_ident(row_fn)))
        });
        if !calls_it {
            continue;
        }
        let syn::Expr::Array(array) = &*w.init.as_ref().unwrap().expr else {
            panic!("`w` is an array")
        };
        return array
            .elems
            .iter()
            .map(|e| {
                // `args.row_window(input, offset, lo).rows(count, len)`.
                let syn::Expr::MethodCall(rows) = e else {
                    panic!("a descriptor")
                };
                assert_eq!(rows.method, "rows");
                let syn::Expr::MethodCall(m) = &*rows.receiver else {
                    panic!("a window")
                };
                assert_eq!(m.method, "row_window");
                let args: Vec<_> = m.args.iter().collect();
                let syn::Expr::Array(offset) = args[1] else {
                    panic!("offset array")
                };
                let mut o = [0; 4];
                for (d, e) in offset.elems.iter().enumerate() {
                    o[d] = int(e);
                }
                (int(args[0]) as usize, o, int(args[2]))
            })
            .collect();
    }
    panic!("__run never calls {row_fn}")
}

/// What each point loop argument is, from the call in the row function `rows` and the window
/// descriptors `__run` hands it.
fn sources(rows: &syn::ItemFn, descriptors: &[(usize, [isize; 4], isize)]) -> Vec<Source> {
    let call = rows
        .block
        .stmts
        .iter()
        .find_map(|s| match s {
            syn::Stmt::Expr(syn::Expr::Call(call), _) => Some(call),
            _ => None,
        })
        .expect("the row function calls its point loop");
    call.args
        .iter()
        .map(|arg| match arg {
            syn::Expr::Reference(_) => Source::Output,
            // `w[k].at(r, n + extra)`: descriptor `k`.
            syn::Expr::MethodCall(m) if m.method == "at" => {
                let syn::Expr::Index(index) = &*m.receiver else {
                    panic!("a window of `w`")
                };
                let (input, offset, lo) = descriptors[int(&index.index) as usize];
                Source::Window(input, offset, lo)
            }
            syn::Expr::MethodCall(m) if m.method == "param" => {
                Source::Param(int(m.args.first().unwrap()) as usize)
            }
            other => panic!("unexpected argument {other:?}"),
        })
        .collect()
}

/// The values the printed row function `row_fn` and its point loop `point_loop` store at
/// one point of a kernel of `n_dims` dimensions, in the row contract's order (row by row,
/// outputs in order within a row): `read(input, offset)` gives the input values around the
/// point (of row 0 of a block), `params` the parameters.
pub(super) fn evaluate(
    rows: TokenStream,
    (row_fn, point_loop): (&str, &str),
    n_dims: usize,
    read: impl Fn(usize, [isize; 4]) -> f64,
    params: &[f64],
) -> Vec<f64> {
    let file: syn::File = syn::parse2(rows).expect("row functions parse");
    let descriptors = descriptors(function(&file, "__run_plane"), row_fn);
    let sources = sources(function(&file, row_fn), &descriptors);
    let point_loop = function(&file, point_loop);
    let mut env: HashMap<String, Value> = HashMap::new();
    let mut windows: HashMap<String, (usize, [isize; 4], isize)> = HashMap::new();
    let mut outputs: Vec<String> = Vec::new();
    for (input, source) in point_loop.sig.inputs.iter().zip(&sources) {
        let syn::FnArg::Typed(typed) = input else {
            panic!("no self")
        };
        let syn::Pat::Ident(name) = &*typed.pat else {
            panic!("plain names")
        };
        let name = name.ident.to_string();
        match *source {
            Source::Output => outputs.push(name),
            Source::Window(i, offset, lo) => {
                windows.insert(name, (i, offset, lo));
            }
            Source::Param(p) => {
                env.insert(name, Value::Real(params[p]));
            }
        }
    }
    // The shifted slices bound before the loop: `let rK_A = &rK[A..A + n];`.
    let mut shifted: HashMap<String, (String, isize)> = HashMap::new();
    for statement in &point_loop.block.stmts {
        let syn::Stmt::Local(local) = statement else {
            continue;
        };
        let (syn::Pat::Ident(name), Some(init)) = (&local.pat, &local.init) else {
            continue;
        };
        let syn::Expr::Reference(reference) = &*init.expr else {
            continue;
        };
        let syn::Expr::Index(index) = &*reference.expr else {
            continue;
        };
        let (syn::Expr::Path(window), syn::Expr::Range(range)) = (&*index.expr, &*index.index)
        else {
            continue;
        };
        let Some(start) = &range.start else {
            continue;
        };
        let window = window.path.get_ident().unwrap().to_string();
        if windows.contains_key(&window) {
            shifted.insert(name.ident.to_string(), (window, int(start)));
        }
    }
    let unit = n_dims - 1;
    let reader = |name: &str, at: isize| {
        let (window, shift) = match shifted.get(name) {
            Some((window, shift)) => (window.as_str(), *shift),
            None => (name, 0),
        };
        let (input, mut offset, lo) = windows[window];
        offset[unit] += lo + shift + at;
        read(input, offset)
    };
    let body = point_loop
        .block
        .stmts
        .iter()
        .find_map(|s| match s {
            syn::Stmt::Expr(syn::Expr::ForLoop(f), _) => Some(&f.body),
            _ => None,
        })
        .expect("a point loop");
    let mut stored: HashMap<String, f64> = HashMap::new();
    run_statements(&body.stmts, &mut env, &reader, &mut stored);
    outputs
        .iter()
        .map(|name| *stored.get(name).unwrap_or(&f64::NAN))
        .collect()
}

/// Runs the statements of a loop body (or of a row's block within it): `let`s bind values,
/// stores record them.
fn run_statements(
    statements: &[syn::Stmt],
    env: &mut HashMap<String, Value>,
    read: &dyn Fn(&str, isize) -> f64,
    stored: &mut HashMap<String, f64>,
) {
    for statement in statements {
        match statement {
            syn::Stmt::Local(local) => {
                let init = &local.init.as_ref().unwrap().expr;
                match &local.pat {
                    syn::Pat::Type(typed) => {
                        let syn::Pat::Ident(name) = &*typed.pat else {
                            panic!("plain let")
                        };
                        let value = eval(init, env, read);
                        env.insert(name.ident.to_string(), value);
                    }
                    // A jammed row: `let (v0_R, ..) = { lets.. (e.., ) };`.
                    syn::Pat::Tuple(tuple) => {
                        let syn::Expr::Block(block) = &**init else {
                            panic!("a row's block")
                        };
                        let (last, lets) = block.block.stmts.split_last().unwrap();
                        run_statements(lets, env, read, stored);
                        let syn::Stmt::Expr(syn::Expr::Tuple(values), None) = last else {
                            panic!("a row's values")
                        };
                        for (pat, value) in tuple.elems.iter().zip(&values.elems) {
                            let syn::Pat::Ident(name) = pat else {
                                panic!("plain names")
                            };
                            let value = eval(value, env, read);
                            env.insert(name.ident.to_string(), value);
                        }
                    }
                    other => panic!("unexpected let {other:?}"),
                }
            }
            syn::Stmt::Expr(syn::Expr::Assign(assign), _) => {
                let syn::Expr::Index(index) = &*assign.left else {
                    panic!("store to an index")
                };
                let syn::Expr::Path(output) = &*index.expr else {
                    panic!("store to an output slice")
                };
                let output = output.path.get_ident().unwrap().to_string();
                stored.insert(output, eval(&assign.right, env, read).real());
            }
            other => panic!("unexpected statement {other:?}"),
        }
    }
}

/// The position `x` or `x + d` of a window read.
fn position(index: &syn::Expr) -> isize {
    match index {
        syn::Expr::Path(p) if p.path.is_ident("x") => 0,
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_)) => {
            assert!(matches!(&*b.left, syn::Expr::Path(p) if p.path.is_ident("x")));
            int(&b.right)
        }
        other => panic!("unexpected index {other:?}"),
    }
}

fn eval(
    expr: &syn::Expr,
    env: &HashMap<String, Value>,
    read: &dyn Fn(&str, isize) -> f64,
) -> Value {
    use syn::BinOp as B;
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => Value::Real(f.base10_parse().unwrap()),
        syn::Expr::Path(p) => env[&p.path.get_ident().unwrap().to_string()],
        // `rK[x + d]`: window `rK` at `d`; `rK_A[x]`: window `rK` at `A`.
        syn::Expr::Index(index) => {
            let syn::Expr::Path(window) = &*index.expr else {
                panic!("a window read")
            };
            let window = window.path.get_ident().unwrap().to_string();
            Value::Real(read(&window, position(&index.index)))
        }
        syn::Expr::Paren(p) => eval(&p.expr, env, read),
        syn::Expr::Unary(u) => match u.op {
            syn::UnOp::Neg(_) => Value::Real(-eval(&u.expr, env, read).real()),
            syn::UnOp::Not(_) => Value::Bool(!eval(&u.expr, env, read).boolean()),
            _ => panic!("unexpected unary operator"),
        },
        syn::Expr::Binary(b) => {
            let (l, r) = (eval(&b.left, env, read), eval(&b.right, env, read));
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
            let args: Vec<f64> = call
                .args
                .iter()
                .map(|a| eval(a, env, read).real())
                .collect();
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
                [syn::Stmt::Expr(value, None)] => eval(value, env, read),
                _ => panic!("single-value branch"),
            };
            let Some((_, otherwise)) = &e.else_branch else {
                panic!("else branch")
            };
            let syn::Expr::Block(otherwise) = &**otherwise else {
                panic!("else block")
            };
            if eval(&e.cond, env, read).boolean() {
                branch(&e.then_branch)
            } else {
                branch(&otherwise.block)
            }
        }
        other => panic!("unexpected expression {other:?}"),
    }
}
