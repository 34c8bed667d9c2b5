//! The parser's errors and positions, and what each test means.

use std::collections::BTreeMap;

use super::*;

fn attributes<'a>(
    metadata: &'a BTreeMap<String, MetadataValue>,
    section_path: &'a [String],
) -> Attributes<'a> {
    Attributes {
        doc_id: "refund-policy",
        title: "Refunds",
        source_uri: "https://help.example.com/billing/refunds",
        published_at: Some("2023-06-01"),
        updated_at: Some("2024-03-10T12:00:00Z"),
        metadata,
        section_path,
    }
}

fn sample() -> (BTreeMap<String, MetadataValue>, Vec<String>) {
    let mut metadata = BTreeMap::new();
    metadata.insert("product".into(), MetadataValue::String("cards".into()));
    metadata.insert("version".into(), MetadataValue::Number(3.0));
    metadata.insert("internal".into(), MetadataValue::Bool(false));
    metadata.insert(
        "reviewed".into(),
        MetadataValue::Date(parse_date("2024-02-01").expect("date")),
    );
    metadata.insert(
        "tags".into(),
        MetadataValue::List(vec!["faq".into(), "billing".into()]),
    );
    metadata.insert("odd key".into(), MetadataValue::String("x".into()));
    let path = vec!["Refunds".to_string(), "Cards".to_string()];
    (metadata, path)
}

fn holds(expression: &str) -> bool {
    let (metadata, path) = sample();
    let filter = Filter::parse(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    let canonical = filter.to_string();
    let again = Filter::parse(&canonical).unwrap_or_else(|e| panic!("{canonical}: {e}"));
    assert_eq!(again, filter, "{expression} -> {canonical}");
    filter.matches(&attributes(&metadata, &path))
}

#[test]
fn tests_mean_what_the_module_says() {
    let yes = [
        r#"section_path ^= "Refunds""#,
        r#"section_path = "Refunds > Cards""#,
        r#"section_path contains "Cards""#,
        r#"source_uri ^= "https://help.example.com/""#,
        r#"doc_id = "refund-policy""#,
        r#"doc_id in ["a", "refund-policy"]"#,
        "updated_at >= 2024-01-01",
        "updated_at < 2024-03-10T13:00:00+00:00",
        r#"updated_at > "2024-01-01""#,
        "published_at = 2023-06-01",
        r#"product = "cards""#,
        r#"product contains "ar""#,
        "version >= 3 and version < 3.5",
        "version = 3.0",
        "internal = false",
        "reviewed > 2024-01-31 and reviewed <= 2024-02-01",
        r#"tags contains "faq""#,
        r#"tags = "billing""#,
        r#"tags in ["x", "faq"]"#,
        r#"tags ^= "bill""#,
        r#"tags != "nope""#,
        r#"missing != "x""#,
        "tags exists and not missing exists",
        r#"metadata."odd key" = "x""#,
        r#""odd key" = 'x'"#,
        r#"metadata.product == "cards""#,
        r#"(product = "x" or version = 3) && !(internal = true)"#,
        r#"NOT product = "x" OR product = "y" OR tags contains "faq""#,
    ];
    for expression in yes {
        assert!(holds(expression), "{expression} should hold");
    }
    let no = [
        r#"section_path ^= "Cards""#,
        r#"section_path contains "Card""#,
        r#"version = "3""#,
        r#"product > 3"#,
        "updated_at < 2024-01-01",
        r#"updated_at = "soon""#,
        r#"tags = "faq,billing""#,
        r#"tags != "faq""#,
        r#"missing = "x""#,
        "missing exists",
        r#"product in ["a", "b"]"#,
        "internal = true or version > 3",
        r#"not (doc_id ^= "refund")"#,
        r#"title = "refunds""#,
    ];
    for expression in no {
        assert!(!holds(expression), "{expression} should not hold");
    }
}

fn error(expression: &str) -> FilterError {
    match Filter::parse(expression) {
        Ok(f) => panic!("{expression} parsed as {f}"),
        Err(e) => e,
    }
}

#[test]
fn errors_say_what_and_where() {
    let cases: [(&str, usize, &str); 14] = [
        ("", 0, "empty filter expression"),
        ("   ", 0, "empty filter expression"),
        ("a = ", 4, "expected a value"),
        ("a = 1 b = 2", 6, "expected `and`, `or` or the end"),
        ("a ~ 1", 2, "unexpected character `~`"),
        ("a = \"open", 4, "unterminated string"),
        ("a = \"x\\q\"", 6, "unknown escape `\\q`"),
        ("a = 12abc", 4, "`12abc` is not a number or a date"),
        (
            "a = 2024-13-01",
            4,
            "`2024-13-01` is not a number or a date",
        ),
        ("(a = 1", 6, "expected `)`, found the end"),
        ("a in 1", 5, "expected `[`"),
        ("a = cards", 4, "expected a value"),
        ("and = 1", 0, "expected a field name"),
        (
            "doc_id contains \"x\"",
            7,
            "`contains` does not apply to doc_id",
        ),
    ];
    for (expression, position, message) in cases {
        let e = error(expression);
        assert_eq!(e.position, position, "{expression}: {e}");
        let text = e.to_string();
        assert!(text.starts_with(message), "{expression}: {text}");
        assert!(
            text.ends_with(&format!("at position {}", position + 1)),
            "{text}"
        );
    }
    assert_eq!(
        error("a ^= 1").kind.to_string(),
        "expected a quoted prefix, found `1.0`"
    );
    assert!(matches!(
        error(&"(".repeat(MAX_DEPTH + 1)).kind,
        FilterErrorKind::TooDeep
    ));
    assert!(matches!(
        error(&"not ".repeat(MAX_DEPTH + 1)).kind,
        FilterErrorKind::TooDeep
    ));
    // Nesting up to the bound parses; long flat chains do not nest at all.
    let deep = format!("{}a = 1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    assert!(Filter::parse(&deep).is_ok());
    let long = vec!["a = 1"; 10_000].join(" and ");
    assert!(Filter::parse(&long).is_ok());
    // The canonical text is never deeper than the text it came from.
    for text in [
        format!("{}a = 1", "not ".repeat(MAX_DEPTH)),
        format!(
            "{}a = 1 or b = 2{}",
            "not (".repeat(MAX_DEPTH / 2),
            ")".repeat(MAX_DEPTH / 2)
        ),
    ] {
        let filter = Filter::parse(&text).expect("parses");
        assert_eq!(Filter::parse(&filter.to_string()), Ok(filter));
    }
}

#[test]
fn strings_and_canonical_text_round_trip() {
    let filter = Filter::parse(r#"k = "q\"u\\o\nte\u{1F600}\t" and k = 'it\'s'"#).expect("parses");
    let text = filter.to_string();
    assert_eq!(Filter::parse(&text).expect("canonical parses"), filter);
    let (metadata, path) = sample();
    let a = attributes(&metadata, &path);
    let two = Filter::parse("version = 3")
        .expect("parses")
        .and(Filter::parse(r#"product = "cards""#).expect("parses"));
    assert!(two.matches(&a));
    assert_eq!(
        two.to_string(),
        r#"metadata."version" = 3.0 and metadata."product" = "cards""#
    );
    let three = two.and(Filter::parse("internal = true").expect("parses"));
    assert!(!three.matches(&a));
    assert_eq!(three.to_string().matches(" and ").count(), 2);
}
