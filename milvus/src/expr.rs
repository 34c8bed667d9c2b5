//! Milvus filter expressions built from folio's values. milvus-lite 3.2.2 parses no filter
//! templates, so values are written into the expression as quoted literals.

/// `value` as a Milvus string literal: in double quotes, `"` and `\` escaped, so a principal
/// or id can never end the literal early.
pub fn string_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `[a, b, …]`: a list of string literals.
pub fn string_list<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = values.into_iter().map(string_literal).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(string_literal(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(string_list(["x", "y\""]), r#"["x", "y\""]"#);
        assert_eq!(string_list([]), "[]");
    }
}
