//! The document model: what an application hands to folio.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::chunk::SourceFormat;
use crate::filter::MetadataValue;

/// A source document. Its chunks inherit its ACL; a document with an empty ACL is public.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The application's id for the document, unique in the store; an upsert of the same id replaces it.
    pub doc_id: String,
    /// Its title (returned with hits).
    #[serde(default)]
    pub title: String,
    /// Where it came from (returned with hits).
    #[serde(default)]
    pub source_uri: String,
    /// How its text is read into chunks.
    #[serde(default = "default_format")]
    pub format: SourceFormat,
    /// The source text.
    pub text: String,
    /// Principals (users or groups) allowed to see the document; empty = public.
    #[serde(default)]
    pub acl: Vec<String>,
    /// When it was published, as the application writes it.
    #[serde(default)]
    pub published_at: Option<String>,
    /// When it was last updated, as the application writes it.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// The application's own typed fields, kept with the document, inherited by its chunks
    /// (filters test them, hits carry them).
    #[serde(default)]
    pub metadata: BTreeMap<String, MetadataValue>,
}

/// An ACL as the store applies it: trimmed, sorted, each principal once.
pub fn principals(acl: &[String]) -> Vec<String> {
    let set: std::collections::BTreeSet<String> =
        acl.iter().map(|p| p.trim().to_string()).collect();
    set.into_iter().collect()
}

impl Document {
    /// Takes `stored`'s ACL when `self`, given again without one, would otherwise make a
    /// restricted document public: a replace never widens who may see it by accident.
    /// Returns whether it did.
    pub fn inherit_acl(&mut self, stored: &Document) -> bool {
        let inherit = self.acl.is_empty() && !stored.acl.is_empty();
        if inherit {
            self.acl.clone_from(&stored.acl);
        }
        inherit
    }

    /// Whether storing `self` over `stored` would change nothing: the same text, format,
    /// title, source, dates and metadata, and the same principals (an ACL is a set). Ingest
    /// leaves such a document alone: no new version, nothing embedded again.
    pub fn unchanged_from(&self, stored: &Document) -> bool {
        principals(&self.acl) == principals(&stored.acl)
            && Document {
                acl: self.acl.clone(),
                ..stored.clone()
            } == *self
    }
}

fn default_format() -> SourceFormat {
    SourceFormat::Text
}

impl Document {
    /// A public document with the given id, format and text, and no other fields.
    pub fn new(doc_id: impl Into<String>, format: SourceFormat, text: impl Into<String>) -> Self {
        Document {
            doc_id: doc_id.into(),
            title: String::new(),
            source_uri: String::new(),
            format,
            text: text.into(),
            acl: Vec::new(),
            published_at: None,
            updated_at: None,
            metadata: BTreeMap::new(),
        }
    }

    /// The same document, visible to `acl` only.
    pub fn with_acl<S: Into<String>>(mut self, acl: impl IntoIterator<Item = S>) -> Self {
        self.acl = acl.into_iter().map(Into::into).collect();
        self
    }

    /// The same document with `key` set to `value` in its metadata.
    pub fn with_metadata(mut self, key: impl Into<String>, value: MetadataValue) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }
}
