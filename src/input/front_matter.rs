//! Front matter: the YAML (`---`) or TOML (`+++`) block at the start of a Markdown file,
//! parsed by `yaml-rust2` and `toml` into typed metadata: strings (a date's text a date),
//! numbers, booleans, lists (as lists of strings), nested tables flattened to dotted keys
//! (`author.name`). Every field lands in the metadata (keys the document already has keep
//! their value); `title`, `published_at` (or `date`) and `updated_at` (or `lastmod`) also
//! set the document's own fields when it has none (a title derived from the file is
//! replaced), so a filter on `updated_at` finds the front matter's date as
//! `metadata.updated_at` does. Front matter never sets the ACL: an `acl` key is metadata.
//! A block that does not parse adds nothing.

use std::collections::BTreeMap;

use crate::chunk::{front_matter, SourceFormat};
use crate::document::Document;
use crate::filter::MetadataValue;

/// `doc` with its front matter applied (Markdown only; other formats as they are);
/// `derived_title`: its title was made from the file (a heading, the file name), so the
/// front matter's `title` replaces it.
pub fn apply(mut doc: Document, derived_title: bool) -> Document {
    if doc.format != SourceFormat::Markdown {
        return doc;
    }
    let Some(block) = front_matter(&doc.text) else {
        return doc;
    };
    let fields = if block.toml {
        toml_fields(&block.text)
    } else {
        yaml_fields(&block.text)
    };
    for (key, value) in fields {
        if let MetadataValue::String(_) | MetadataValue::Date(_) = value {
            let text = text_of(&value);
            match key.as_str() {
                "title" if derived_title || doc.title.is_empty() => doc.title = text.clone(),
                "published_at" | "date" if doc.published_at.is_none() => {
                    doc.published_at = Some(text.clone())
                }
                "updated_at" | "lastmod" if doc.updated_at.is_none() => {
                    doc.updated_at = Some(text.clone())
                }
                _ => {}
            }
        }
        doc.metadata.entry(key).or_insert(value);
    }
    doc
}

/// A string or date value as the text a document field holds.
fn text_of(value: &MetadataValue) -> String {
    match value {
        MetadataValue::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A parsed front matter value, either parser's.
enum Node {
    Scalar(MetadataValue),
    List(Vec<Node>),
    Table(Vec<(String, Node)>),
    /// A null, or a value of no kind folio keeps.
    Nothing,
}

fn yaml_fields(text: &str) -> BTreeMap<String, MetadataValue> {
    use yaml_rust2::{Yaml, YamlLoader};
    fn node(value: &Yaml) -> Node {
        match value {
            Yaml::String(s) => Node::Scalar(MetadataValue::from_text(s.clone())),
            Yaml::Integer(i) => Node::Scalar(MetadataValue::Number(*i as f64)),
            Yaml::Real(r) => r
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map_or(Node::Nothing, |x| Node::Scalar(MetadataValue::Number(x))),
            Yaml::Boolean(b) => Node::Scalar(MetadataValue::Bool(*b)),
            Yaml::Array(items) => Node::List(items.iter().map(node).collect()),
            Yaml::Hash(map) => Node::Table(
                map.iter()
                    .filter_map(|(k, v)| match node(k) {
                        Node::Scalar(key) => Some((text_of(&key), node(v))),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => Node::Nothing,
        }
    }
    let docs = YamlLoader::load_from_str(text).unwrap_or_default();
    fields(docs.first().map_or(Node::Nothing, node))
}

fn toml_fields(text: &str) -> BTreeMap<String, MetadataValue> {
    use toml::Value;
    fn node(value: &Value) -> Node {
        match value {
            Value::String(s) => Node::Scalar(MetadataValue::from_text(s.clone())),
            Value::Integer(i) => Node::Scalar(MetadataValue::Number(*i as f64)),
            Value::Float(x) if x.is_finite() => Node::Scalar(MetadataValue::Number(*x)),
            Value::Boolean(b) => Node::Scalar(MetadataValue::Bool(*b)),
            Value::Datetime(d) => Node::Scalar(MetadataValue::from_text(d.to_string())),
            Value::Array(items) => Node::List(items.iter().map(node).collect()),
            Value::Table(table) => {
                Node::Table(table.iter().map(|(k, v)| (k.clone(), node(v))).collect())
            }
            _ => Node::Nothing,
        }
    }
    match text.parse::<toml::Table>() {
        Ok(table) => fields(node(&Value::Table(table))),
        Err(_) => BTreeMap::new(),
    }
}

/// The metadata of a front matter's root table: nested tables as dotted keys, lists of
/// scalars as string lists (other lists and nulls left out).
fn fields(root: Node) -> BTreeMap<String, MetadataValue> {
    fn walk(prefix: String, node: Node, out: &mut BTreeMap<String, MetadataValue>) {
        match node {
            Node::Table(entries) => {
                for (key, value) in entries {
                    walk(dotted(&prefix, &key), value, out);
                }
            }
            Node::List(items) => {
                let texts: Option<Vec<String>> = items
                    .iter()
                    .map(|item| match item {
                        Node::Scalar(v) => Some(text_of(v)),
                        _ => None,
                    })
                    .collect();
                if let Some(texts) = texts {
                    out.insert(prefix, MetadataValue::List(texts));
                }
            }
            Node::Scalar(value) => {
                out.insert(prefix, value);
            }
            Node::Nothing => {}
        }
    }
    let mut out = BTreeMap::new();
    if let Node::Table(_) = root {
        walk(String::new(), root, &mut out);
    }
    out
}

fn dotted(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::parse_date;

    fn doc(text: &str) -> Document {
        apply(Document::new("d", SourceFormat::Markdown, text), true)
    }

    fn list(items: &[&str]) -> MetadataValue {
        MetadataValue::List(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn yaml_front_matter_is_typed_and_sets_title_and_dates() {
        let d = doc("---\ntitle: \"Refunds: how\"\nupdated_at: 2024-03-01\nversion: 3\ndraft: false\nrating: 4.5\ncode: \"007\"\ntags: [rust, db]\nteams:\n  - sre\n  - billing\nauthor:\n  name: Ada\n  links: {home: x}\nacl: [billing]\n---\n# Heading\n\nBody.\n");
        assert_eq!(d.title, "Refunds: how");
        assert_eq!(d.updated_at.as_deref(), Some("2024-03-01"));
        assert!(d.acl.is_empty(), "front matter never sets the ACL");
        let m = &d.metadata;
        assert_eq!(
            m["updated_at"],
            MetadataValue::Date(parse_date("2024-03-01").unwrap())
        );
        assert_eq!(m["version"], MetadataValue::Number(3.0));
        assert_eq!(m["draft"], MetadataValue::Bool(false));
        assert_eq!(m["rating"], MetadataValue::Number(4.5));
        assert_eq!(m["code"], MetadataValue::String("007".into()));
        assert_eq!(m["tags"], list(&["rust", "db"]));
        assert_eq!(m["teams"], list(&["sre", "billing"]));
        assert_eq!(m["author.name"], MetadataValue::String("Ada".into()));
        assert_eq!(m["author.links.home"], MetadataValue::String("x".into()));
        assert_eq!(m["acl"], list(&["billing"]));
        assert_eq!(m["title"], MetadataValue::String("Refunds: how".into()));
    }

    #[test]
    fn toml_front_matter_is_read_too() {
        let d = doc("+++\ntitle = \"Guide\"\ndate = 2024-05-02\ntags = [\"a\", \"b\"]\n[extra]\nlevel = 2\n+++\nBody.\n");
        assert_eq!(
            (d.title.as_str(), d.published_at.as_deref()),
            ("Guide", Some("2024-05-02"))
        );
        assert_eq!(d.metadata["tags"], list(&["a", "b"]));
        assert_eq!(d.metadata["extra.level"], MetadataValue::Number(2.0));
        assert_eq!(
            d.metadata["date"],
            MetadataValue::Date(parse_date("2024-05-02").unwrap())
        );
    }

    #[test]
    fn given_fields_win_and_bad_blocks_add_nothing() {
        let mut given = Document::new(
            "d",
            SourceFormat::Markdown,
            "---\ntitle: Other\nupdated_at: 2020-01-01\nteam: x\n---\nBody.\n",
        );
        given.title = "Mine".into();
        given.updated_at = Some("2024-01-01".into());
        given
            .metadata
            .insert("team".into(), MetadataValue::String("mine".into()));
        let d = apply(given, false);
        assert_eq!(
            (d.title.as_str(), d.updated_at.as_deref()),
            ("Mine", Some("2024-01-01"))
        );
        assert_eq!(d.metadata["team"], MetadataValue::String("mine".into()));
        assert_eq!(
            d.metadata["updated_at"],
            MetadataValue::Date(parse_date("2020-01-01").unwrap())
        );
        assert!(doc("---\n: [unclosed\n---\nBody.\n").metadata.is_empty());
        assert!(apply(
            Document::new("d", SourceFormat::Text, "---\na: 1\n---\n"),
            true
        )
        .metadata
        .is_empty());
    }
}
