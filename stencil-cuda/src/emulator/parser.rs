//! Parses the PTX subset (notes/ptx_subset.md) into [`Entry`]s: module header, entry signatures,
//! `.reg` and `.shared` declarations, labels and instruction statements.
//!
//! Instructions are first collected as [`RawInstruction`]s (opcode words and operand shapes) so
//! that labels and registers declared anywhere in the body are known; `decode` then turns each
//! into a typed [`Op`](super::program::Op). Every rejection names the line and the construct.

use std::collections::HashMap;

use super::decode::{DecodeContext, decode};
use super::error::{EmulatorError, EmulatorErrorKind};
use super::lexer::{Token, TokenKind, parse_unsigned, tokenize};
use super::program::{Entry, Instruction, Param, ParamType, Reg, SharedVariable, Ty};
use super::raw::{RawInstruction, RawOperand};

/// Parses a whole module into its entries.
pub(crate) fn parse_entries(text: &str) -> Result<Vec<Entry>, EmulatorError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens: &tokens,
        position: 0,
    };
    let mut entries: Vec<Entry> = Vec::new();
    while parser.position < tokens.len() {
        let (word, line) = parser.word("a module-level directive")?;
        match word.as_str() {
            ".version" => {
                let (version, line) = parser.word("a PTX version")?;
                let parsed = version.split_once('.').and_then(|(major, minor)| {
                    Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?))
                });
                match parsed {
                    Some(pair) if ((7, 0)..=(8, 8)).contains(&pair) => {}
                    _ => {
                        return Err(parse_error(
                            line,
                            format!("unsupported `.version {version}` (7.0 to 8.8 accepted)"),
                        ));
                    }
                }
            }
            ".target" => {
                let (target, line) = parser.word("a target")?;
                if !matches!(target.as_str(), "sm_70" | "sm_80" | "sm_90") {
                    return Err(parse_error(
                        line,
                        format!("unsupported `.target {target}` (sm_70, sm_80, sm_90 accepted)"),
                    ));
                }
            }
            ".address_size" => {
                let (size, line) = parser.word("an address size")?;
                if size != "64" {
                    return Err(parse_error(
                        line,
                        format!("unsupported `.address_size {size}` (only 64)"),
                    ));
                }
            }
            ".visible" | ".entry" => {
                if word == ".visible" {
                    parser.expect_word(".entry")?;
                }
                let entry = parser.entry()?;
                if entries.iter().any(|other| other.name == entry.name) {
                    return Err(parse_error(
                        line,
                        format!("entry `{}` defined twice", entry.name),
                    ));
                }
                entries.push(entry);
            }
            other => {
                return Err(parse_error(
                    line,
                    format!("unsupported module-level construct `{other}`"),
                ));
            }
        }
    }
    Ok(entries)
}

fn parse_error(line: usize, message: impl Into<String>) -> EmulatorError {
    EmulatorError::at_line(EmulatorErrorKind::Parse, line, message)
}

struct Parser<'t> {
    tokens: &'t [Token],
    position: usize,
}

impl Parser<'_> {
    fn line(&self) -> usize {
        match self.tokens.get(self.position).or(self.tokens.last()) {
            Some(token) => token.line,
            None => 1,
        }
    }

    fn describe_next(&self) -> String {
        match self.tokens.get(self.position).map(|token| &token.kind) {
            Some(TokenKind::Word(word)) => format!("`{word}`"),
            Some(TokenKind::Punct(c)) => format!("`{c}`"),
            None => "the end of the text".to_string(),
        }
    }

    fn at_punct(&self, c: char) -> bool {
        matches!(self.tokens.get(self.position), Some(Token { kind: TokenKind::Punct(p), .. }) if *p == c)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let found = self.at_punct(c);
        if found {
            self.position += 1;
        }
        found
    }

    fn expect_punct(&mut self, c: char) -> Result<(), EmulatorError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(parse_error(
                self.line(),
                format!("expected `{c}`, found {}", self.describe_next()),
            ))
        }
    }

    fn word(&mut self, what: &str) -> Result<(String, usize), EmulatorError> {
        match self.tokens.get(self.position) {
            Some(Token {
                kind: TokenKind::Word(word),
                line,
            }) => {
                self.position += 1;
                Ok((word.clone(), *line))
            }
            _ => Err(parse_error(
                self.line(),
                format!("expected {what}, found {}", self.describe_next()),
            )),
        }
    }

    fn expect_word(&mut self, expected: &str) -> Result<(), EmulatorError> {
        let line = self.line();
        let (word, _) = self.word(&format!("`{expected}`"))?;
        if word == expected {
            Ok(())
        } else {
            Err(parse_error(
                line,
                format!("expected `{expected}`, found `{word}`"),
            ))
        }
    }

    fn number(&mut self, what: &str) -> Result<u64, EmulatorError> {
        let (text, line) = self.word(what)?;
        parse_unsigned(&text)
            .ok_or_else(|| parse_error(line, format!("expected {what}, found `{text}`")))
    }

    fn entry(&mut self) -> Result<Entry, EmulatorError> {
        let (name, _) = self.word("an entry name")?;
        self.expect_punct('(')?;
        let mut params = Vec::new();
        if !self.eat_punct(')') {
            loop {
                self.expect_word(".param")?;
                let (type_word, line) = self.word("a parameter type")?;
                let ty = match type_word.as_str() {
                    ".u32" => ParamType::U32,
                    ".s32" => ParamType::S32,
                    ".u64" => ParamType::U64,
                    ".f32" => ParamType::F32,
                    ".f64" => ParamType::F64,
                    other => {
                        return Err(parse_error(
                            line,
                            format!("unsupported parameter type `{other}`"),
                        ));
                    }
                };
                let (param_name, line) = self.word("a parameter name")?;
                if params.iter().any(|param: &Param| param.name == param_name) {
                    return Err(parse_error(
                        line,
                        format!("parameter `{param_name}` declared twice"),
                    ));
                }
                params.push(Param {
                    name: param_name,
                    ty,
                });
                if self.eat_punct(')') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        if !self.at_punct('{') {
            return Err(parse_error(
                self.line(),
                format!(
                    "unsupported entry directive {} (expected `{{`)",
                    self.describe_next()
                ),
            ));
        }
        self.position += 1;
        let mut body = Body::default();
        while !self.eat_punct('}') {
            if self.position >= self.tokens.len() {
                return Err(parse_error(
                    self.line(),
                    format!("entry `{name}` has no closing `}}`"),
                ));
            }
            self.statement(&mut body)?;
        }
        let context = DecodeContext {
            registers: &body.register_index,
            register_types: &body.registers,
            labels: &body.labels,
            shared: &body.shared,
            params: &params,
        };
        let code = body
            .instructions
            .iter()
            .map(|raw| {
                let (op, guard) = decode(raw, &context)?;
                Ok(Instruction {
                    op,
                    guard,
                    line: raw.line as u32,
                })
            })
            .collect::<Result<Vec<_>, EmulatorError>>()?;
        Ok(Entry {
            name,
            params,
            registers: body.registers,
            shared: body.shared,
            shared_bytes: body.shared_bytes,
            code,
        })
    }

    fn statement(&mut self, body: &mut Body) -> Result<(), EmulatorError> {
        let line = self.line();
        if self.at_punct('{') {
            return Err(parse_error(line, "nested `{ }` scopes are not supported"));
        }
        let guard = if self.eat_punct('@') {
            let negated = self.eat_punct('!');
            let (predicate, _) = self.word("a guard predicate")?;
            Some((predicate, negated))
        } else {
            None
        };
        let (word, line) = self.word("a statement")?;
        if guard.is_none() && self.eat_punct(':') {
            if body
                .labels
                .insert(word.clone(), body.instructions.len() as u32)
                .is_some()
            {
                return Err(parse_error(line, format!("label `{word}` defined twice")));
            }
            return Ok(());
        }
        match word.as_str() {
            ".reg" if guard.is_none() => return self.register_declaration(body, line),
            ".shared" if guard.is_none() => return self.shared_declaration(body, line),
            _ if word.starts_with('.') => {
                return Err(parse_error(
                    line,
                    format!("unsupported directive `{word}` inside an entry"),
                ));
            }
            _ => {}
        }
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat_punct(';') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        body.instructions.push(RawInstruction {
            guard,
            opcode: word,
            operands,
            line,
        });
        Ok(())
    }

    fn operand(&mut self) -> Result<RawOperand, EmulatorError> {
        if self.eat_punct('[') {
            let (base, _) = self.word("an address base")?;
            let mut offset = 0i64;
            if self.eat_punct('+') {
                let negative = self.eat_punct('-');
                offset = self.offset(negative)?;
            } else if self.eat_punct('-') {
                offset = self.offset(true)?;
            }
            self.expect_punct(']')?;
            return Ok(RawOperand::Address { base, offset });
        }
        let negative = self.eat_punct('-');
        let (word, line) = self.word("an operand")?;
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            Ok(RawOperand::Immediate {
                negative,
                text: word,
            })
        } else if negative {
            Err(parse_error(
                line,
                format!("`-` before `{word}` is not a literal"),
            ))
        } else if word.starts_with('%') {
            Ok(RawOperand::Register(word))
        } else {
            Ok(RawOperand::Name(word))
        }
    }

    fn offset(&mut self, negative: bool) -> Result<i64, EmulatorError> {
        let line = self.line();
        let magnitude = self.number("an address offset")?;
        let magnitude = i64::try_from(magnitude)
            .map_err(|_| parse_error(line, "address offset out of range"))?;
        Ok(if negative { -magnitude } else { magnitude })
    }

    fn register_declaration(&mut self, body: &mut Body, line: usize) -> Result<(), EmulatorError> {
        let (type_word, type_line) = self.word("a register type")?;
        let ty = type_word
            .strip_prefix('.')
            .and_then(Ty::from_suffix)
            .ok_or_else(|| {
                parse_error(
                    type_line,
                    format!("unsupported register type `{type_word}`"),
                )
            })?;
        loop {
            let (name, name_line) = self.word("a register name")?;
            if !name.starts_with('%') {
                return Err(parse_error(
                    name_line,
                    format!("register name `{name}` must start with `%`"),
                ));
            }
            if self.eat_punct('<') {
                let count = self.number("a register count")?;
                self.expect_punct('>')?;
                for index in 0..count {
                    body.declare(format!("{name}{index}"), ty, line)?;
                }
            } else {
                body.declare(name, ty, line)?;
            }
            if self.eat_punct(';') {
                return Ok(());
            }
            self.expect_punct(',')?;
        }
    }

    fn shared_declaration(&mut self, body: &mut Body, line: usize) -> Result<(), EmulatorError> {
        let (mut word, mut word_line) = self.word("`.align` or a type")?;
        let mut align = None;
        if word == ".align" {
            let value = self.number("an alignment")?;
            if !value.is_power_of_two() {
                return Err(parse_error(
                    word_line,
                    format!("alignment {value} is not a power of two"),
                ));
            }
            align = Some(value);
            (word, word_line) = self.word("a shared element type")?;
        }
        let element_size = match word.as_str() {
            ".b8" | ".u8" | ".s8" => 1,
            ".b32" | ".u32" | ".s32" | ".f32" => 4,
            ".b64" | ".u64" | ".s64" | ".f64" => 8,
            other => {
                return Err(parse_error(
                    word_line,
                    format!("unsupported shared element type `{other}`"),
                ));
            }
        };
        let (name, name_line) = self.word("a shared variable name")?;
        self.expect_punct('[')?;
        let count = self.number("an element count")?;
        self.expect_punct(']')?;
        self.expect_punct(';')?;
        if body.shared.iter().any(|variable| variable.name == name) {
            return Err(parse_error(
                name_line,
                format!("shared variable `{name}` declared twice"),
            ));
        }
        let align = align.unwrap_or(element_size).max(element_size);
        let offset = body.shared_bytes.div_ceil(align) * align;
        let size = count * element_size;
        body.shared_bytes = offset + size;
        if body.shared_bytes > 228 * 1024 {
            return Err(parse_error(line, "static shared memory exceeds 228 KiB"));
        }
        body.shared.push(SharedVariable { name, offset, size });
        Ok(())
    }
}

/// Everything collected from an entry body before decoding.
#[derive(Default)]
struct Body {
    registers: Vec<(String, Ty)>,
    register_index: HashMap<String, Reg>,
    labels: HashMap<String, u32>,
    shared: Vec<SharedVariable>,
    shared_bytes: u64,
    instructions: Vec<RawInstruction>,
}

impl Body {
    fn declare(&mut self, name: String, ty: Ty, line: usize) -> Result<(), EmulatorError> {
        if self.register_index.contains_key(&name) {
            return Err(parse_error(
                line,
                format!("register `{name}` declared twice"),
            ));
        }
        self.register_index
            .insert(name.clone(), self.registers.len() as Reg);
        self.registers.push((name, ty));
        Ok(())
    }
}
