//! A parsed filter: the expression tree, what it is tested against, and its one meaning.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use super::value::{format_date, parse_date, MetadataValue};

/// What a filter is tested against: one chunk, with its document's fields.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    /// The document's id.
    pub doc_id: &'a str,
    /// The document's title.
    pub title: &'a str,
    /// The document's source URI.
    pub source_uri: &'a str,
    /// The document's `published_at`, as the application wrote it.
    pub published_at: Option<&'a str>,
    /// The document's `updated_at`, as the application wrote it.
    pub updated_at: Option<&'a str>,
    /// The document's metadata.
    pub metadata: &'a BTreeMap<String, MetadataValue>,
    /// The chunk's heading path.
    pub section_path: &'a [String],
}

/// The separator of a section path's headings when the path is tested as one string.
pub const SECTION_SEPARATOR: &str = " > ";

/// A field a test reads ([`super::Filter::expr`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Field {
    /// The document's id.
    DocId,
    /// The document's title (empty: missing).
    Title,
    /// The document's source URI (empty: missing).
    SourceUri,
    /// The document's `published_at`, as text.
    PublishedAt,
    /// The document's `updated_at`, as text.
    UpdatedAt,
    /// The chunk's headings (empty: missing).
    SectionPath,
    /// A metadata key.
    Metadata(String),
}

impl Field {
    /// The built-in field `name` names, else the metadata key `name`.
    pub(crate) fn named(name: &str) -> Field {
        match name {
            "doc_id" => Field::DocId,
            "title" => Field::Title,
            "source_uri" => Field::SourceUri,
            "published_at" => Field::PublishedAt,
            "updated_at" => Field::UpdatedAt,
            "section_path" => Field::SectionPath,
            other => Field::Metadata(other.strip_prefix("metadata.").unwrap_or(other).into()),
        }
    }
}

/// A constant in a filter.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Literal {
    /// A quoted string (never taken for a date: see the module documentation).
    String(String),
    /// A finite number.
    Number(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A date or date-time literal, as Unix milliseconds, UTC.
    Date(i64),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cmp {
    /// `=`.
    Eq,
    /// `!=`: `not =`, so it holds where the field is missing.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

/// What a test asks of its field.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// A comparison with a literal.
    Cmp(Cmp, Literal),
    /// Equal to one of the literals.
    In(Vec<Literal>),
    /// A list element or heading equal to the literal, or a string holding its text.
    Contains(Literal),
    /// A string starting with this text.
    Prefix(String),
    /// The field has a value.
    Exists,
}

/// A filter expression, as [`super::Filter::expr`] shows it: for translating a filter into
/// another engine's language; what each test means is in the module documentation of
/// [`crate::filter`]. `And` and `Or` hold their operands in a list, so a long chain of them
/// never nests deeply (the parser bounds nesting by parentheses and `not`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Expr {
    /// Every operand holds.
    And(Vec<Expr>),
    /// Some operand holds.
    Or(Vec<Expr>),
    /// The operand does not hold.
    Not(Box<Expr>),
    /// One test of one field.
    Test(Field, Op),
}

/// A field's value in one chunk.
enum Value<'a> {
    Str(&'a str),
    Number(f64),
    Bool(bool),
    Date(i64),
    List(&'a [String]),
    Path(&'a [String]),
}

impl Expr {
    pub(crate) fn matches(&self, a: &Attributes<'_>) -> bool {
        match self {
            Expr::And(all) => all.iter().all(|e| e.matches(a)),
            Expr::Or(any) => any.iter().any(|e| e.matches(a)),
            Expr::Not(e) => !e.matches(a),
            Expr::Test(field, op) => test(value(field, a), op),
        }
    }
}

fn value<'a>(field: &Field, a: &Attributes<'a>) -> Option<Value<'a>> {
    let text = |s: &'a str| (!s.is_empty()).then_some(Value::Str(s));
    match field {
        Field::DocId => Some(Value::Str(a.doc_id)),
        Field::Title => text(a.title),
        Field::SourceUri => text(a.source_uri),
        Field::PublishedAt => a.published_at.map(Value::Str),
        Field::UpdatedAt => a.updated_at.map(Value::Str),
        Field::SectionPath => (!a.section_path.is_empty()).then_some(Value::Path(a.section_path)),
        Field::Metadata(key) => Some(match a.metadata.get(key)? {
            MetadataValue::String(s) => Value::Str(s),
            MetadataValue::Number(x) => Value::Number(*x),
            MetadataValue::Bool(b) => Value::Bool(*b),
            MetadataValue::Date(ms) => Value::Date(*ms),
            MetadataValue::List(items) => Value::List(items),
        }),
    }
}

fn test(value: Option<Value<'_>>, op: &Op) -> bool {
    let Some(value) = value else {
        // `!=` is `not =`: a chunk without the field is not equal to anything.
        return matches!(op, Op::Cmp(Cmp::Ne, _));
    };
    match op {
        Op::Exists => true,
        Op::Cmp(Cmp::Ne, literal) => !any(&value, |v| compare(v, literal) == Some(Ordering::Equal)),
        Op::Cmp(cmp, literal) => any(&value, |v| {
            compare(v, literal).is_some_and(|o| match cmp {
                Cmp::Eq => o == Ordering::Equal,
                Cmp::Lt => o == Ordering::Less,
                Cmp::Le => o != Ordering::Greater,
                Cmp::Gt => o == Ordering::Greater,
                Cmp::Ge => o != Ordering::Less,
                Cmp::Ne => o != Ordering::Equal,
            })
        }),
        Op::In(literals) => any(&value, |v| {
            literals
                .iter()
                .any(|l| compare(v, l) == Some(Ordering::Equal))
        }),
        Op::Prefix(prefix) => any(&value, |v| match v {
            Scalar::Str(s) => s.starts_with(prefix.as_str()),
            _ => false,
        }),
        Op::Contains(literal) => match &value {
            // A list or a path contains an element equal to the literal; a string, the
            // literal's text.
            Value::List(items) | Value::Path(items) => items
                .iter()
                .any(|s| compare(Scalar::Str(s), literal) == Some(Ordering::Equal)),
            Value::Str(s) => matches!(literal, Literal::String(l) if s.contains(l.as_str())),
            _ => false,
        },
    }
}

/// One comparable value: a list is tested element by element, a path as its joined text.
#[derive(Clone, Copy)]
enum Scalar<'a> {
    Str(&'a str),
    Number(f64),
    Bool(bool),
    Date(i64),
}

/// Whether `holds` for the value, or for any element of a list.
fn any(value: &Value<'_>, holds: impl Fn(Scalar<'_>) -> bool) -> bool {
    match value {
        Value::Str(s) => holds(Scalar::Str(s)),
        Value::Number(x) => holds(Scalar::Number(*x)),
        Value::Bool(b) => holds(Scalar::Bool(*b)),
        Value::Date(ms) => holds(Scalar::Date(*ms)),
        Value::List(items) => items.iter().any(|s| holds(Scalar::Str(s))),
        Value::Path(headings) => holds(Scalar::Str(&headings.join(SECTION_SEPARATOR))),
    }
}

/// How a value compares with a literal; `None` when their types do not compare. A date
/// compares with a string that is exactly a date (either side), never with other text.
fn compare(value: Scalar<'_>, literal: &Literal) -> Option<Ordering> {
    match (value, literal) {
        (Scalar::Str(s), Literal::String(l)) => Some(s.cmp(l.as_str())),
        (Scalar::Str(s), Literal::Date(d)) => Some(parse_date(s)?.cmp(d)),
        (Scalar::Date(ms), Literal::Date(d)) => Some(ms.cmp(d)),
        (Scalar::Date(ms), Literal::String(l)) => Some(ms.cmp(&parse_date(l)?)),
        (Scalar::Number(x), Literal::Number(y)) => x.partial_cmp(y),
        (Scalar::Bool(a), Literal::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => write!(f, "{s:?}"),
            Literal::Number(x) => write!(f, "{x:?}"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Date(ms) => f.write_str(&format_date(*ms)),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::DocId => f.write_str("doc_id"),
            Field::Title => f.write_str("title"),
            Field::SourceUri => f.write_str("source_uri"),
            Field::PublishedAt => f.write_str("published_at"),
            Field::UpdatedAt => f.write_str("updated_at"),
            Field::SectionPath => f.write_str("section_path"),
            Field::Metadata(key) => write!(f, "metadata.{key:?}"),
        }
    }
}

/// The canonical text: parentheses only around an `and`/`or` inside another operator,
/// strings quoted, keys as `metadata."key"`. It parses back to the same expression, never
/// nested deeper than the text it was parsed from, and equal filters print equal text (the
/// store caches filter results under it).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operand = |f: &mut fmt::Formatter<'_>, e: &Expr| match e {
            Expr::And(_) | Expr::Or(_) => write!(f, "({e})"),
            _ => write!(f, "{e}"),
        };
        let list = |f: &mut fmt::Formatter<'_>, all: &[Expr], sep: &str| {
            for (i, e) in all.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                operand(f, e)?;
            }
            Ok(())
        };
        match self {
            Expr::And(all) => list(f, all, " and "),
            Expr::Or(any) => list(f, any, " or "),
            Expr::Not(e) => {
                f.write_str("not ")?;
                operand(f, e)
            }
            Expr::Test(field, op) => match op {
                Op::Cmp(cmp, literal) => {
                    let op = match cmp {
                        Cmp::Eq => "=",
                        Cmp::Ne => "!=",
                        Cmp::Lt => "<",
                        Cmp::Le => "<=",
                        Cmp::Gt => ">",
                        Cmp::Ge => ">=",
                    };
                    write!(f, "{field} {op} {literal}")
                }
                Op::In(literals) => {
                    write!(f, "{field} in [")?;
                    for (i, l) in literals.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{l}")?;
                    }
                    f.write_str("]")
                }
                Op::Contains(literal) => write!(f, "{field} contains {literal}"),
                Op::Prefix(prefix) => write!(f, "{field} ^= {prefix:?}"),
                Op::Exists => write!(f, "{field} exists"),
            },
        }
    }
}
