//! The collection one published version becomes: its name, fields, and one row per child.

use folio::index::Metric;
use folio::store::ExportedChild;
use milvus::v2::prelude::*;
use serde_json::{json, Value};

/// The primary key: the chunk id (`doc#c3`), unique within a version.
pub const ID: &str = "id";
/// The child's number in the folio index, which a remote search hands back to folio.
pub const CHILD: &str = "child";
/// The stored vector.
pub const VECTOR: &str = "vector";
/// The principals the version was built to show the child to.
pub const ACL: &str = "acl";
/// Public when the version was built.
pub const PUBLIC: &str = "public";
/// The principals the document admits now (kept current by the ACL sync).
pub const ACL_NOW: &str = "acl_now";
/// Public now.
pub const PUBLIC_NOW: &str = "public_now";

/// Longest id, path or URI a row can hold (bytes; Milvus's VARCHAR limit).
const TEXT_MAX: u32 = 65_535;
/// Most principals one document may name in a published collection (Milvus's ARRAY limit).
const PRINCIPALS_MAX: u32 = 4_096;

/// `PREFIX_INDEX_vVERSION`, every character of the index name Milvus does not allow in a
/// name (and `_`, so no two index names meet) written `_xx` in hex.
pub fn collection_name(prefix: &str, index: &str, version: u64) -> String {
    format!("{}_v{version}", alias_name(prefix, index))
}

/// `PREFIX_ALIAS`, the Milvus alias of a folio alias, escaped as [`collection_name`] escapes
/// index names: `_` is only ever followed by two hex digits, so no alias name ends in a
/// collection's `_vVERSION`.
pub fn alias_name(prefix: &str, alias: &str) -> String {
    let mut name = format!("{prefix}_");
    for b in alias.bytes() {
        if b.is_ascii_alphanumeric() {
            name.push(b as char);
        } else {
            name.push_str(&format!("_{b:02x}"));
        }
    }
    name
}

/// Milvus's metric for folio's.
pub fn metric_type(metric: Metric) -> MetricType {
    match metric {
        Metric::Cosine => MetricType::Cosine,
        Metric::Dot => MetricType::Ip,
        Metric::L2 => MetricType::L2,
    }
}

fn text(name: &str) -> FieldSchema {
    FieldSchema::new()
        .name(name)
        .data_type(DataType::VarChar)
        .max_length(TEXT_MAX)
}

fn principals(name: &str) -> FieldSchema {
    FieldSchema::new()
        .name(name)
        .data_type(DataType::Array)
        .element_type(DataType::VarChar)
        .max_capacity(PRINCIPALS_MAX)
        .max_length(TEXT_MAX)
}

fn field(name: &str, data_type: DataType) -> FieldSchema {
    FieldSchema::new().name(name).data_type(data_type)
}

/// The fields of a published version with vectors of `dimension`.
pub fn schema(dimension: u32) -> CollectionSchema {
    CollectionSchema::new()
        .enable_dynamic_field(false)
        .add_field(text(ID).primary_key(true))
        .add_field(field(CHILD, DataType::Int64))
        .add_field(text("doc_id"))
        .add_field(text("parent_id"))
        .add_field(field(VECTOR, DataType::FloatVector).dimension(dimension))
        .add_field(field("section_path", DataType::Json))
        .add_field(field("start", DataType::Int64))
        .add_field(field("end", DataType::Int64))
        .add_field(text("source_uri"))
        .add_field(text("title"))
        .add_field(text("published_at"))
        .add_field(text("updated_at"))
        .add_field(field("metadata", DataType::Json))
        .add_field(principals(ACL))
        .add_field(field(PUBLIC, DataType::Bool))
        .add_field(principals(ACL_NOW))
        .add_field(field(PUBLIC_NOW, DataType::Bool))
}

/// The row of one child (dates absent are empty strings: no nullable fields needed).
pub fn row(child: &ExportedChild) -> Value {
    json!({
        ID: child.chunk_id,
        CHILD: child.number,
        "doc_id": child.doc_id,
        "parent_id": child.parent_id,
        VECTOR: child.vector,
        "section_path": child.section_path,
        "start": child.start,
        "end": child.end,
        "source_uri": child.source_uri,
        "title": child.title,
        "published_at": child.published_at.as_deref().unwrap_or(""),
        "updated_at": child.updated_at.as_deref().unwrap_or(""),
        "metadata": child.metadata,
        ACL: child.frozen.principals,
        PUBLIC: child.frozen.public,
        ACL_NOW: child.current.principals,
        PUBLIC_NOW: child.current.public,
    })
}

/// The filter that shows a row to a caller with `principals` exactly when folio would: the
/// version admitted them (or was public) and the document admits them now.
pub fn visible_to(principals: &[String]) -> String {
    if principals.is_empty() {
        return format!("{PUBLIC} and {PUBLIC_NOW}");
    }
    let list = crate::expr::string_list(principals.iter().map(String::as_str));
    format!(
        "({PUBLIC} or array_contains_any({ACL}, {list})) and ({PUBLIC_NOW} or array_contains_any({ACL_NOW}, {list}))"
    )
}

/// The filter that shows a row to a caller with `principals` when the document admits them
/// now: for a collection searched for a later version than its own, whose ACLs at that
/// version folio checks itself.
pub fn visible_now_to(principals: &[String]) -> String {
    if principals.is_empty() {
        return PUBLIC_NOW.to_string();
    }
    let list = crate::expr::string_list(principals.iter().map(String::as_str));
    format!("{PUBLIC_NOW} or array_contains_any({ACL_NOW}, {list})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_names_are_milvus_names_and_never_meet() {
        assert_eq!(collection_name("folio", "docs", 3), "folio_docs_v3");
        assert_eq!(collection_name("folio", "a-b", 1), "folio_a_2db_v1");
        assert_ne!(
            collection_name("folio", "a_2db", 1),
            collection_name("folio", "a-b", 1)
        );
        let name = collection_name("f", "é.x", 2);
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
        assert_eq!(alias_name("folio", "prod-1"), "folio_prod_2d1");
        assert_ne!(
            alias_name("folio", "docs_v3"),
            collection_name("folio", "docs", 3)
        );
    }
}
