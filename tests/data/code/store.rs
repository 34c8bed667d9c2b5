//! A small in-memory document store with a word index, the kind of module a search
//! service starts from.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use crate::error::StoreError;
use crate::text::{normalize, tokens};

/// The most hits one search returns.
pub const MAX_HITS: usize = 100;

/// One stored document.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// The application's id.
    pub id: String,
    /// Its text, as given.
    pub text: String,
    /// Who may read it; empty means everyone.
    pub acl: Vec<String>,
}

/// A search result: the document and how well it matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub score: f32,
}

/// How scores are computed.
#[derive(Debug, Clone, Copy, Default)]
pub enum Scoring {
    /// Term frequency only.
    #[default]
    Frequency,
    /// Term frequency weighted by inverse document frequency.
    TfIdf,
}

/// The store: documents by id and, for every word, the documents that hold it.
pub struct Store {
    docs: BTreeMap<String, Arc<Doc>>,
    postings: HashMap<String, Vec<(String, u32)>>,
    scoring: Scoring,
}

impl Store {
    /// An empty store that scores with `scoring`.
    pub fn new(scoring: Scoring) -> Self {
        Store {
            docs: BTreeMap::new(),
            postings: HashMap::new(),
            scoring,
        }
    }

    /// Adds or replaces a document; its words are indexed at once.
    pub fn upsert(&mut self, doc: Doc) -> Result<(), StoreError> {
        if doc.id.is_empty() {
            return Err(StoreError::EmptyId);
        }
        self.remove(&doc.id);
        let mut counts: HashMap<String, u32> = HashMap::new();
        for word in tokens(&normalize(&doc.text)) {
            *counts.entry(word.to_string()).or_default() += 1;
        }
        for (word, n) in counts {
            self.postings
                .entry(word)
                .or_default()
                .push((doc.id.clone(), n));
        }
        self.docs.insert(doc.id.clone(), Arc::new(doc));
        Ok(())
    }

    /// Removes a document and its postings; true if it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        if self.docs.remove(id).is_none() {
            return false;
        }
        for list in self.postings.values_mut() {
            list.retain(|(doc, _)| doc != id);
        }
        self.postings.retain(|_, list| !list.is_empty());
        true
    }

    /// The best `k` documents for `query` that `principal` may read, best first.
    pub fn search(&self, query: &str, principal: &str, k: usize) -> Vec<Hit> {
        let k = k.min(MAX_HITS);
        let mut scores: HashMap<&str, f32> = HashMap::new();
        let total = self.docs.len().max(1) as f32;
        for word in tokens(&normalize(query)) {
            let Some(list) = self.postings.get(word) else {
                continue;
            };
            // Rare words weigh more under TF-IDF.
            let weight = match self.scoring {
                Scoring::Frequency => 1.0,
                Scoring::TfIdf => (total / list.len() as f32).ln() + 1.0,
            };
            for (id, n) in list {
                *scores.entry(id.as_str()).or_default() += *n as f32 * weight;
            }
        }
        let mut hits: Vec<Hit> = scores
            .into_iter()
            .filter(|(id, _)| self.readable(id, principal))
            .map(|(id, score)| Hit {
                id: id.to_string(),
                score,
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        hits.truncate(k);
        hits
    }

    /// Whether `principal` may read the document `id`.
    fn readable(&self, id: &str, principal: &str) -> bool {
        self.docs
            .get(id)
            .is_some_and(|d| d.acl.is_empty() || d.acl.iter().any(|p| p == principal))
    }

    /// The number of stored documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} documents, {} words", self.docs.len(), self.postings.len())
    }
}

/// Something that can be searched.
pub trait Searcher {
    /// The best `k` hits for `query`.
    fn search(&self, query: &str, k: usize) -> Vec<Hit>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> Doc {
        Doc {
            id: id.into(),
            text: text.into(),
            acl: Vec::new(),
        }
    }

    #[test]
    fn finds_what_it_holds() {
        let mut store = Store::new(Scoring::TfIdf);
        store.upsert(doc("a", "red apples")).unwrap();
        store.upsert(doc("b", "green pears")).unwrap();
        let hits = store.search("apples", "anyone", 10);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "a");
    }
}
