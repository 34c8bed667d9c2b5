//! folio on the same chunks: the pure BM25 core (`index::lexical`) on one segment of the
//! corpus, and a store holding each chunk as a one-chunk document with its ACL (searched
//! through `Snapshot::search_lexical` and `Store::search`). The store's index embeds
//! queries with MiniLM; the chunks' vectors are given (see `QueryCache`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use folio::chunk::Chunked;
use folio::embed::{EmbedError, Embedder, TokenCounter};
use folio::index::Metric;
use folio::{Document, SourceFormat};

/// Wraps the query embedder: while `serve_cached` is set, queries embedded beforehand are
/// served from memory, so a search runs on a vector given rather than one computed (the
/// "vectors given" figures); otherwise every call goes to the model.
pub struct QueryCache {
    model: Arc<dyn Embedder>,
    cached: RwLock<HashMap<String, Vec<f32>>>,
    pub serve_cached: AtomicBool,
}

impl QueryCache {
    pub fn new(model: Arc<dyn Embedder>) -> QueryCache {
        QueryCache {
            model,
            cached: RwLock::new(HashMap::new()),
            serve_cached: AtomicBool::new(false),
        }
    }

    /// Embeds `queries` with the model and keeps their vectors.
    pub fn fill(&self, queries: &[String]) -> Result<(), EmbedError> {
        let texts: Vec<&str> = queries.iter().map(String::as_str).collect();
        let rows = self.model.embed_queries(&texts)?;
        let dimension = self.model.dimension();
        let mut cached = self
            .cached
            .write()
            .map_err(|_| EmbedError::Failed("query cache poisoned".into()))?;
        for (query, row) in queries.iter().zip(rows.chunks(dimension)) {
            cached.insert(query.clone(), row.to_vec());
        }
        Ok(())
    }
}

impl Embedder for QueryCache {
    fn name(&self) -> &str {
        self.model.name()
    }
    fn fingerprint(&self) -> String {
        self.model.fingerprint()
    }
    fn dimension(&self) -> usize {
        self.model.dimension()
    }
    fn metric(&self) -> Metric {
        self.model.metric()
    }
    fn max_input_tokens(&self) -> usize {
        self.model.max_input_tokens()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.model.embed(texts)
    }
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        if self.serve_cached.load(Ordering::Relaxed) {
            if let Ok(cached) = self.cached.read() {
                let rows: Option<Vec<&Vec<f32>>> = texts.iter().map(|t| cached.get(*t)).collect();
                if let Some(rows) = rows {
                    return Ok(rows.into_iter().flatten().copied().collect());
                }
            }
        }
        self.model.embed_queries(texts)
    }
    fn input_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        self.model.input_tokens(texts)
    }
    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        self.model.token_counter()
    }
}

/// The document id of chunk `id`, and back.
pub fn doc_id(id: u32) -> String {
    format!("c{id}")
}

pub fn chunk_of(doc_id: &str) -> Option<u32> {
    doc_id.strip_prefix('c')?.parse().ok()
}

/// A one-chunk document of `text` with `acl`, and its chunking (the whole text).
pub fn document(id: u32, text: &str, acl: &[&str]) -> (Document, Chunked) {
    let doc = Document::new(doc_id(id), SourceFormat::Text, text).with_acl(acl.iter().copied());
    (doc, Chunked::whole(text.len()))
}

/// Bytes of the store file.
pub fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
