//! Metadata filters: typed metadata values and the filter language searches narrow by
//! (pure: no storage; the store evaluates a [`Filter`] over its chunks).
//!
//! # The language
//!
//! ```text
//! expr    := and ("or" and)*                      `||` for "or"
//! and     := unary ("and" unary)*                 `&&` for "and"
//! unary   := "not" unary | "(" expr ")" | test    `!` for "not"
//! test    := field ("=" | "!=" | "<" | "<=" | ">" | ">=") value
//!          | field "^=" string                    prefix
//!          | field "in" "[" value ("," value)* "]"
//!          | field "contains" value               list element, heading, or substring
//!          | field "exists"
//! field   := doc_id | title | source_uri | published_at | updated_at | section_path
//!          | KEY | metadata.KEY | metadata."any key" | "any key"
//! value   := "string" | 'string' | number | YYYY-MM-DD | RFC 3339 | true | false
//! ```
//!
//! Keywords are case-insensitive; `==` is `=`. A word that is not a built-in field is a
//! metadata key (`metadata.doc_id` names a metadata key called `doc_id`). Strings take the
//! escapes `\"`, `\'`, `\\`, `\n`, `\r`, `\t`, `\0` and `\u{HEX}`.
//!
//! # What a test means
//!
//! A test reads one field of a chunk: the document's fields and [`MetadataValue`]s, which
//! every chunk of the document inherits, and the chunk's own `section_path`.
//!
//! - Values compare only with literals of their type: strings bytewise, numbers
//!   numerically, booleans; a date (a metadata date, or `published_at`/`updated_at`, which
//!   are text, when they hold exactly a date) with a date literal, or with a string literal
//!   that is exactly a date. Any other pairing is false: `version > 2` never matches the
//!   string `"3"`.
//! - A list holds a test when any element does (`tags = "faq"` and `tags contains "faq"`
//!   both ask for an element `faq`).
//! - `section_path` is its headings joined by `" > "` for `=`, `<`…, `^=` and `in`
//!   (`section_path ^= "Refunds"` is every section under a first heading starting with
//!   `Refunds`); `section_path contains "Refunds"` asks for a heading `Refunds` at any depth.
//! - `contains` on a string asks for a substring; it applies to metadata and `section_path`.
//! - A missing field (or an empty title, source URI or section path) fails every test
//!   except `!=`: `a != v` is `not (a = v)`, so it holds where `a` is missing.
//! - `exists` holds when the field has a value.

mod expr;
mod parse;
mod value;

use std::fmt;
use std::str::FromStr;

pub use expr::{Attributes, Cmp, Expr, Field, Literal, Op, SECTION_SEPARATOR};
pub use parse::{FilterError, FilterErrorKind, MAX_DEPTH};
pub use value::{format_date, parse_date, MetadataValue};

/// A parsed filter expression (see the module documentation for the language).
///
/// ```
/// use folio::filter::Filter;
///
/// let filter: Filter = r#"section_path ^= "Refunds" and updated_at >= 2024-01-01"#.parse()?;
/// let both = filter.and("tags contains \"faq\"".parse()?);
/// assert!(both.to_string().contains("tags"));
/// assert_eq!("a = ".parse::<Filter>().unwrap_err().position, 4);
/// # Ok::<(), folio::filter::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    expr: expr::Expr,
}

impl Filter {
    /// Parses an expression.
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        Ok(Filter {
            expr: parse::parse(text)?,
        })
    }

    /// Chunks that match both `self` and `other`.
    pub fn and(self, other: Filter) -> Filter {
        let mut all = Vec::new();
        for expr in [self.expr, other.expr] {
            match expr {
                expr::Expr::And(parts) => all.extend(parts),
                other => all.push(other),
            }
        }
        Filter {
            expr: expr::Expr::And(all),
        }
    }

    /// The parsed expression, read-only (a `Filter` is only made by parsing): for
    /// translating it into another engine's filter language.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Whether a chunk with these attributes matches.
    pub fn matches(&self, attributes: &Attributes<'_>) -> bool {
        self.expr.matches(attributes)
    }
}

impl FromStr for Filter {
    type Err = FilterError;

    fn from_str(text: &str) -> Result<Filter, FilterError> {
        Filter::parse(text)
    }
}

/// The canonical text: it parses back to an equal filter, and equal filters print the same.
impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)
    }
}

#[cfg(test)]
mod tests;
