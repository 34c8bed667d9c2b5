//! folio's metadata filters written as Milvus expressions over the published fields, so
//! Milvus fills top-k from the rows the filter admits.
//!
//! A test is pushed down only where the Milvus expression holds on exactly the rows folio's
//! holds on (see [`folio::filter`] for what a test means). The rest are checked by folio
//! alone: such a test becomes `true` where the expression must admit at least folio's rows
//! and `false` where it must admit at most them (under a `not`), so the expression Milvus
//! evaluates always admits every row folio's filter does, and folio's check, which every
//! answer passes, drops the extra ones (topping up). Those tests are reported
//! ([`Pushdown::local`]).

use folio::filter::{format_date, parse_date, Cmp, Expr, Field, Filter, Literal, Op};

use crate::expr::string_literal;

/// A filter as Milvus evaluates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushdown {
    /// The expression; `None` when it admits every row (nothing pushed).
    pub expr: Option<String>,
    /// Whether no row can match (Milvus need not be asked).
    pub nothing: bool,
    /// The tests folio checks alone, in folio's syntax: empty when the expression is exact.
    pub local: Vec<String>,
}

/// `filter` as a Milvus expression: exact where the module documentation says, wider
/// elsewhere (the parts listed in [`Pushdown::local`]).
pub fn pushdown(filter: &Filter) -> Pushdown {
    let mut local = Vec::new();
    let term = translate(filter.expr(), true, &mut local);
    Pushdown {
        nothing: term == Term::False,
        expr: match term {
            Term::Expr(text) => Some(text),
            Term::True | Term::False => None,
        },
        local,
    }
}

/// An expression with its constants folded (Milvus has no `true` literal to lean on).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    True,
    False,
    Expr(String),
}

fn and(terms: Vec<Term>) -> Term {
    combine(terms, Term::False, Term::True, " and ")
}

fn or(terms: Vec<Term>) -> Term {
    combine(terms, Term::True, Term::False, " or ")
}

/// `absorbing` decides the whole, `neutral` drops out.
fn combine(terms: Vec<Term>, absorbing: Term, neutral: Term, sep: &str) -> Term {
    let mut parts = Vec::new();
    for term in terms {
        if term == absorbing {
            return absorbing;
        }
        if let Term::Expr(text) = term {
            parts.push(text);
        }
    }
    match parts.len() {
        0 => neutral,
        1 => Term::Expr(parts.remove(0)),
        _ => {
            let wrapped: Vec<String> = parts.iter().map(|p| format!("({p})")).collect();
            Term::Expr(wrapped.join(sep))
        }
    }
}

fn not(term: Term) -> Term {
    match term {
        Term::True => Term::False,
        Term::False => Term::True,
        Term::Expr(text) => Term::Expr(format!("not ({text})")),
    }
}

/// `expr` where `wider`: admitting at least its rows; else admitting at most them.
fn translate(expr: &Expr, wider: bool, local: &mut Vec<String>) -> Term {
    match expr {
        Expr::And(all) => and(all.iter().map(|e| translate(e, wider, local)).collect()),
        Expr::Or(any) => or(any.iter().map(|e| translate(e, wider, local)).collect()),
        Expr::Not(inner) => not(translate(inner, !wider, local)),
        Expr::Test(field, op) => match exact(field, op) {
            Some(term) => term,
            None => {
                let text = expr.to_string();
                if !local.contains(&text) {
                    local.push(text);
                }
                if wider {
                    Term::True
                } else {
                    Term::False
                }
            }
        },
        // A kind of expression this crate does not know yet: folio checks it.
        _ => {
            local.push(expr.to_string());
            if wider {
                Term::True
            } else {
                Term::False
            }
        }
    }
}

/// The Milvus expression that holds exactly where the test does, if there is one.
fn exact(field: &Field, op: &Op) -> Option<Term> {
    if let Op::Cmp(Cmp::Ne, literal) = op {
        // `a != v` is `not (a = v)`, missing fields included.
        return exact(field, &Op::Cmp(Cmp::Eq, literal.clone())).map(not);
    }
    match field {
        Field::DocId => text_column("doc_id", false, op),
        Field::Title => text_column("title", true, op),
        Field::SourceUri => text_column("source_uri", true, op),
        Field::PublishedAt => text_column("published_at", true, op),
        Field::UpdatedAt => text_column("updated_at", true, op),
        Field::SectionPath => match op {
            // A heading equal to the text, at any depth.
            Op::Contains(Literal::String(heading)) => Some(Term::Expr(format!(
                "json_contains(section_path, {})",
                string_literal(heading)
            ))),
            _ => None,
        },
        Field::Metadata(key) => metadata(key, op),
        _ => None,
    }
}

fn cmp_symbol(cmp: Cmp) -> Option<&'static str> {
    Some(match cmp {
        Cmp::Eq => "==",
        Cmp::Ne => "!=",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
        _ => return None,
    })
}

/// A VARCHAR column: compared bytewise with string literals as folio compares text; never
/// equal to a number or a boolean. `optional`: stored empty when missing (folio's missing
/// field fails every test but `!=`). A date literal is left to folio, which reads the text
/// as a date.
fn text_column(column: &str, optional: bool, op: &Op) -> Option<Term> {
    let test = match op {
        Op::Exists => Term::True,
        Op::Cmp(cmp, Literal::String(text)) => Term::Expr(format!(
            "{column} {} {}",
            cmp_symbol(*cmp)?,
            string_literal(text)
        )),
        Op::Cmp(_, Literal::Number(_) | Literal::Bool(_)) => Term::False,
        Op::In(literals) => {
            let mut texts = Vec::new();
            for literal in literals {
                match literal {
                    Literal::String(text) => texts.push(text.as_str()),
                    Literal::Number(_) | Literal::Bool(_) => {}
                    _ => return None,
                }
            }
            if texts.is_empty() {
                Term::False
            } else {
                Term::Expr(format!(
                    "{column} in {}",
                    crate::expr::string_list(texts.iter().copied())
                ))
            }
        }
        Op::Prefix(prefix) => Term::Expr(format!("{column} like {}", like_prefix(prefix)?)),
        _ => return None,
    };
    if optional {
        Some(and(vec![Term::Expr(format!("{column} != \"\"")), test]))
    } else {
        Some(test)
    }
}

/// `"PREFIX%"` for `like`, unless the prefix holds a character `like` reads as a pattern.
fn like_prefix(prefix: &str) -> Option<String> {
    if prefix.contains(['%', '_', '\\']) {
        return None;
    }
    let mut pattern = string_literal(prefix);
    pattern.insert(pattern.len() - 1, '%');
    Some(pattern)
}

/// A key of the `metadata` JSON field. Values are stored as folio writes them as JSON: a
/// date as its canonical text (`folio::filter::format_date`), which no other string value
/// can be (a string that reads as a date is a date); a list as an array of strings.
fn metadata(key: &str, op: &Op) -> Option<Term> {
    let value = format!("metadata[{}]", string_literal(key));
    match op {
        Op::Exists => Some(Term::Expr(format!("exists {value}"))),
        Op::Cmp(Cmp::Eq, literal) => metadata_equal(&value, literal),
        Op::Cmp(cmp, Literal::Number(x)) => Some(Term::Expr(format!(
            "{value} {} {}",
            cmp_symbol(*cmp)?,
            number(*x)
        ))),
        Op::In(literals) => {
            let mut any = Vec::new();
            for literal in literals {
                any.push(metadata_equal(&value, literal)?);
            }
            Some(or(any))
        }
        // Orderings of text and dates (a date's text and a string compare differently
        // than folio compares them), `contains` and `^=` (a date's text would match), and
        // boolean orderings are folio's.
        _ => None,
    }
}

/// `key = literal`: a string value or a list element equal to a string; a date equal to a
/// date written as a string or a date literal; a number; a boolean.
fn metadata_equal(value: &str, literal: &Literal) -> Option<Term> {
    Some(match literal {
        Literal::String(text) => {
            // A list's elements compare as text; a date value compares with a string that
            // is exactly a date, whose canonical text is what the row holds.
            let scalar = parse_date(text).map_or_else(|| text.clone(), format_date);
            Term::Expr(format!(
                "({value} == {}) or json_contains({value}, {})",
                string_literal(&scalar),
                string_literal(text)
            ))
        }
        Literal::Number(x) => Term::Expr(format!("{value} == {}", number(*x))),
        Literal::Bool(b) => Term::Expr(format!("{value} == {b}")),
        // A list element equal to a date literal is any text of that date: folio's.
        _ => return None,
    })
}

/// A finite number as Milvus reads it.
fn number(x: f64) -> String {
    format!("{x:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(text: &str) -> Pushdown {
        pushdown(&text.parse().unwrap())
    }

    #[test]
    fn exact_tests_are_pushed_and_the_rest_reported() {
        let p = push(r#"team = "red" and n >= 5"#);
        assert_eq!(
            p.expr.as_deref(),
            Some(
                r#"((metadata["team"] == "red") or json_contains(metadata["team"], "red")) and (metadata["n"] >= 5.0)"#
            )
        );
        assert!(p.local.is_empty());
        let p = push(r#"title != "x""#);
        assert_eq!(
            p.expr.as_deref(),
            Some(r#"not ((title != "") and (title == "x"))"#)
        );
        // A date ordering is folio's: wider under `and`, narrower under `not`.
        let p = push(r#"due >= 2024-06-01 and flag = true"#);
        assert_eq!(p.expr.as_deref(), Some(r#"metadata["flag"] == true"#));
        assert_eq!(p.local, vec![r#"metadata."due" >= 2024-06-01"#]);
        let p = push(r#"not (due >= 2024-06-01 or flag = true)"#);
        assert_eq!(p.expr.as_deref(), Some(r#"not (metadata["flag"] == true)"#));
        let p = push(r#"not due >= 2024-06-01"#);
        assert_eq!((p.expr, p.nothing), (None, false));
        assert!(push("doc_id = 3").nothing);
        // A value stays a value.
        let p = push(r#"doc_id = "a\" or true or \"""#);
        assert_eq!(p.expr.as_deref(), Some(r#"doc_id == "a\" or true or \"""#));
        // A date written as a string is compared as its canonical text.
        let p = push(r#"due = "2024-06-01T00:00:00Z""#);
        assert!(p.expr.unwrap().contains(r#"== "2024-06-01")"#));
    }
}
