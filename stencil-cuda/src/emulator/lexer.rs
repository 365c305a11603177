//! Splits PTX text into tokens carrying their 1-based line numbers.
//!
//! A word is a run of `[A-Za-z0-9_$%.]` (so `ld.global.f64`, `%tid.x`, `0f3F800000`, `8.0` and
//! `$L__BB0_1` are single words); everything else that may appear in the subset is a one-character
//! punctuation token. `//` comments run to the end of the line. Any other character (including
//! the `/*` of a block comment) is a parse error naming its line.

use super::error::{EmulatorError, EmulatorErrorKind};

/// One token: a word or a punctuation character.
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum TokenKind {
    /// A run of identifier characters (see the module comment).
    Word(String),
    /// One of `{ } ( ) [ ] , ; : + - @ ! < >`.
    Punct(char),
}

/// A token and the 1-based line it starts on.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Token {
    pub(crate) kind: TokenKind,
    pub(crate) line: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// Tokenizes `text`, or reports the first character outside the subset's alphabet.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, EmulatorError> {
    let mut tokens = Vec::new();
    for (index, line_text) in text.lines().enumerate() {
        let line = index + 1;
        let code = match line_text.find("//") {
            Some(position) => &line_text[..position],
            None => line_text,
        };
        let mut chars = code.char_indices().peekable();
        while let Some(&(start, c)) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if is_word_char(c) {
                let mut end = start;
                while let Some(&(position, c)) = chars.peek() {
                    if !is_word_char(c) {
                        break;
                    }
                    end = position + c.len_utf8();
                    chars.next();
                }
                tokens.push(Token {
                    kind: TokenKind::Word(code[start..end].to_string()),
                    line,
                });
            } else if "{}()[],;:+-@!<>".contains(c) {
                tokens.push(Token {
                    kind: TokenKind::Punct(c),
                    line,
                });
                chars.next();
            } else {
                return Err(EmulatorError::at_line(
                    EmulatorErrorKind::Parse,
                    line,
                    format!("unexpected character `{c}` (outside the supported PTX subset)"),
                ));
            }
        }
    }
    Ok(tokens)
}

/// Parses a PTX integer literal: decimal, `0x` hex, `0` octal, optional `U` suffix.
pub(crate) fn parse_unsigned(text: &str) -> Option<u64> {
    let text = text.strip_suffix('U').unwrap_or(text);
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        tokenize(text)
            .unwrap()
            .into_iter()
            .map(|token| match token.kind {
                TokenKind::Word(word) => word,
                TokenKind::Punct(c) => c.to_string(),
            })
            .collect()
    }

    #[test]
    fn splits_words_punctuation_and_comments() {
        assert_eq!(
            words("ld.global.f64 %fd1, [%rd2+-8]; // load\n@!%p1 bra $L__BB0_1;"),
            [
                "ld.global.f64",
                "%fd1",
                ",",
                "[",
                "%rd2",
                "+",
                "-",
                "8",
                "]",
                ";",
                "@",
                "!",
                "%p1",
                "bra",
                "$L__BB0_1",
                ";"
            ]
        );
    }

    #[test]
    fn records_lines_and_rejects_foreign_characters() {
        let tokens = tokenize("a\n\nb").unwrap();
        assert_eq!(tokens[1].line, 3);
        let error = tokenize("ok\nadd /* c */").unwrap_err();
        assert_eq!(error.line(), Some(2));
        assert_eq!(error.kind(), EmulatorErrorKind::Parse);
    }
}
