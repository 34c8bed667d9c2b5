//! Replay between versions of one store: every question asked of each target (`index@3`,
//! `index@tag`, an alias) as the principals that first asked it, with the filter it had,
//! the hits mapped onto the
//! documents' current source text, then compared by [`crate::version_report`].

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::data::{Corpus, Question, QuestionSet};
use crate::error::EvalError;
use crate::plan::PlanRerank;
use crate::replay::Cuts;
use crate::run::{Answer, Unit};
use crate::version_report::{compare_versions, UnitKey, VersionAnswer, VersionReport};
use folio::chunk::Chunked;
use folio::document::Document;
use folio::embed::TokenCounter;
use folio::query::{Expand, SearchMode, SearchRequest, SearchResponse};
use folio::store::{Access, Store};
use folio::Filter;

/// How to replay a question set between versions.
#[derive(Debug, Clone)]
pub struct VersionReplay {
    /// What to ask, in report order: `index@version`, `index@tag`, an index (its serving
    /// version) or an alias (routed by the question's route key, else its text). The first
    /// is the base every other is compared with.
    pub targets: Vec<String>,
    /// Reading units asked for, and the k of every figure.
    pub k: usize,
    /// Token budget of the returned texts, if any.
    pub token_budget: Option<usize>,
    /// What the budget counts (the estimate when `None`; see
    /// [`SearchRequest::budget_tokens`]).
    pub budget_tokens: Option<Arc<dyn TokenCounter>>,
    /// What the searches return around their matched children.
    pub expand: Expand,
    /// Ask questions that do not say who asked (no logged request, or its `principals`
    /// `null`) with [`Access::Unrestricted`]; without it they are refused.
    pub unrestricted: bool,
    /// How every target is asked (dense by default); to compare plans on one version, replay
    /// strategies instead ([`crate::replay`]).
    pub mode: SearchMode,
    /// The rerank stage every target's answers go through, if any.
    pub rerank: Option<PlanRerank>,
}

impl VersionReplay {
    /// Replays `targets` at k = 5, parents returned, questions without principals refused.
    pub fn new(targets: impl IntoIterator<Item = impl Into<String>>) -> VersionReplay {
        VersionReplay {
            targets: targets.into_iter().map(Into::into).collect(),
            k: folio::query::DEFAULT_K,
            token_budget: None,
            budget_tokens: None,
            expand: Expand::Parent,
            unrestricted: false,
            mode: SearchMode::Dense,
            rerank: None,
        }
    }

    /// Asks every question of `set` of every target and compares the answers with the
    /// first target's. Gold spans are checked against the store's current documents.
    /// Nothing is asked before every question has passed the access check.
    pub fn run(&self, store: &Store, set: QuestionSet) -> Result<VersionReport, EvalError> {
        if self.targets.len() < 2 {
            return Err(EvalError::Invalid(
                "a replay between versions needs at least two targets".into(),
            ));
        }
        let mut docs = Documents::default();
        for id in set.gold_doc_ids() {
            docs.add(store, id)?;
        }
        let (questions, stale) = set.check_current(&Corpus::new(docs.list.clone())?)?;
        let asked = questions
            .iter()
            .map(|q| Ok((self.access(q)?, filter(q)?)))
            .collect::<Result<Vec<_>, EvalError>>()?;
        let gold_docs = docs.list.len();
        let mut responses = Vec::with_capacity(self.targets.len());
        for target in &self.targets {
            let mut answers = Vec::with_capacity(questions.len());
            for (question, (access, filter)) in questions.iter().zip(&asked) {
                let request = self.request(target, question, access, filter.as_ref());
                let response = store.search(&request)?;
                for hit in &response.results {
                    docs.add(store, &hit.doc_id)?;
                }
                answers.push(response);
            }
            responses.push(answers);
        }
        let corpus = Corpus::new(docs.list)?;
        let mut cuts_of: BTreeMap<String, (Vec<Chunked>, bool)> = BTreeMap::new();
        for response in responses.iter().flatten() {
            if !cuts_of.contains_key(&response.index) {
                // Only gold documents are looked at for labels.
                let chunkings = corpus.docs()[..gold_docs]
                    .iter()
                    .map(|d| store.plan_chunked(&response.index, d))
                    .collect::<Result<_, _>>()?;
                cuts_of.insert(
                    response.index.clone(),
                    (chunkings, overlaps(store, &response.index)?),
                );
            }
        }
        let cuts: BTreeMap<String, Cuts> = cuts_of
            .iter()
            .map(|(name, (chunkings, overlap))| {
                let cuts = Cuts {
                    chunkings,
                    expand: self.expand,
                    overlap: *overlap,
                };
                (name.clone(), cuts)
            })
            .collect();
        let answers: Vec<Vec<VersionAnswer>> = responses
            .into_iter()
            .map(|per_target| {
                per_target
                    .into_iter()
                    .map(|r| version_answer(r, &corpus))
                    .collect()
            })
            .collect();
        let mut report =
            compare_versions(&self.targets, &answers, &cuts, &questions, &corpus, self.k);
        report.stale_gold = stale;
        Ok(report)
    }

    /// Who the question is asked as: the principals of its logged request; unrestricted
    /// only when allowed, for a question without them or logged as tooling (`null`).
    fn access(&self, question: &Question) -> Result<Access, EvalError> {
        match question.origin.as_ref().map(|o| &o.principals) {
            Some(Some(principals)) => Ok(Access::Principals(principals.clone())),
            _ if self.unrestricted => Ok(Access::Unrestricted),
            _ => Err(EvalError::NoPrincipals {
                query_id: question.id.clone(),
            }),
        }
    }

    /// The search, with the logged request's filter: no near-duplicate removal, so every
    /// version keeps all its units.
    fn request(
        &self,
        target: &str,
        question: &Question,
        access: &Access,
        filter: Option<&Filter>,
    ) -> SearchRequest {
        let mut request = SearchRequest::text(question.text.as_str())
            .mode(self.mode)
            .access(access.clone())
            .k(self.k)
            .expand(self.expand)
            .target(target)
            .no_dedup();
        request.token_budget = self.token_budget;
        request.budget_tokens = self.budget_tokens.clone();
        request.route_key = question.origin.as_ref().and_then(|o| o.route_key.clone());
        if let Some(rerank) = &self.rerank {
            request = request.rerank(rerank.stage());
        }
        match filter {
            Some(filter) => request.filter(filter.clone()),
            None => request,
        }
    }
}

/// The filter of the logged request a question came from, if it had one.
fn filter(question: &Question) -> Result<Option<Filter>, EvalError> {
    let text = question.origin.as_ref().and_then(|o| o.filter.as_deref());
    text.map(Filter::parse)
        .transpose()
        .map_err(|error| EvalError::BadFilter {
            query_id: question.id.clone(),
            error,
        })
}

/// The store's current documents met so far, each once.
#[derive(Default)]
struct Documents {
    list: Vec<Document>,
    seen: HashSet<String>,
}

impl Documents {
    /// Adds document `id`; a document the store does not hold is left out (the gold
    /// check then names it).
    fn add(&mut self, store: &Store, id: &str) -> Result<(), EvalError> {
        if self.seen.insert(id.to_string()) {
            self.list.extend(store.document(id)?);
        }
        Ok(())
    }
}

/// Whether index `name`'s consecutive children share text.
fn overlaps(store: &Store, name: &str) -> Result<bool, EvalError> {
    Ok(store
        .indexes()
        .list()?
        .iter()
        .find(|i| i.name == name)
        .is_some_and(|i| i.spec.child.overlap() > 0))
}

/// A response on the corpus: a unit whose text is not the current text at its span (an
/// older revision of its document) keeps its key but gets an empty span, so it never
/// counts as evidence.
fn version_answer(response: SearchResponse, corpus: &Corpus) -> VersionAnswer {
    let mut units = Vec::with_capacity(response.results.len());
    let mut keys = Vec::with_capacity(response.results.len());
    for hit in response.results {
        keys.push(UnitKey {
            doc_id: hit.doc_id.clone(),
            start: hit.start,
            end: hit.end,
        });
        let Some(doc) = corpus.index_of(&hit.doc_id) else {
            continue;
        };
        let source = &corpus.docs()[doc];
        let current = source
            .text
            .get(hit.start..hit.end)
            .is_some_and(|s| folio::chunk::visible_text_of(s, source.format) == hit.text);
        units.push(Unit {
            doc,
            start: if current { hit.start } else { 0 },
            end: if current { hit.end } else { 0 },
            tokens: hit.tokens,
            score: hit.score,
            children: if current {
                hit.children.iter().map(|c| (c.start, c.end)).collect()
            } else {
                Vec::new()
            },
        });
    }
    VersionAnswer {
        index: response.index,
        version: response.version,
        answer: Answer {
            units,
            millis: response.stats.micros as f64 / 1000.0,
            stages: response.stats.stage_micros,
        },
        units: keys,
    }
}
