//! Test-only: parses the text [`to_macro_source`](super::to_macro_source) prints back into a
//! kernel, so round trips can be checked without the proc macro (which lives in another crate
//! and depends on this one). It accepts exactly the printer's subset of the kernel language,
//! with Rust's operator precedence and `let` shadowing, and reports anything else as an error.

use std::collections::HashMap;

use crate::element::ElemType;
use crate::ir::{
    BinaryOp, CmpOp, ExprId, FieldId, Kernel, KernelBuilder, LetId, LogicOp, ParamId, UnaryOp,
};

#[derive(Clone, PartialEq, Debug)]
enum Token {
    Ident(String),
    Number(f64),
    Punct(&'static str),
}

const PUNCTS: [&str; 24] = [
    "&&", "||", "<=", ">=", "==", "!=", "{", "}", "(", ")", "[", "]", ",", ";", ":", "&", "<", ">",
    "!", "+", "-", "*", "/", "=",
];

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || chars[i] == '.'
                    || chars[i] == 'e'
                    || (chars[i] == '-' && chars[i - 1] == 'e'))
            {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            tokens.push(Token::Number(
                s.parse().map_err(|_| format!("bad number {s}"))?,
            ));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let p = PUNCTS
                .iter()
                .find(|p| rest.starts_with(**p))
                .ok_or_else(|| format!("unexpected character {c:?}"))?;
            tokens.push(Token::Punct(p));
            i += p.len();
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    builder: Option<KernelBuilder>,
    fields: HashMap<String, FieldId>,
    params: HashMap<String, ParamId>,
    lets: HashMap<String, LetId>,
}

/// Parses a `stencil! { pub fn ... }` invocation as printed by `to_macro_source`.
pub(crate) fn parse(text: &str) -> Result<Kernel, String> {
    let mut p = Parser {
        tokens: tokenize(text)?,
        pos: 0,
        builder: None,
        fields: HashMap::new(),
        params: HashMap::new(),
        lets: HashMap::new(),
    };
    p.kernel()
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Result<Token, String> {
        let t = self.peek().cloned().ok_or("unexpected end")?;
        self.pos += 1;
        Ok(t)
    }

    fn eat(&mut self, punct: &str) -> bool {
        if self.peek()
            == Some(&Token::Punct(
                PUNCTS.into_iter().find(|p| *p == punct).unwrap(),
            ))
        {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: &str) -> Result<(), String> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(format!(
                "expected `{punct}` at token {}, found {:?}",
                self.pos,
                self.peek()
            ))
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.next()? {
            Token::Ident(s) => Ok(s),
            t => Err(format!("expected an identifier, found {t:?}")),
        }
    }

    fn keyword(&mut self, word: &str) -> Result<(), String> {
        let s = self.ident()?;
        if s == word {
            Ok(())
        } else {
            Err(format!("expected `{word}`, found `{s}`"))
        }
    }

    fn b(&mut self) -> &mut KernelBuilder {
        self.builder.as_mut().expect("signature parsed first")
    }

    fn kernel(&mut self) -> Result<Kernel, String> {
        self.keyword("stencil")?;
        self.expect("!")?;
        self.expect("{")?;
        self.keyword("pub")?;
        self.keyword("fn")?;
        let name = self.ident()?;
        self.expect("(")?;
        let mut args = Vec::new();
        loop {
            let arg = self.ident()?;
            self.expect(":")?;
            if self.eat("&") {
                let output = self.peek() == Some(&Token::Ident("mut".into()));
                if output {
                    self.pos += 1;
                }
                let grid = self.ident()?;
                let n_dims: usize = grid
                    .strip_prefix("Grid")
                    .and_then(|n| n.parse().ok())
                    .ok_or("expected GridN")?;
                self.expect("<")?;
                let elem = ElemType::from_rust_name(&self.ident()?).ok_or("bad type")?;
                self.expect(">")?;
                args.push((arg, Some((output, n_dims)), elem));
            } else {
                let elem = ElemType::from_rust_name(&self.ident()?).ok_or("bad type")?;
                args.push((arg, None, elem));
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")")?;
        let (n_dims, elem) = args
            .iter()
            .find_map(|(_, g, e)| g.map(|(_, n)| (n, *e)))
            .ok_or("no grid argument")?;
        let mut builder = KernelBuilder::new(&name, n_dims, elem);
        for (arg, grid, elem) in &args {
            match grid {
                Some((output, _)) => {
                    let role = if *output {
                        crate::ir::Role::Output
                    } else {
                        crate::ir::Role::Input
                    };
                    self.fields
                        .insert(arg.clone(), builder.field(arg, role, *elem));
                }
                None => {
                    self.params
                        .insert(arg.clone(), builder.param_typed(arg, *elem));
                }
            }
        }
        self.builder = Some(builder);
        self.expect("{")?;
        let mut index_names = Vec::new();
        while !self.eat("}") {
            let first = self.ident()?;
            if first == "let" {
                let name = self.ident()?;
                self.expect("=")?;
                let value = self.expr()?;
                self.expect(";")?;
                let var = self.b().let_(&name, value);
                self.lets.insert(name, var);
            } else {
                let field = *self.fields.get(&first).ok_or("unknown output")?;
                self.expect("[")?;
                index_names = vec![self.ident()?];
                while self.eat(",") {
                    index_names.push(self.ident()?);
                }
                self.expect("]")?;
                self.expect("=")?;
                let value = self.expr()?;
                self.expect(";")?;
                self.b().store(field, value);
            }
        }
        self.expect("}")?;
        if self.pos != self.tokens.len() {
            return Err("trailing tokens".into());
        }
        let mut b = self.builder.take().expect("built");
        let names: Vec<&str> = index_names.iter().map(String::as_str).collect();
        b.index_names(&names);
        b.finish().map_err(|e| e.to_string())
    }

    fn expr(&mut self) -> Result<ExprId, String> {
        if self.peek() == Some(&Token::Ident("if".into())) {
            self.pos += 1;
            let cond = self.or()?;
            self.expect("{")?;
            let then = self.expr()?;
            self.expect("}")?;
            self.keyword("else")?;
            self.expect("{")?;
            let otherwise = self.expr()?;
            self.expect("}")?;
            return Ok(self.b().select(cond, then, otherwise));
        }
        self.or()
    }

    fn or(&mut self) -> Result<ExprId, String> {
        let mut lhs = self.and()?;
        while self.eat("||") {
            let rhs = self.and()?;
            lhs = self.b().logic(LogicOp::Or, lhs, rhs);
        }
        Ok(lhs)
    }

    fn and(&mut self) -> Result<ExprId, String> {
        let mut lhs = self.compare()?;
        while self.eat("&&") {
            let rhs = self.compare()?;
            lhs = self.b().logic(LogicOp::And, lhs, rhs);
        }
        Ok(lhs)
    }

    fn compare(&mut self) -> Result<ExprId, String> {
        let lhs = self.sum()?;
        for (p, op) in [
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ] {
            if self.eat(p) {
                let rhs = self.sum()?;
                return Ok(self.b().compare(op, lhs, rhs));
            }
        }
        Ok(lhs)
    }

    fn sum(&mut self) -> Result<ExprId, String> {
        let mut lhs = self.product()?;
        loop {
            let op = if self.eat("+") {
                BinaryOp::Add
            } else if self.eat("-") {
                BinaryOp::Sub
            } else {
                return Ok(lhs);
            };
            let rhs = self.product()?;
            lhs = self.b().binary(op, lhs, rhs);
        }
    }

    fn product(&mut self) -> Result<ExprId, String> {
        let mut lhs = self.prefix()?;
        loop {
            let op = if self.eat("*") {
                BinaryOp::Mul
            } else if self.eat("/") {
                BinaryOp::Div
            } else {
                return Ok(lhs);
            };
            let rhs = self.prefix()?;
            lhs = self.b().binary(op, lhs, rhs);
        }
    }

    fn prefix(&mut self) -> Result<ExprId, String> {
        if self.eat("-") {
            let arg = self.prefix()?;
            Ok(self.b().neg(arg))
        } else if self.eat("!") {
            let arg = self.prefix()?;
            Ok(self.b().not(arg))
        } else {
            self.atom()
        }
    }

    fn atom(&mut self) -> Result<ExprId, String> {
        match self.next()? {
            Token::Number(v) => Ok(self.b().constant(v)),
            Token::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Token::Ident(name) if self.eat("(") => {
                let a = self.expr()?;
                let e = if self.eat(",") {
                    let b = self.expr()?;
                    let op = BinaryOp::from_function_name(&name).ok_or("unknown function")?;
                    self.b().binary(op, a, b)
                } else {
                    let op = UnaryOp::from_function_name(&name).ok_or("unknown function")?;
                    self.b().unary(op, a)
                };
                self.expect(")")?;
                Ok(e)
            }
            Token::Ident(name) if self.eat("[") => {
                let field = *self.fields.get(&name).ok_or("unknown field")?;
                let mut offset = Vec::new();
                loop {
                    self.ident()?;
                    let sign = if self.eat("+") {
                        1
                    } else if self.eat("-") {
                        -1
                    } else {
                        0
                    };
                    let mut o = 0;
                    if sign != 0 {
                        match self.next()? {
                            Token::Number(v) => o = sign * v as i32,
                            t => return Err(format!("bad offset {t:?}")),
                        }
                    }
                    offset.push(o);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
                Ok(self.b().read(field, &offset))
            }
            Token::Ident(name) => {
                if let Some(&var) = self.lets.get(&name) {
                    Ok(self.b().let_ref(var))
                } else if let Some(&p) = self.params.get(&name) {
                    Ok(self.b().param_ref(p))
                } else {
                    Err(format!("unknown name `{name}`"))
                }
            }
            t => Err(format!("unexpected {t:?}")),
        }
    }
}
