//! An oracle for replays between versions: what `VersionReplay` must report, computed from
//! the test's own searches with the definitions of `docs/evaluation.md` ("Replay labels",
//! "Replay between versions"). Shared by `replay_versions.rs` and `loop_e2e.rs`; both build
//! their indexes with children that do not overlap (`fixed:500`, `parent-child:1200/300`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use folio::store::{GraphParams, IndexConfig, IndexEmbedder, Store};
use folio::{Document, SearchRequest, SearchResponse};
use folio_eval::{StrategyKind, VersionReport};

fn spec(strategy: &str) -> folio::ChunkSpec {
    match folio_eval::Strategy::parse(strategy).unwrap().kind {
        StrategyKind::Builtin { spec, .. } => spec,
        StrategyKind::External { .. } => unreachable!(),
    }
}

/// Writes `docs`, then builds the two indexes the replay tests compare: `kb` (`fixed:500`)
/// and `kb_pc` (`parent-child:1200/300`).
pub fn ingest_kb_and_kb_pc(store: &Store, docs: impl IntoIterator<Item = Document>) {
    let mut batch = store.batch();
    for doc in docs {
        batch.upsert(doc);
    }
    batch.commit().unwrap();
    store
        .indexes()
        .create("kb", config(store, "fixed:500"))
        .unwrap();
    store
        .indexes()
        .create("kb_pc", config(store, "parent-child:1200/300"))
        .unwrap();
}

/// An index of `strategy` with the store's registered embedder.
pub fn config(store: &Store, strategy: &str) -> IndexConfig {
    let embedder = store.indexes().list().unwrap()[0].embedder.name.clone();
    IndexConfig {
        spec: spec(strategy),
        embedder: IndexEmbedder::Registered(embedder),
        graph: GraphParams::default(),
        vectors: Default::default(),
        lexical: Default::default(),
    }
}

pub type Range = (usize, usize);

/// Merged ranges of one document.
fn union(mut ranges: Vec<Range>) -> Vec<Range> {
    ranges.sort_unstable();
    let mut out: Vec<Range> = Vec::new();
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

pub struct Seen {
    /// The index that answered.
    pub index: String,
    /// (doc, start, end) of the top-k units.
    pub units: Vec<(String, usize, usize)>,
    /// Matched children per unit.
    pub children: Vec<Vec<Range>>,
    pub tokens: usize,
}

pub fn seen(response: &SearchResponse) -> Seen {
    Seen {
        index: response.index.clone(),
        units: response
            .results
            .iter()
            .map(|h| (h.doc_id.clone(), h.start, h.end))
            .collect(),
        children: response
            .results
            .iter()
            .map(|h| h.children.iter().map(|c| (c.start, c.end)).collect())
            .collect(),
        tokens: response.results.iter().map(|h| h.tokens).sum(),
    }
}

pub fn holds(unit: &(String, usize, usize), doc: &str, s: usize, e: usize) -> bool {
    unit.0 == doc && unit.1 <= s && e <= unit.2
}

/// (full, hit, rank) of one gold span.
pub fn outcome(seen: &Seen, gold: (&str, usize, usize)) -> (bool, bool, Option<usize>) {
    let (doc, s, e) = gold;
    let rank = seen
        .units
        .iter()
        .position(|u| holds(u, doc, s, e))
        .map(|r| r + 1);
    let merged = union(
        seen.units
            .iter()
            .filter(|u| u.0 == doc)
            .map(|u| (u.1, u.2))
            .collect(),
    );
    let full = merged.iter().any(|&(a, b)| a <= s && e <= b);
    (full, rank.is_some(), rank)
}

/// The labels of the worse side losing `gold`; `units` are the worse side's parents in the
/// gold document.
pub fn labels(
    gold: (&str, usize, usize),
    worse_units: &[Range],
    worse_overlap: bool,
    better: &Seen,
) -> Vec<&'static str> {
    let (doc, s, e) = gold;
    let mut out = Vec::new();
    let whole = worse_units.iter().any(|&(a, b)| a <= s && e <= b);
    let meets = worse_units.iter().filter(|&&(a, b)| a < e && s < b).count();
    if !whole {
        out.push(if meets >= 3 {
            "chunk_too_small"
        } else if worse_overlap {
            "overlap_insufficient"
        } else {
            "split_breaks_evidence"
        });
    } else {
        let holder = worse_units
            .iter()
            .filter(|&&(a, b)| a <= s && e <= b)
            .map(|(a, b)| b - a)
            .min()
            .unwrap();
        let longest = better
            .units
            .iter()
            .filter(|u| u.0 == doc && u.1 < e && s < u.2)
            .map(|u| u.2 - u.1)
            .max()
            .unwrap_or(0);
        if (e - s) * 4 <= holder && holder > longest {
            out.push("chunk_too_large");
        }
    }
    let filled = better.units.iter().zip(&better.children).any(|(u, kids)| {
        holds(u, doc, s, e) && !kids.is_empty() && !kids.iter().any(|&(a, b)| a <= s && e <= b)
    });
    if filled {
        out.push("parent_fill_works");
    }
    if out.is_empty() {
        out.push("ranking");
    }
    out.sort_unstable_by_key(|l| {
        [
            "split_breaks_evidence",
            "overlap_insufficient",
            "chunk_too_small",
            "chunk_too_large",
            "parent_fill_works",
            "ranking",
        ]
        .iter()
        .position(|x| x == l)
    });
    out
}

fn parents(store: &Store, index: &str, doc: &str) -> Vec<Range> {
    let document = store.document(doc).unwrap().unwrap();
    let chunked = store.plan_chunked(index, &document).unwrap();
    chunked
        .parents
        .iter()
        .map(|p| (p.span.start, p.span.end))
        .collect()
}

#[derive(Debug, Default, PartialEq)]
pub struct Expected {
    pub improved: usize,
    pub worsened: usize,
    pub labels_worsened: BTreeMap<String, usize>,
    pub full: [usize; 2],
    pub span_hits: [usize; 2],
    pub doc_hits: [usize; 2],
    pub token_change: i64,
    pub appeared: usize,
    pub disappeared: usize,
}

/// What the replay of `targets[0]` against `targets[1]` must report at k for the questions
/// of `path`, from searches made here as each question's principals; and each question's
/// labels (`None` without a difference).
pub fn expected(
    store: &Store,
    path: &Path,
    k: usize,
    targets: [&str; 2],
) -> (Expected, Vec<Option<Vec<&'static str>>>) {
    let mut out = Expected::default();
    let mut per_question = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        let principals: Vec<String> = serde_json::from_value(q["principals"].clone()).unwrap();
        let ask = |target: &str| {
            seen(
                &store
                    .search(
                        &SearchRequest::text(q["query"].as_str().unwrap())
                            .as_principals(principals.clone())
                            .k(k)
                            .target(target)
                            .no_dedup(),
                    )
                    .unwrap(),
            )
        };
        let (a, b) = (ask(targets[0]), ask(targets[1]));
        let doc_ids: Vec<String> = serde_json::from_value(q["doc_ids"].clone()).unwrap();
        for (i, side) in [&a, &b].into_iter().enumerate() {
            out.doc_hits[i] += usize::from(side.units.iter().any(|u| doc_ids.contains(&u.0)));
        }
        let docs = |s: &Seen| s.units.iter().map(|u| u.0.clone()).collect::<BTreeSet<_>>();
        out.appeared += docs(&b).difference(&docs(&a)).count();
        out.disappeared += docs(&a).difference(&docs(&b)).count();
        out.token_change += b.tokens as i64 - a.tokens as i64;
        let gold = &q["gold_spans"][0];
        if gold.is_null() {
            per_question.push(None);
            continue;
        }
        let doc = gold["doc_id"].as_str().unwrap();
        let g = (
            doc,
            gold["start_byte"].as_u64().unwrap() as usize,
            gold["end_byte"].as_u64().unwrap() as usize,
        );
        let (oa, ob) = (outcome(&a, g), outcome(&b, g));
        for (i, o) in [oa, ob].into_iter().enumerate() {
            out.full[i] += usize::from(o.0);
            out.span_hits[i] += usize::from(o.1);
        }
        let (ka, kb) = ((oa.0, oa.1), (ob.0, ob.1));
        if ka == kb {
            per_question.push(None);
            continue;
        }
        let (better, worse, worse_is_b) = if kb > ka {
            (&b, &a, false)
        } else {
            (&a, &b, true)
        };
        let found = labels(g, &parents(store, &worse.index, doc), false, better);
        if worse_is_b {
            out.worsened += 1;
            for l in &found {
                *out.labels_worsened.entry(l.to_string()).or_insert(0) += 1;
            }
        } else {
            out.improved += 1;
        }
        per_question.push(Some(found));
    }
    (out, per_question)
}

pub fn observed(report: &VersionReport) -> Expected {
    let pair = &report.pairs[0];
    let t = &report.totals;
    Expected {
        improved: pair.improved,
        worsened: pair.worsened,
        labels_worsened: pair
            .labels_worsened
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(l, n)| (l.to_string(), *n))
            .collect(),
        full: [t[0].full, t[1].full],
        span_hits: [t[0].span_hits, t[1].span_hits],
        doc_hits: [t[0].doc_hits, t[1].doc_hits],
        token_change: report
            .questions
            .iter()
            .map(|q| q.changes[0].token_change)
            .sum(),
        appeared: pair.appeared,
        disappeared: pair.disappeared,
    }
}
