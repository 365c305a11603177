//! Kernel text (`stencil::parse`): lexing with errors that say what is wrong, the limits that
//! keep untrusted text from exhausting the stack, and the thread each compilation runs on.
//!
//! proc-macro2 (with `span-locations`, which gives errors their line and column) keeps every
//! text it lexes in a thread-local source map that is never freed: about 26 KB per call of a
//! 170-byte kernel, for the life of the thread. `on_own_thread` runs each compilation on a
//! thread of its own, whose map goes with it (and whose stack is sized for the deepest text
//! `lex` accepts), so the caller's thread, and any spans it holds, are left alone.
//!
//! Parsing (`syn`) and the later stages recurse once per level of nesting, which text can make
//! as deep as it is long (`- - - - x`, `((((x))))`), so `lex` refuses text of more than
//! [`MAX_TOKENS`] tokens.

use std::fmt;

use proc_macro2::{Span, TokenStream, TokenTree};

/// One mistake in kernel source text: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    /// Line of the offending token, from 1.
    pub line: usize,
    /// Column of the offending token's first character, from 1.
    pub column: usize,
    /// What is wrong, as the macro says it.
    pub message: String,
}

impl SourceError {
    pub(crate) fn at(span: Span, message: String) -> SourceError {
        let start = span.start();
        SourceError {
            line: start.line,
            column: start.column + 1,
            message,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// The most tokens kernel text may hold (a bracketed group counts as its contents plus one).
/// The 27-point stencil with a coefficient per point is about 500.
pub const MAX_TOKENS: usize = 20_000;

/// Stack of the thread that compiles one text: room for the deepest nesting [`MAX_TOKENS`]
/// allows, in an unoptimised build. Reserved address space; only the pages used are touched.
const STACK_BYTES: usize = 256 << 20;

/// Runs `compile` on a thread of its own (see the module docs), or on the calling thread if
/// the operating system refuses to start one. A panic in `compile` resumes on the caller.
pub(crate) fn on_own_thread<R: Send>(compile: impl Fn() -> R + Sync) -> R {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("stencil-parse".to_string())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, &compile);
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => compile(),
        }
    })
}

/// The tokens of `source`, or what is wrong with it: an unclosed or mismatched delimiter, an
/// unterminated literal or comment, a character that starts no token, or more than
/// [`MAX_TOKENS`] tokens.
pub(crate) fn lex(source: &str) -> Result<TokenStream, SourceError> {
    let tokens: TokenStream = match source.parse() {
        Ok(tokens) => tokens,
        Err(error) => {
            let error: proc_macro2::LexError = error;
            return Err(explain(source).unwrap_or_else(|| {
                let start = error.span().start();
                let found = source
                    .lines()
                    .nth(start.line.saturating_sub(1))
                    .and_then(|line| line.chars().nth(start.column));
                let message = match found {
                    Some(c) if !c.is_whitespace() => {
                        format!(
                            "`{}` starts no token of the kernel language",
                            c.escape_debug()
                        )
                    }
                    _ => format!("cannot read the text here ({error})"),
                };
                SourceError::at(error.span(), message)
            }));
        }
    };
    let n_tokens = count_tokens(&tokens);
    if n_tokens > MAX_TOKENS {
        return Err(SourceError {
            line: 1,
            column: 1,
            message: format!(
                "the text holds {n_tokens} tokens; kernel text is limited to {MAX_TOKENS}"
            ),
        });
    }
    Ok(tokens)
}

/// Number of tokens in `tokens`, at every depth (without recursion).
fn count_tokens(tokens: &TokenStream) -> usize {
    let mut count = 0;
    let mut pending = vec![tokens.clone()];
    while let Some(stream) = pending.pop() {
        for tree in stream {
            count += 1;
            if let TokenTree::Group(group) = tree {
                pending.push(group.stream());
            }
        }
    }
    count
}

/// A line and column (both from 1) in the text.
#[derive(Clone, Copy)]
struct Position {
    line: usize,
    column: usize,
}

impl Position {
    fn error(self, message: String) -> SourceError {
        SourceError {
            line: self.line,
            column: self.column,
            message,
        }
    }
}

/// The text's characters with their positions.
struct Cursor<'s> {
    chars: std::iter::Peekable<std::str::Chars<'s>>,
    at: Position,
}

impl Cursor<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.at.line += 1;
            self.at.column = 1;
        } else {
            self.at.column += 1;
        }
        Some(c)
    }

    /// Whether the text continues with `text`, without consuming it.
    fn continues_with(&self, text: &str) -> bool {
        let mut ahead = self.chars.clone();
        text.chars().all(|c| ahead.next() == Some(c))
    }
}

/// What made proc-macro2 refuse `source`, said plainly: the first delimiter closed by the
/// wrong kind or never closed, or a literal or comment never terminated. `None` when none of
/// these is found (the caller reports the lexer's own position).
fn explain(source: &str) -> Option<SourceError> {
    scan(source).err()
}

/// Walks `source` as the lexer does, skipping comments and literals and pairing delimiters;
/// the first problem found.
fn scan(source: &str) -> Result<(), SourceError> {
    let mut cursor = Cursor {
        chars: source.chars().peekable(),
        at: Position { line: 1, column: 1 },
    };
    let mut open: Vec<(char, Position)> = Vec::new();
    let mut after_ident = false;
    while let Some(c) = cursor.peek() {
        let at = cursor.at;
        if cursor.continues_with("//") {
            while cursor.peek().is_some_and(|c| c != '\n') {
                cursor.next();
            }
        } else if cursor.continues_with("/*") {
            skip_block_comment(&mut cursor, at)?;
        } else if c == '"' {
            cursor.next();
            skip_string(&mut cursor, at)?;
        } else if c == '\'' {
            cursor.next();
            skip_quote(&mut cursor, at)?;
        } else if is_ident_start(c) && !after_ident {
            let mut word = String::new();
            while let Some(c) = cursor.peek().filter(|&c| is_ident_continue(c)) {
                word.push(c);
                cursor.next();
            }
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            match cursor.peek() {
                Some('"' | '#') if raw => skip_raw_string(&mut cursor, at)?,
                Some('"') if matches!(word.as_str(), "b" | "c") => {
                    cursor.next();
                    skip_string(&mut cursor, at)?;
                }
                Some('\'') if word == "b" => {
                    cursor.next();
                    skip_quote(&mut cursor, at)?;
                }
                _ => {}
            }
            continue;
        } else {
            cursor.next();
            match c {
                '(' | '[' | '{' => open.push((c, at)),
                ')' | ']' | '}' => match open.pop() {
                    None => {
                        return Err(at.error(format!("unexpected `{c}`: nothing is open here")));
                    }
                    Some((opener, opened)) if closer(opener) != c => {
                        return Err(at.error(format!(
                            "mismatched `{c}`: the `{opener}` opened at line {}, column {} closes with `{}`",
                            opened.line,
                            opened.column,
                            closer(opener)
                        )));
                    }
                    Some(_) => {}
                },
                _ => {}
            }
        }
        after_ident = is_ident_continue(c);
    }
    match open.pop() {
        Some((opener, opened)) => Err(cursor.at.error(format!(
            "unclosed `{opener}` opened at line {}, column {}: the text ends before its `{}`",
            opened.line,
            opened.column,
            closer(opener)
        ))),
        None => Ok(()),
    }
}

fn closer(opener: char) -> char {
    match opener {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn unterminated(at: Position, what: &str) -> SourceError {
    at.error(format!("unterminated {what}: the text ends before it does"))
}

/// Skips a block comment (comments nest) starting at the cursor.
fn skip_block_comment(cursor: &mut Cursor<'_>, at: Position) -> Result<(), SourceError> {
    let mut depth = 0usize;
    loop {
        if cursor.continues_with("/*") {
            cursor.next();
            cursor.next();
            depth += 1;
        } else if cursor.continues_with("*/") {
            cursor.next();
            cursor.next();
            depth -= 1;
            if depth == 0 {
                return Ok(());
            }
        } else if cursor.next().is_none() {
            return Err(unterminated(at, "block comment `/*`"));
        }
    }
}

/// Skips the rest of a string literal after its opening `"` (escapes included).
fn skip_string(cursor: &mut Cursor<'_>, at: Position) -> Result<(), SourceError> {
    loop {
        match cursor.next() {
            None => return Err(unterminated(at, "string literal")),
            Some('"') => return Ok(()),
            Some('\\') => {
                cursor.next();
            }
            Some(_) => {}
        }
    }
}

/// Skips a raw string literal after its prefix (`r`, `br`, `cr`): `#`s, `"`, the text, `"`
/// and as many `#`s.
fn skip_raw_string(cursor: &mut Cursor<'_>, at: Position) -> Result<(), SourceError> {
    let mut hashes = 0usize;
    while cursor.peek() == Some('#') {
        cursor.next();
        hashes += 1;
    }
    if cursor.peek() != Some('"') {
        // `r#ident`, a raw identifier: nothing more to skip.
        return Ok(());
    }
    cursor.next();
    let end: String = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    loop {
        if cursor.continues_with(&end) {
            for _ in end.chars() {
                cursor.next();
            }
            return Ok(());
        }
        if cursor.next().is_none() {
            return Err(unterminated(at, "raw string literal"));
        }
    }
}

/// Skips what follows a `'`: a character literal (`'a'`, `'\n'`) or a lifetime (`'a`).
fn skip_quote(cursor: &mut Cursor<'_>, at: Position) -> Result<(), SourceError> {
    match cursor.next() {
        None => Err(unterminated(at, "character literal")),
        Some('\\') => {
            cursor.next();
            while let Some(c) = cursor.next() {
                if c == '\'' {
                    return Ok(());
                }
                if c == '\n' {
                    break;
                }
            }
            Err(unterminated(at, "character literal"))
        }
        Some(_) => {
            if cursor.peek() == Some('\'') {
                cursor.next();
            }
            Ok(())
        }
    }
}
