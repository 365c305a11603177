//! A deliberately simple evaluator of `stencil!` source text, written to share nothing with the
//! library: its own tokenizer, its own recursive-descent parser (Rust's precedence), its own
//! tree, and plain `f32`/`f64` arithmetic in the tree's order. It never touches the IR, the
//! builder, the macro or the interpreter; it reads grids only through `Grid::get`.
//!
//! It accepts the language the generator writes and more: `let`, stores, reads at constant
//! offsets, numbers, scalar parameters, `+ - * /`, unary `-`, `abs sqrt exp ln sin cos tan tanh
//! floor ceil` (one argument), `min max pow` (two), `select(c, a, b)`, `if c { a } else { b }`,
//! comparisons, `&& || !`. Semantics are Rust's: `min`/`max` return the other operand for a NaN,
//! `pow` is `powf`, constants are rounded from `f64` to the element type where used.

// Each test crate that includes this module uses a different part of it.
#![allow(dead_code)]

use std::collections::HashMap;

/// The element types the evaluator computes in.
pub(crate) trait Real: Copy + PartialEq + PartialOrd + std::fmt::Debug {
    fn of_f64(x: f64) -> Self;
    fn as_f64(self) -> f64;
    fn bits(self) -> u64;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn call1(name: &str, x: Self) -> Option<Self>;
    fn call2(name: &str, x: Self, y: Self) -> Option<Self>;
    const EPS: f64;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            fn of_f64(x: f64) -> Self {
                x as $t
            }
            fn as_f64(self) -> f64 {
                self as f64
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn neg(self) -> Self {
                -self
            }
            fn call1(name: &str, x: Self) -> Option<Self> {
                Some(match name {
                    "abs" => x.abs(),
                    "sqrt" => x.sqrt(),
                    "exp" => x.exp(),
                    "ln" => x.ln(),
                    "sin" => x.sin(),
                    "cos" => x.cos(),
                    "tan" => x.tan(),
                    "tanh" => x.tanh(),
                    "floor" => x.floor(),
                    "ceil" => x.ceil(),
                    _ => return None,
                })
            }
            fn call2(name: &str, x: Self, y: Self) -> Option<Self> {
                Some(match name {
                    "min" => x.min(y),
                    "max" => x.max(y),
                    "pow" => x.powf(y),
                    _ => return None,
                })
            }
            const EPS: f64 = <$t>::EPSILON as f64;
        }
    };
}
real!(f32);
real!(f64);

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Number(f64),
    Sym(String),
}

fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() {
                let d = chars[i];
                let exponent_sign = (d == '-' || d == '+') && matches!(chars[i - 1], 'e' | 'E');
                if d.is_ascii_digit() || d == '.' || d == 'e' || d == 'E' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let s: String = chars[start..i].iter().collect();
            out.push(Token::Number(s.parse().expect("a number")));
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if ["&&", "||", "<=", ">=", "==", "!="].contains(&two.as_str()) {
                out.push(Token::Sym(two));
                i += 2;
            } else {
                out.push(Token::Sym(c.to_string()));
                i += 1;
            }
        }
    }
    out
}

#[derive(Clone, Debug)]
enum Node {
    Number(f64),
    Name(String),
    Read(String, Vec<i64>),
    Neg(Box<Node>),
    Not(Box<Node>),
    /// `+ - * /`, comparisons, `&&`, `||`.
    Op(String, Box<Node>, Box<Node>),
    Call(String, Vec<Node>),
    If(Box<Node>, Box<Node>, Box<Node>),
}

enum Statement {
    Let(String, Node),
    Store(String, Node),
}

/// One kernel of a `stencil!` block.
pub(crate) struct Program {
    pub(crate) n_dims: usize,
    /// `(name, is_output)` in declaration order.
    pub(crate) fields: Vec<(String, bool)>,
    pub(crate) params: Vec<String>,
    statements: Vec<Statement>,
}

struct Parser {
    t: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_sym(&self, s: &str) -> bool {
        self.t.get(self.at) == Some(&Token::Sym(s.into()))
    }
    fn peek_word(&self, w: &str) -> bool {
        self.t.get(self.at) == Some(&Token::Word(w.into()))
    }
    fn sym(&mut self, s: &str) {
        assert!(
            self.peek_sym(s),
            "expected `{s}` at {:?}",
            &self.t[self.at..]
        );
        self.at += 1;
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        let yes = self.peek_sym(s);
        self.at += usize::from(yes);
        yes
    }
    fn word(&mut self) -> String {
        match self.t.get(self.at).cloned() {
            Some(Token::Word(w)) => {
                self.at += 1;
                w
            }
            other => panic!("expected a name, found {other:?}"),
        }
    }
    fn number(&mut self) -> f64 {
        match self.t.get(self.at).cloned() {
            Some(Token::Number(x)) => {
                self.at += 1;
                x
            }
            other => panic!("expected a number, found {other:?}"),
        }
    }

    fn expr(&mut self) -> Node {
        let mut lhs = self.and();
        while self.eat_sym("||") {
            lhs = Node::Op("||".into(), Box::new(lhs), Box::new(self.and()));
        }
        lhs
    }
    fn and(&mut self) -> Node {
        let mut lhs = self.compare();
        while self.eat_sym("&&") {
            lhs = Node::Op("&&".into(), Box::new(lhs), Box::new(self.compare()));
        }
        lhs
    }
    fn compare(&mut self) -> Node {
        let lhs = self.sum();
        for op in ["<=", ">=", "==", "!=", "<", ">"] {
            if self.eat_sym(op) {
                return Node::Op(op.into(), Box::new(lhs), Box::new(self.sum()));
            }
        }
        lhs
    }
    fn sum(&mut self) -> Node {
        let mut lhs = self.product();
        loop {
            let op = if self.eat_sym("+") {
                "+"
            } else if self.eat_sym("-") {
                "-"
            } else {
                return lhs;
            };
            lhs = Node::Op(op.into(), Box::new(lhs), Box::new(self.product()));
        }
    }
    fn product(&mut self) -> Node {
        let mut lhs = self.prefix();
        loop {
            let op = if self.eat_sym("*") {
                "*"
            } else if self.eat_sym("/") {
                "/"
            } else {
                return lhs;
            };
            lhs = Node::Op(op.into(), Box::new(lhs), Box::new(self.prefix()));
        }
    }
    fn prefix(&mut self) -> Node {
        if self.eat_sym("-") {
            Node::Neg(Box::new(self.prefix()))
        } else if self.eat_sym("!") {
            Node::Not(Box::new(self.prefix()))
        } else {
            self.atom()
        }
    }
    fn atom(&mut self) -> Node {
        if self.eat_sym("(") {
            let e = self.expr();
            self.sym(")");
            return e;
        }
        if let Some(Token::Number(_)) = self.t.get(self.at) {
            return Node::Number(self.number());
        }
        if self.peek_word("if") {
            self.at += 1;
            let c = self.expr();
            self.sym("{");
            let a = self.expr();
            self.sym("}");
            assert_eq!(self.word(), "else");
            self.sym("{");
            let b = self.expr();
            self.sym("}");
            return Node::If(Box::new(c), Box::new(a), Box::new(b));
        }
        let name = self.word();
        if self.eat_sym("(") {
            let mut args = vec![self.expr()];
            while self.eat_sym(",") {
                args.push(self.expr());
            }
            self.sym(")");
            return if name == "select" {
                let [c, a, b]: [Node; 3] = args.try_into().expect("select takes three");
                Node::If(Box::new(c), Box::new(a), Box::new(b))
            } else {
                Node::Call(name, args)
            };
        }
        if self.peek_sym("[") {
            return Node::Read(name, self.index());
        }
        Node::Name(name)
    }
    /// `[i - 1, j, k + 2]` as offsets (the variable names are checked by position later).
    fn index(&mut self) -> Vec<i64> {
        self.sym("[");
        let mut offsets = Vec::new();
        loop {
            self.word();
            let offset = if self.eat_sym("+") {
                self.number() as i64
            } else if self.eat_sym("-") {
                -(self.number() as i64)
            } else {
                0
            };
            offsets.push(offset);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym("]");
        offsets
    }
}

impl Program {
    /// Parses the first `fn` of a `stencil! { ... }` block (or of bare `fn`s).
    ///
    /// # Panics
    /// On text outside the accepted language (this is a test oracle).
    pub(crate) fn parse(text: &str) -> Program {
        let t = tokens(text);
        let start = t
            .iter()
            .position(|x| *x == Token::Word("fn".into()))
            .expect("a fn");
        Program::parse_at(t, start)
    }

    /// Parses the `fn` called `name` among the text's `fn`s.
    ///
    /// # Panics
    /// As [`parse`](Self::parse), and when there is no such `fn`.
    pub(crate) fn parse_named(text: &str, name: &str) -> Program {
        let t = tokens(text);
        let start = t
            .windows(2)
            .position(|w| w[0] == Token::Word("fn".into()) && w[1] == Token::Word(name.into()))
            .unwrap_or_else(|| panic!("no fn {name}"));
        Program::parse_at(t, start)
    }

    fn parse_at(t: Vec<Token>, start: usize) -> Program {
        let mut p = Parser { t, at: start + 1 };
        p.word();
        p.sym("(");
        let mut fields = Vec::new();
        let mut params = Vec::new();
        let mut n_dims = 0;
        while !p.eat_sym(")") {
            let name = p.word();
            p.sym(":");
            if p.eat_sym("&") {
                let output = p.peek_word("mut");
                p.at += usize::from(output);
                let ty = p.word();
                // `GridN<T>` or `Grid<T, N>`.
                p.sym("<");
                p.word();
                n_dims = match ty.strip_prefix("Grid") {
                    Some("") => {
                        p.sym(",");
                        p.number() as usize
                    }
                    Some(n) => n.parse().expect("GridN"),
                    None => panic!("unknown grid type {ty}"),
                };
                p.sym(">");
                fields.push((name, output));
            } else {
                p.word();
                params.push(name);
            }
            p.eat_sym(",");
        }
        p.sym("{");
        let mut statements = Vec::new();
        while !p.eat_sym("}") {
            if p.peek_word("let") {
                p.at += 1;
                let name = p.word();
                p.sym("=");
                statements.push(Statement::Let(name, p.expr()));
            } else {
                let name = p.word();
                let at = p.index();
                assert_eq!(at.len(), n_dims, "a store names every index");
                assert!(at.iter().all(|&o| o == 0), "stores are at offset zero");
                p.sym("=");
                statements.push(Statement::Store(name, p.expr()));
            }
            p.sym(";");
        }
        Program {
            n_dims,
            fields,
            params,
            statements,
        }
    }

    /// Evaluates every store at interior point `at`, reading input `name` at a point with
    /// `read(name, point)`. Returns `(output, value, magnitude)` per store, where the magnitude
    /// bounds the sum of absolute values of the terms (`None` when the expression is not built
    /// from `+ - *`, unary `-`, numbers, parameters and reads only).
    pub(crate) fn eval<T: Real>(
        &self,
        at: &[isize],
        params: &HashMap<String, T>,
        read: &dyn Fn(&str, &[isize]) -> T,
    ) -> Vec<(String, T, Option<f64>)> {
        let mut env = Env {
            at,
            params,
            read,
            lets: HashMap::new(),
        };
        let mut out = Vec::new();
        for s in &self.statements {
            match s {
                Statement::Let(name, e) => {
                    let v = env.real(e);
                    env.lets.insert(name.clone(), v);
                }
                Statement::Store(name, e) => {
                    let (v, m) = env.real(e);
                    out.push((name.clone(), v, m));
                }
            }
        }
        out
    }
}

struct Env<'a, T> {
    at: &'a [isize],
    params: &'a HashMap<String, T>,
    read: &'a dyn Fn(&str, &[isize]) -> T,
    /// Value and magnitude of each `let`.
    lets: HashMap<String, (T, Option<f64>)>,
}

impl<T: Real> Env<'_, T> {
    fn real(&self, e: &Node) -> (T, Option<f64>) {
        match e {
            Node::Number(x) => {
                let v = T::of_f64(*x);
                (v, Some(v.as_f64().abs()))
            }
            Node::Name(n) => match (self.lets.get(n), self.params.get(n)) {
                (Some(v), _) => *v,
                (None, Some(v)) => (*v, Some(v.as_f64().abs())),
                (None, None) => panic!("unknown name {n}"),
            },
            Node::Read(field, offsets) => {
                let point: Vec<isize> = self
                    .at
                    .iter()
                    .zip(offsets)
                    .map(|(&p, &o)| p + o as isize)
                    .collect();
                let v = (self.read)(field, &point);
                (v, Some(v.as_f64().abs()))
            }
            Node::Neg(a) => {
                let (v, m) = self.real(a);
                (v.neg(), m)
            }
            Node::Op(op, a, b) if matches!(op.as_str(), "+" | "-" | "*" | "/") => {
                let (x, mx) = self.real(a);
                let (y, my) = self.real(b);
                match op.as_str() {
                    "+" => (x.add(y), mx.zip(my).map(|(p, q)| p + q)),
                    "-" => (x.sub(y), mx.zip(my).map(|(p, q)| p + q)),
                    "*" => (x.mul(y), mx.zip(my).map(|(p, q)| p * q)),
                    _ => (x.div(y), None),
                }
            }
            Node::Call(name, args) => {
                let v = match args.as_slice() {
                    [x] => T::call1(name, self.real(x).0),
                    [x, y] => T::call2(name, self.real(x).0, self.real(y).0),
                    _ => None,
                };
                (v.unwrap_or_else(|| panic!("unknown function {name}")), None)
            }
            Node::If(c, a, b) => {
                let v = if self.boolean(c) {
                    self.real(a).0
                } else {
                    self.real(b).0
                };
                (v, None)
            }
            other => panic!("not a real value: {other:?}"),
        }
    }

    fn boolean(&self, e: &Node) -> bool {
        match e {
            Node::Not(a) => !self.boolean(a),
            Node::Op(op, a, b) if op == "&&" => self.boolean(a) && self.boolean(b),
            Node::Op(op, a, b) if op == "||" => self.boolean(a) || self.boolean(b),
            Node::Op(op, a, b) => {
                let (x, y) = (self.real(a).0, self.real(b).0);
                match op.as_str() {
                    "<" => x < y,
                    "<=" => x <= y,
                    ">" => x > y,
                    ">=" => x >= y,
                    "==" => x == y,
                    "!=" => x != y,
                    _ => panic!("not a condition: {op}"),
                }
            }
            other => panic!("not a condition: {other:?}"),
        }
    }
}
