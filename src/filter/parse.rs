//! The filter language's parser: a tokenizer and a recursive descent over a tiny grammar
//! (see [`crate::filter`]), every error with its byte position.

use super::expr::{Cmp, Expr, Field, Literal, Op};
use super::value::parse_date;

/// Why a filter expression does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at position {}", .position + 1)]
#[non_exhaustive]
pub struct FilterError {
    /// Byte offset in the expression where the problem starts (0 = the first byte; the
    /// message counts from 1).
    pub position: usize,
    /// What is wrong there.
    pub kind: FilterErrorKind,
}

/// What is wrong with a filter expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterErrorKind {
    /// Nothing to filter by.
    #[error("empty filter expression")]
    Empty,
    /// A character no token starts with.
    #[error("unexpected character `{0}`")]
    UnexpectedChar(char),
    /// A string without its closing quote.
    #[error("unterminated string")]
    UnterminatedString,
    /// A backslash escape the language does not have.
    #[error("unknown escape `\\{0}` in a string")]
    BadEscape(String),
    /// Text starting with a digit that is neither a finite number nor a date.
    #[error("`{0}` is not a number or a date (YYYY-MM-DD or RFC 3339)")]
    BadNumber(String),
    /// Something else was expected here.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the grammar allows here.
        expected: &'static str,
        /// What the expression has instead.
        found: String,
    },
    /// An operator that does not apply to the field.
    #[error("`{op}` does not apply to {field}")]
    Unsupported {
        /// The operator.
        op: &'static str,
        /// The field.
        field: String,
    },
    /// Parentheses and `not` nested deeper than [`MAX_DEPTH`].
    #[error("nested deeper than {} levels", MAX_DEPTH)]
    TooDeep,
}

/// The deepest nesting of parentheses and `not` a filter may have.
pub const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Cmp(Cmp),
    Prefix,
    AndSym,
    OrSym,
    Bang,
    Word(String),
    Str(String),
    Literal(Literal),
    End,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::LParen => "`(`".into(),
            Token::RParen => "`)`".into(),
            Token::LBracket => "`[`".into(),
            Token::RBracket => "`]`".into(),
            Token::Comma => "`,`".into(),
            Token::Cmp(_) | Token::Prefix => "an operator".into(),
            Token::AndSym => "`&&`".into(),
            Token::OrSym => "`||`".into(),
            Token::Bang => "`!`".into(),
            Token::Word(w) => format!("`{w}`"),
            Token::Str(s) => format!("the string {s:?}"),
            Token::Literal(l) => format!("`{l}`"),
            Token::End => "the end".into(),
        }
    }
}

fn err(position: usize, kind: FilterErrorKind) -> FilterError {
    FilterError { position, kind }
}

/// The tokens of `text`, each with its byte position, ending with [`Token::End`].
fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, FilterError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(at, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let next = text[at + c.len_utf8()..].chars().next();
        let two = |t: Token| (t, 2);
        let (token, len) = match (c, next) {
            ('(', _) => (Token::LParen, 1),
            (')', _) => (Token::RParen, 1),
            ('[', _) => (Token::LBracket, 1),
            (']', _) => (Token::RBracket, 1),
            (',', _) => (Token::Comma, 1),
            ('=', Some('=')) => two(Token::Cmp(Cmp::Eq)),
            ('=', _) => (Token::Cmp(Cmp::Eq), 1),
            ('!', Some('=')) => two(Token::Cmp(Cmp::Ne)),
            ('!', _) => (Token::Bang, 1),
            ('<', Some('=')) => two(Token::Cmp(Cmp::Le)),
            ('<', _) => (Token::Cmp(Cmp::Lt), 1),
            ('>', Some('=')) => two(Token::Cmp(Cmp::Ge)),
            ('>', _) => (Token::Cmp(Cmp::Gt), 1),
            ('^', Some('=')) => two(Token::Prefix),
            ('&', Some('&')) => two(Token::AndSym),
            ('|', Some('|')) => two(Token::OrSym),
            ('"' | '\'', _) => {
                let (s, len) = string(text, at, c)?;
                (Token::Str(s), len)
            }
            (c, next)
                if c.is_ascii_digit()
                    || (matches!(c, '-' | '+') && next.is_some_and(|n| n.is_ascii_digit())) =>
            {
                let len = text[at + 1..]
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '+' | '-'))
                    })
                    .map_or(text.len() - at, |n| n + 1);
                (
                    Token::Literal(number_or_date(&text[at..at + len], at)?),
                    len,
                )
            }
            (c, _) if c.is_alphabetic() || c == '_' => {
                let len = text[at..]
                    .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                    .unwrap_or(text.len() - at);
                (Token::Word(text[at..at + len].to_string()), len)
            }
            (c, _) => return Err(err(at, FilterErrorKind::UnexpectedChar(c))),
        };
        out.push((at, token));
        while chars.peek().is_some_and(|&(i, _)| i < at + len) {
            chars.next();
        }
    }
    out.push((text.len(), Token::End));
    Ok(out)
}

/// The string starting at byte `start` with quote `quote`: its value and byte length.
/// Escapes: `\"`, `\'`, `\\`, `\n`, `\r`, `\t`, `\0`, `\u{HEX}`.
fn string(text: &str, start: usize, quote: char) -> Result<(String, usize), FilterError> {
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        let at = start + 1 + i;
        match c {
            c if c == quote => return Ok((out, at + 1 - start)),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    '"' | '\'' | '\\' => out.push(e),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    '0' => out.push('\0'),
                    'u' => {
                        let rest = &text[at + 2..];
                        let code = rest
                            .strip_prefix('{')
                            .and_then(|r| r.split_once('}'))
                            .and_then(|(hex, _)| u32::from_str_radix(hex, 16).ok())
                            .and_then(char::from_u32);
                        let Some(code) = code else {
                            return Err(err(at, FilterErrorKind::BadEscape("u".into())));
                        };
                        out.push(code);
                        // Skip `{HEX}`.
                        for (_, c) in chars.by_ref() {
                            if c == '}' {
                                break;
                            }
                        }
                    }
                    other => return Err(err(at, FilterErrorKind::BadEscape(other.into()))),
                }
            }
            c => out.push(c),
        }
    }
    Err(err(start, FilterErrorKind::UnterminatedString))
}

fn number_or_date(word: &str, at: usize) -> Result<Literal, FilterError> {
    if let Some(ms) = parse_date(word) {
        return Ok(Literal::Date(ms));
    }
    match word.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Literal::Number(x)),
        _ => Err(err(at, FilterErrorKind::BadNumber(word.into()))),
    }
}

/// Parses a whole expression.
pub(crate) fn parse(text: &str) -> Result<Expr, FilterError> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    if matches!(parser.peek(), Token::End) {
        return Err(err(0, FilterErrorKind::Empty));
    }
    let expr = parser.or()?;
    match parser.peek() {
        Token::End => Ok(expr),
        _ => Err(parser.expected("`and`, `or` or the end")),
    }
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.at).map_or(&Token::End, |(_, t)| t)
    }

    fn position(&self) -> usize {
        self.tokens
            .get(self.at)
            .or(self.tokens.last())
            .map_or(0, |(p, _)| *p)
    }

    fn bump(&mut self) -> Token {
        let token = self.peek().clone();
        self.at += 1;
        token
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Token::Word(w) if w.eq_ignore_ascii_case(word))
    }

    fn expected(&self, expected: &'static str) -> FilterError {
        err(
            self.position(),
            FilterErrorKind::Expected {
                expected,
                found: self.peek().describe(),
            },
        )
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut any = vec![self.and()?];
        while self.keyword("or") || matches!(self.peek(), Token::OrSym) {
            self.bump();
            any.push(self.and()?);
        }
        Ok(if any.len() == 1 {
            any.remove(0)
        } else {
            Expr::Or(any)
        })
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut all = vec![self.unary()?];
        while self.keyword("and") || matches!(self.peek(), Token::AndSym) {
            self.bump();
            all.push(self.unary()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Expr::And(all)
        })
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Expr, FilterError>,
    ) -> Result<Expr, FilterError> {
        if self.depth >= MAX_DEPTH {
            return Err(err(self.position(), FilterErrorKind::TooDeep));
        }
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        out
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        if self.keyword("not") || matches!(self.peek(), Token::Bang) {
            self.bump();
            return self.nested(|p| Ok(Expr::Not(Box::new(p.unary()?))));
        }
        if matches!(self.peek(), Token::LParen) {
            self.bump();
            let inner = self.nested(Self::or)?;
            if !matches!(self.bump(), Token::RParen) {
                self.at -= 1;
                return Err(self.expected("`)`"));
            }
            return Ok(inner);
        }
        self.test()
    }

    fn test(&mut self) -> Result<Expr, FilterError> {
        let field = match self.peek() {
            Token::Word(w) if !is_keyword(w) => Field::named(w),
            // A quoted name is a metadata key, whatever it looks like.
            Token::Str(s) => Field::Metadata(s.clone()),
            _ => return Err(self.expected("a field name")),
        };
        self.bump();
        // `metadata."key"` names a key that is not a plain word (`metadata.` is one word).
        let field = if field == Field::Metadata(String::new()) {
            match self.bump() {
                Token::Str(key) => Field::Metadata(key),
                _ => {
                    self.at -= 1;
                    return Err(self.expected("a quoted metadata key"));
                }
            }
        } else {
            field
        };
        let at = self.position();
        let op = match self.bump() {
            Token::Cmp(cmp) => Op::Cmp(cmp, self.literal()?),
            Token::Prefix => match self.bump() {
                Token::Str(s) => Op::Prefix(s),
                _ => {
                    self.at -= 1;
                    return Err(self.expected("a quoted prefix"));
                }
            },
            Token::Word(w) if w.eq_ignore_ascii_case("in") => Op::In(self.list()?),
            Token::Word(w) if w.eq_ignore_ascii_case("contains") => Op::Contains(self.literal()?),
            Token::Word(w) if w.eq_ignore_ascii_case("exists") => Op::Exists,
            _ => {
                self.at -= 1;
                return Err(self.expected("an operator (= != < <= > >= ^= in contains exists)"));
            }
        };
        if matches!(op, Op::Contains(_))
            && !matches!(field, Field::Metadata(_) | Field::SectionPath)
        {
            return Err(err(
                at,
                FilterErrorKind::Unsupported {
                    op: "contains",
                    field: field.to_string(),
                },
            ));
        }
        Ok(Expr::Test(field, op))
    }

    fn literal(&mut self) -> Result<Literal, FilterError> {
        match self.bump() {
            Token::Str(s) => Ok(Literal::String(s)),
            Token::Literal(l) => Ok(l),
            Token::Word(w) if w.eq_ignore_ascii_case("true") => Ok(Literal::Bool(true)),
            Token::Word(w) if w.eq_ignore_ascii_case("false") => Ok(Literal::Bool(false)),
            _ => {
                self.at -= 1;
                Err(self.expected("a value (a quoted string, a number, a date, true or false)"))
            }
        }
    }

    fn list(&mut self) -> Result<Vec<Literal>, FilterError> {
        if !matches!(self.bump(), Token::LBracket) {
            self.at -= 1;
            return Err(self.expected("`[`"));
        }
        let mut out = vec![self.literal()?];
        loop {
            match self.bump() {
                Token::Comma => out.push(self.literal()?),
                Token::RBracket => return Ok(out),
                _ => {
                    self.at -= 1;
                    return Err(self.expected("`,` or `]`"));
                }
            }
        }
    }
}

fn is_keyword(word: &str) -> bool {
    [
        "and", "or", "not", "in", "contains", "exists", "true", "false",
    ]
    .iter()
    .any(|k| word.eq_ignore_ascii_case(k))
}
