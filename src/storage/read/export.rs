//! One version's live children with everything a copy elsewhere needs (vector, ids, span,
//! document fields, who may see it then and now): what `folio-milvus` publishes.

use std::collections::BTreeMap;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::embed::EmbedderIdentity;
use crate::filter::MetadataValue;
use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::current::read_all;
use crate::storage::file::current::PUBLIC;
use crate::storage::file::tables::{ACL, ACL_CURRENT};
use crate::storage::read::catalog::Catalog;
use crate::storage::read::docs::{chunk_id, parent_id};
use crate::storage::read::snapshot::Snapshot;
use crate::storage::read::snapshot::VersionVectors;
use crate::storage::read::state::Access;
use crate::storage::read::state::{principals, read_acl, IndexState, VersionView};

/// Who may see a child: everyone (`public`), or any of `principals`; neither when its
/// document was deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Audience {
    /// Public: every caller.
    pub public: bool,
    /// The principals of a restricted document, sorted.
    pub principals: Vec<String>,
}

/// One live child of an exported version.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExportedChild {
    /// Its number in the index: what [`crate::SearchRequest`] candidates name.
    pub number: u32,
    /// `doc_id#c<ordinal>`: unique within a version.
    pub chunk_id: String,
    /// `doc_id#p<ordinal>`.
    pub parent_id: String,
    /// Its document.
    pub doc_id: String,
    /// The stored vector (normalised, for cosine).
    pub vector: Vec<f32>,
    /// The heading path of its section.
    pub section_path: Vec<String>,
    /// Byte span in the document's source text: start.
    pub start: usize,
    /// End of the span (exclusive).
    pub end: usize,
    /// The document's source URI.
    pub source_uri: String,
    /// The document's title.
    pub title: String,
    /// The document's publication date, as given.
    pub published_at: Option<String>,
    /// The document's last update, as given.
    pub updated_at: Option<String>,
    /// The document's metadata.
    pub metadata: BTreeMap<String, MetadataValue>,
    /// Who the version was built to show it to.
    pub frozen: Audience,
    /// Who its document admits now: a search of the version shows the child to a caller
    /// both audiences admit (see `storage-format.md`, "Live revocations").
    pub current: Audience,
}

/// A consistent read of one version for export ([`crate::Store::export`]): the children it holds,
/// read one at a time.
pub struct Export<'s> {
    reader: Snapshot<'s>,
    state: Arc<IndexState>,
    view: Arc<VersionView>,
    frozen: Vec<(String, RoaringBitmap)>,
    current: Vec<(String, RoaringBitmap)>,
    children: RoaringBitmap,
}

impl Catalog {
    /// The vectors a search of `target` (`index`, `index@version`, `index@tag` or an alias,
    /// as in [`crate::SearchRequest::target`]) reads, for inspecting or exporting them.
    pub fn vectors(&self, target: &str) -> Result<VersionVectors, ReadError> {
        let reader = self.reader()?;
        let (_, view) = reader.resolve(target)?;
        let segments = view
            .segments()
            .iter()
            .map(|s| s.resident(reader.txn()))
            .collect::<Result<_, _>>()?;
        Ok(VersionVectors {
            version: view.version(),
            live: view.live().clone(),
            segments,
        })
    }

    /// The child numbers live in `target`'s version as it was committed: before any access
    /// filter, deletions made since included (a copy of the version elsewhere holds them).
    pub fn live(&self, target: &str) -> Result<RoaringBitmap, ReadError> {
        let reader = self.reader()?;
        let (_, view) = reader.resolve(target)?;
        Ok(view.live().clone())
    }

    /// The child numbers `access` may see in `target`'s version: what a search of it is
    /// filtered by (revocations and deletions made since that version included).
    pub fn visible(&self, target: &str, access: &Access) -> Result<RoaringBitmap, ReadError> {
        let reader = self.reader()?;
        let (_, view) = reader.resolve(target)?;
        reader.visible(&view, access)
    }

    /// Reads `target`'s version (`index`, `index@version`, `index@tag` or an alias) for
    /// export. Its children are the live ones whose document still exists, what an
    /// unrestricted search of the version sees.
    pub fn export(&self, target: &str) -> Result<Export<'_>, ReadError> {
        let reader = self.reader()?;
        let (state, view) = reader.resolve(target)?;
        let children = reader.visible(&view, &Access::Unrestricted)?;
        let txn = reader.txn();
        let table = txn.open_table(ACL).map_err(StorageError::from)?;
        let mut frozen = Vec::new();
        for principal in std::iter::once(PUBLIC.to_string()).chain(principals(txn, state.id())?) {
            let bitmap = read_acl(&table, state.id(), &principal, view.version())?;
            frozen.push((principal, bitmap));
        }
        let current = read_all(
            &txn.open_table(ACL_CURRENT).map_err(StorageError::from)?,
            state.id(),
        )?;
        Ok(Export {
            reader,
            state,
            view,
            frozen,
            current,
            children,
        })
    }
}

fn audience(bitmaps: &[(String, RoaringBitmap)], number: u32) -> Audience {
    let mut out = Audience::default();
    for (principal, bitmap) in bitmaps {
        if bitmap.contains(number) {
            if principal == PUBLIC {
                out.public = true;
            } else {
                out.principals.push(principal.clone());
            }
        }
    }
    out
}

impl Export<'_> {
    /// The index.
    pub fn index(&self) -> &str {
        self.state.name()
    }

    /// The version.
    pub fn version(&self) -> u64 {
        self.view.version()
    }

    /// The index's embedder: name, dimension, metric.
    pub fn embedder(&self) -> &EmbedderIdentity {
        self.state.embedder()
    }

    /// The numbers of the children exported.
    pub fn children(&self) -> &RoaringBitmap {
        &self.children
    }

    /// Who child `number`'s document admits now ([`ExportedChild::current`] without
    /// reading the child): what an ACL sync compares with a copy.
    pub fn current(&self, number: u32) -> Audience {
        audience(&self.current, number)
    }

    /// Child `number` of [`Export::children`].
    pub fn child(&self, number: u32) -> Result<ExportedChild, ReadError> {
        let child = self.reader.child(&self.state, number)?;
        let doc = self.reader.doc(child.rev)?;
        let segment = self
            .view
            .segments()
            .iter()
            .find(|s| s.ids().contains(&number))
            .ok_or_else(|| {
                StorageError::corrupt(format!(
                    "child {number} is in no segment of `{}`@{}",
                    self.state.name(),
                    self.view.version()
                ))
            })?;
        let mut vector = Vec::new();
        segment.read_rows(self.reader.txn(), &[number - segment.base()], &mut vector)?;
        Ok(ExportedChild {
            number,
            chunk_id: chunk_id(&doc.doc_id, child.ordinal),
            parent_id: parent_id(&doc.doc_id, child.parent_ordinal),
            doc_id: doc.doc_id.clone(),
            vector,
            section_path: child.section_path,
            start: child.start,
            end: child.end,
            source_uri: doc.source_uri.clone(),
            title: doc.title.clone(),
            published_at: doc.published_at.clone(),
            updated_at: doc.updated_at.clone(),
            metadata: doc.metadata.clone(),
            frozen: audience(&self.frozen, number),
            current: audience(&self.current, number),
        })
    }
}
