//! The query path's stages (issue 29, item 3) answer as the documented semantics say: a
//! reference computed here from an exhaustive ranking of the visible children (grouped by
//! unit with the max score, expanded, merged, deduplicated, budgeted) equals what
//! `Store::search` returns, whatever the widening the collector went through, what
//! `Store::search_through` returns from a source that ranks the same way, or that ranks
//! differently at each ask (the collector then groups the last ranking again), and what
//! `folio::query::search_ranked` returns over the same ranking and the snapshot's records.
//!
//! What [`folio::Hit::children`] guarantees, asserted below: the unit's children that the
//! search took, best first (equal scores in index order), the best one first with the
//! hit's score; that is every visible child of the unit (and of the units merged into it)
//! ranked before the point where the search stopped, the best child of the `k`-th unit
//! taken (every visible child when fewer units were found).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use folio::chunk::{ChildPiece, Chunked, ParentPiece, SourceFormat, Span};
use folio::document::Document;
use folio::embed::{default_embedder, Embedder};
use folio::index::{merge_top_k, ChildSearch, Neighbor, SearchOptions, Strategy as Path};
use folio::query::{
    search_ranked, Ask, Candidate, ChildSource, Chunks, Expand, QueryError, Rank,
    Ranked as RankedAt, SearchRequest, SourceError,
};
use folio::store::{
    Access, ChunkRanges, DocView, IndexState, Snapshot, Store, StoredChild, StoredParent,
};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "deploy", "rollback", "budget", "hotel", "vacation", "kernel", "invoice", "laptop", "badge",
    "incident", "travel", "salary", "cluster", "backup", "office", "printer",
];
const PRINCIPALS: &[&str] = &["alice", "eng", "finance"];
const SECTIONS: &[&str] = &["Intro", "Usage", "Notes"];

/// One document as generated: its parents (section and sentences) and its ACL. Every
/// child is one sentence; a parent holds its sentences, one section heading each.
#[derive(Debug, Clone)]
struct DocSpec {
    parents: Vec<(usize, Vec<String>)>,
    acl: Vec<String>,
}

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 2..9).prop_map(|w| w.join(" ") + ".")
}

/// 8 to 16 children, cut into 1 to 4 parents of consecutive sentences.
fn doc_spec() -> impl Strategy<Value = DocSpec> {
    (
        prop::collection::vec(sentence(), 8..=16),
        prop::collection::vec((0..SECTIONS.len(), 1usize..6), 1..=4),
        prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3),
    )
        .prop_map(|(sentences, cuts, acl)| {
            let mut parents = Vec::new();
            let mut rest = sentences.as_slice();
            for (i, (section, size)) in cuts.iter().enumerate() {
                let last = i + 1 == cuts.len();
                let take = if last {
                    rest.len()
                } else {
                    (*size).min(rest.len())
                };
                if take == 0 {
                    continue;
                }
                parents.push((*section, rest[..take].to_vec()));
                rest = &rest[take..];
            }
            DocSpec {
                parents,
                acl: acl.into_iter().map(String::from).collect(),
            }
        })
}

/// A stored document as the reference sees it: text, parents and children with spans.
#[derive(Debug, Clone)]
struct Model {
    doc_id: String,
    text: String,
    acl: Vec<String>,
    /// Span and section path.
    parents: Vec<(Span, Vec<String>)>,
    /// Span and parent ordinal.
    children: Vec<(Span, usize)>,
}

impl Model {
    fn of(doc_id: String, spec: &DocSpec) -> Model {
        let mut text = String::new();
        let (mut parents, mut children) = (Vec::new(), Vec::new());
        for (p, (section, sentences)) in spec.parents.iter().enumerate() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            let start = text.len();
            for (i, s) in sentences.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                let at = text.len();
                text.push_str(s);
                children.push((
                    Span {
                        start: at,
                        end: text.len(),
                    },
                    p,
                ));
            }
            let span = Span {
                start,
                end: text.len(),
            };
            parents.push((span, vec![SECTIONS[*section].to_string()]));
        }
        Model {
            doc_id,
            text,
            acl: spec.acl.clone(),
            parents,
            children,
        }
    }

    fn chunked(&self) -> Chunked {
        Chunked {
            parents: self
                .parents
                .iter()
                .map(|(span, path)| ParentPiece {
                    span: *span,
                    section_path: path.clone(),
                })
                .collect(),
            children: self
                .children
                .iter()
                .map(|(span, parent)| ChildPiece {
                    span: *span,
                    parent: *parent,
                    section_path: self.parents[*parent].1.clone(),
                    oversized: false,
                })
                .collect(),
        }
    }

    fn visible_to(&self, principals: &[String]) -> bool {
        self.acl.is_empty() || self.acl.iter().any(|p| principals.contains(p))
    }
}

/// A store holding `models` (ingested in two batches, so in two segments when `split`
/// falls inside), and each child number's document and ordinal.
fn store_of(
    dir: &tempfile::TempDir,
    models: &[Model],
    split: usize,
) -> (Store, HashMap<u32, (usize, usize)>) {
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("s.folio"))
        .expect("create");
    for part in [
        &models[..split.min(models.len())],
        &models[split.min(models.len())..],
    ] {
        if part.is_empty() {
            continue;
        }
        let mut batch = store.batch();
        for m in part {
            let doc = Document::new(m.doc_id.clone(), SourceFormat::Text, m.text.clone())
                .with_acl(m.acl.clone());
            batch.upsert_chunked(doc, m.chunked());
        }
        batch.commit().expect("commit");
    }
    let mut numbers = HashMap::new();
    for (d, m) in models.iter().enumerate() {
        let chunks = store.chunks("default", &m.doc_id).expect("chunks");
        assert_eq!(chunks.len(), m.children.len(), "stored as cut");
        for (ordinal, c) in chunks.iter().enumerate() {
            assert_eq!(c.chunk_id, format!("{}#c{ordinal}", m.doc_id));
            numbers.insert(c.number, (d, ordinal));
        }
    }
    (store, numbers)
}

/// Every visible child of the `default` index for `query`, best first (equal scores by
/// child number), scored by the store's own segments with an exact scan.
fn exhaustive_ranking(store: &Store, query: &str, access: &Access) -> Vec<Neighbor> {
    let embedder = default_embedder();
    // Raw, as the store gets it: `search_with` normalises it once, as the store does.
    let q = embedder.embed_queries(&[query]).expect("embed");
    let visible = store.visible("default", access).expect("visible");
    let all = visible.len() as usize;
    let vectors = store.vectors("default").expect("vectors");
    let options = SearchOptions {
        k: all,
        ef: None,
        strategy: Path::Exact,
    };
    let lists = vectors.segments.iter().map(|segment| {
        segment
            .search_with(&q, &visible, options)
            .expect("exact scan")
            .0
    });
    let ranking = merge_top_k(lists.collect::<Vec<_>>(), all);
    assert_eq!(ranking.len(), all, "every visible child ranked");
    ranking
}

/// Word 3-shingles (lowercased; character trigrams for texts of fewer than 6 words), as
/// the near-duplicate check documents them.
fn shingles(text: &str) -> HashSet<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() >= 6 {
        words.windows(3).map(|w| w.join(" ")).collect()
    } else {
        let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        chars.windows(3).map(|w| w.iter().collect()).collect()
    }
}

fn near_duplicate(a: &str, b: &str, threshold: f32) -> bool {
    let (sa, sb) = (shingles(a), shingles(b));
    if sa.is_empty() || sb.is_empty() {
        return a.trim() == b.trim();
    }
    let inter = sa.intersection(&sb).count();
    let union = sa.len() + sb.len() - inter;
    inter as f32 / union as f32 >= threshold
}

/// A hit as the reference computes it; `children` are `(chunk id, score)`.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    doc_id: String,
    parent_id: String,
    section_path: Vec<String>,
    start: usize,
    end: usize,
    score: f32,
    text: String,
    tokens: usize,
    children: Vec<(String, f32)>,
}

/// What the search should answer from `ranking` (best first): units taken in order of
/// their best child; each merged into an accepted unit of its document it overlaps,
/// dropped as a near-duplicate of an accepted one, skipped when the budget has no room,
/// or accepted; the search stops when `k` units were accepted or skipped for the budget
/// (`k` clamped to the visible children). Also the number of near-duplicates dropped.
fn reference(
    models: &[Model],
    numbers: &HashMap<u32, (usize, usize)>,
    ranking: &[Neighbor],
    request: &SearchRequest,
    visible: usize,
) -> (Vec<Expected>, usize) {
    #[derive(Clone, Copy)]
    enum Fate {
        Hit(usize),
        Gone,
    }
    let k = request.k.min(visible);
    let (mut hits, mut fates) = (Vec::<Expected>::new(), HashMap::new());
    let (mut spent, mut over, mut duplicates) = (0, 0, 0);
    for n in ranking {
        if hits.len() + over >= k {
            break;
        }
        let (d, ordinal) = numbers[&n.id];
        let m = &models[d];
        let parent = m.children[ordinal].1;
        let key = match request.expand {
            Expand::Parent | Expand::Section => (d, parent),
            Expand::Window(_) => (d, ordinal),
        };
        let fate = match fates.get(&key) {
            Some(&fate) => fate,
            None => {
                let path = m.parents[parent].1.clone();
                let (start, end) = match request.expand {
                    Expand::Parent => (m.parents[parent].0.start, m.parents[parent].0.end),
                    Expand::Section => {
                        let same = |p: &usize| m.parents[*p].1 == path;
                        let first = (0..=parent).rev().take_while(same).last().unwrap();
                        let last = (parent..m.parents.len()).take_while(same).last().unwrap();
                        (m.parents[first].0.start, m.parents[last].0.end)
                    }
                    Expand::Window(w) => {
                        let first = ordinal.saturating_sub(w);
                        let last = (ordinal + w).min(m.children.len() - 1);
                        (m.children[first].0.start, m.children[last].0.end)
                    }
                };
                let text = m.text[start..end].to_string();
                let tokens = folio::tokens::count(&text);
                let fate = if let Some(i) = hits
                    .iter()
                    .position(|h| h.doc_id == m.doc_id && h.start < end && start < h.end)
                {
                    Fate::Hit(i)
                } else if request
                    .dedup
                    .is_some_and(|t| hits.iter().any(|h| near_duplicate(&h.text, &text, t)))
                {
                    duplicates += 1;
                    Fate::Gone
                } else if request.token_budget.is_some_and(|b| spent + tokens > b) {
                    over += 1;
                    Fate::Gone
                } else {
                    spent += tokens;
                    hits.push(Expected {
                        doc_id: m.doc_id.clone(),
                        parent_id: format!("{}#p{parent}", m.doc_id),
                        section_path: path,
                        start,
                        end,
                        score: n.score,
                        text,
                        tokens,
                        children: Vec::new(),
                    });
                    Fate::Hit(hits.len() - 1)
                };
                fates.insert(key, fate);
                fate
            }
        };
        if let Fate::Hit(i) = fate {
            hits[i]
                .children
                .push((format!("{}#c{ordinal}", m.doc_id), n.score));
        }
    }
    (hits, duplicates)
}

fn answer(response: &folio::SearchResponse) -> Vec<Expected> {
    response
        .results
        .iter()
        .map(|h| Expected {
            doc_id: h.doc_id.clone(),
            parent_id: h.parent_id.clone(),
            section_path: h.section_path.clone(),
            start: h.start,
            end: h.end,
            score: h.score,
            text: h.text.clone(),
            tokens: h.tokens,
            children: h
                .children
                .iter()
                .map(|c| (c.chunk_id.clone(), c.score))
                .collect(),
        })
        .collect()
}

/// A source that ranks the visible children as `ranking` does, scores moved by `jitter`
/// (a function of the child and of how many were asked for, so that each ask may order
/// them differently); it remembers its last answer.
struct Ranked<'a> {
    ranking: &'a [Neighbor],
    chunk_ids: &'a HashMap<u32, String>,
    jitter: fn(u32, usize) -> f32,
    asks: usize,
    last: Vec<Neighbor>,
}

impl ChildSource for Ranked<'_> {
    fn name(&self) -> &str {
        "ranked"
    }

    fn children(&mut self, ask: &Ask<'_>) -> Result<Vec<Candidate>, SourceError> {
        self.asks += 1;
        let mut moved: Vec<Neighbor> = self
            .ranking
            .iter()
            .map(|n| Neighbor {
                id: n.id,
                score: n.score + (self.jitter)(n.id, ask.wanted()),
            })
            .collect();
        moved.sort_by(Neighbor::rank);
        moved.truncate(ask.wanted());
        self.last = moved.clone();
        Ok(moved
            .into_iter()
            .map(|n| Candidate {
                child: n.id,
                chunk_id: self.chunk_ids[&n.id].clone(),
                score: n.score,
            })
            .collect())
    }
}

/// A ranking given whole, asked for its best `wanted`.
struct Fixed<'a>(&'a [Neighbor]);

impl Rank for Fixed<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        Ok(ChildSearch {
            neighbors: self.0.iter().take(wanted).copied().collect(),
            paths: Vec::new(),
            distances: 0,
            rescored: 0,
            lists: 0,
        })
    }
}

/// The records of one index read through a snapshot's public reads: a `Chunks` of the
/// caller's own.
struct Records<'a> {
    snapshot: &'a Snapshot<'a>,
    state: &'a IndexState,
}

impl Chunks for Records<'_> {
    fn child(&self, number: u32) -> Result<Rc<StoredChild>, QueryError> {
        Ok(Rc::new(self.snapshot.child(self.state, number)?))
    }

    fn parent(&self, number: u32) -> Result<StoredParent, QueryError> {
        Ok(self.snapshot.parent(self.state, number)?)
    }

    fn chunk_ranges(&self, child: &StoredChild) -> Result<ChunkRanges, QueryError> {
        Ok(self.snapshot.chunk_ranges(self.state, child)?)
    }

    fn doc(&self, rev: u64) -> Result<Rc<DocView>, QueryError> {
        Ok(self.snapshot.doc(rev)?)
    }
}

fn no_jitter(_: u32, _: usize) -> f32 {
    0.0
}

/// Reorders the children at each ask (by a hash of the child and the ask's size).
fn reordering(child: u32, wanted: usize) -> f32 {
    let h = (child as usize).wrapping_mul(2_654_435_761) ^ wanted.wrapping_mul(40_503);
    (h % 1000) as f32 * 1e-4
}

fn expand() -> impl Strategy<Value = Expand> {
    prop_oneof![
        Just(Expand::Parent),
        Just(Expand::Section),
        (0usize..3).prop_map(Expand::Window),
    ]
}

/// The knobs of one request: query words, principals, `k`, expansion, budget, dedup
/// threshold, first gathering.
type Knobs = (
    Vec<&'static str>,
    BTreeSet<&'static str>,
    usize,
    Expand,
    Option<usize>,
    Option<f32>,
    Option<usize>,
);

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        prop::collection::vec(prop::sample::select(WORDS), 1..4),
        prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3),
        0usize..24,
        expand(),
        prop::option::of(0usize..160),
        prop::option::of(prop::sample::select(vec![0.3f32, 0.6, 0.9, 1.0])),
        prop::option::of(1usize..12),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Over random stores whose documents have 8 to 16 children (copies of one another
    /// now and then, so near-duplicates and equal scores occur), and random `k`,
    /// expansions, budgets, dedup thresholds, principals and first gatherings: with the
    /// dense leg exact (fewer children than a graph is built for, so the planner scans),
    /// `search` answers what the reference computes from the exhaustive ranking, units,
    /// their order and their children alike; no hidden chunk appears; `search_through` a
    /// source ranking the same way answers the same, and through a source that orders the
    /// children differently at each ask, it answers what the reference computes from the
    /// source's last ranking.
    #[test]
    fn search_answers_as_the_exhaustive_reference(
        specs in prop::collection::vec(doc_spec(), 1..10),
        copies in prop::collection::vec((0usize..10, 0usize..10), 0..4),
        split in 0usize..14,
        requests in prop::collection::vec(knobs(), 1..5),
    ) {
        let mut specs = specs;
        for (from, to) in copies {
            if from < specs.len() && to < specs.len() {
                // The same text and cut under another id (and ACL).
                specs[to].parents = specs[from].parents.clone();
            }
        }
        let models: Vec<Model> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| Model::of(format!("doc{i}"), spec))
            .collect();
        let dir = tempfile::tempdir().expect("temp dir");
        let (store, numbers) = store_of(&dir, &models, split);
        let chunk_ids: HashMap<u32, String> = numbers
            .iter()
            .map(|(&n, &(d, o))| (n, format!("{}#c{o}", models[d].doc_id)))
            .collect();

        for (words, principals, k, expand, budget, dedup, children) in requests {
            let principals: Vec<String> = principals.into_iter().map(String::from).collect();
            let query = words.join(" ");
            let mut request = SearchRequest::text(&query)
                .as_principals(principals.clone())
                .k(k)
                .expand(expand)
                .ef(4096);
            request.token_budget = budget;
            request.dedup = dedup;
            request.children = children;
            let access = request.access.clone();

            let ranking = exhaustive_ranking(&store, &query, &access);
            let visible: BTreeSet<u32> = numbers
                .iter()
                .filter(|(_, (d, _))| models[*d].visible_to(&principals))
                .map(|(&n, _)| n)
                .collect();
            prop_assert_eq!(
                ranking.iter().map(|n| n.id).collect::<BTreeSet<_>>(),
                visible.clone(),
                "the ranking covers the visible children"
            );
            let (expected, duplicates) =
                reference(&models, &numbers, &ranking, &request, visible.len());

            let response = store.search(&request).expect("search");
            let got = answer(&response);
            prop_assert_eq!(&got, &expected, "k {} {:?} budget {:?} dedup {:?}", k, expand, budget, dedup);
            prop_assert_eq!(response.stats.duplicates_dropped, duplicates);
            for hit in &response.results {
                let n: usize = hit.doc_id.trim_start_matches("doc").parse().expect("doc number");
                prop_assert!(models[n].visible_to(&principals), "hidden {} returned", hit.doc_id);
                // What `Hit::children` guarantees (besides being the reference's): the
                // best child first, with the unit's score, the others best first, each a
                // child of this document, none twice. (A window merged into a better one
                // brings children that may lie outside the better one's text.)
                let first = hit.children.first().expect("a unit has its best child");
                prop_assert_eq!(first.score, hit.score);
                prop_assert!(hit.children.windows(2).all(|w| w[0].score >= w[1].score));
                let ids: BTreeSet<&str> = hit.children.iter().map(|c| c.chunk_id.as_str()).collect();
                prop_assert_eq!(ids.len(), hit.children.len());
                for c in &hit.children {
                    let prefix = format!("{}#c", hit.doc_id);
                    prop_assert!(c.chunk_id.starts_with(&prefix), "{} in {}", c.chunk_id, hit.doc_id);
                }
            }

            // The same ranking from elsewhere: the same answer.
            let mut same = Ranked {
                ranking: &ranking,
                chunk_ids: &chunk_ids,
                jitter: no_jitter,
                asks: 0,
                last: Vec::new(),
            };
            let through = store.search_through(&request, &mut same).expect("search through");
            prop_assert_eq!(answer(&through), expected.clone());

            // The stages alone (`search_ranked`), over the same ranking and the records
            // read through a snapshot, as an engine holding both elsewhere calls them.
            let snapshot = store.snapshot().expect("snapshot");
            let (state, view) = snapshot.resolve("default").expect("resolve");
            let records = Records { snapshot: &snapshot, state: &state };
            let at = RankedAt {
                index: "default",
                version: view.version(),
                visible: visible.len() as u64,
            };
            let ranked = search_ranked(&request, &mut Fixed(&ranking), &records, at)
                .expect("search ranked");
            prop_assert_eq!(answer(&ranked), expected);
            prop_assert_eq!((ranked.index.as_str(), ranked.version), ("default", view.version()));

            // A ranking that changes at each ask: the answer of the last one.
            let mut moving = Ranked {
                ranking: &ranking,
                chunk_ids: &chunk_ids,
                jitter: reordering,
                asks: 0,
                last: Vec::new(),
            };
            let through = store.search_through(&request, &mut moving).expect("search through");
            let (expected, duplicates) =
                reference(&models, &numbers, &moving.last, &request, visible.len());
            prop_assert_eq!(answer(&through), expected, "after {} asks", moving.asks);
            prop_assert_eq!(through.stats.duplicates_dropped, duplicates);
        }
    }
}

/// Documents of 12 children in one parent each, `k` 12 with the parent as unit: the first
/// gathering (48 children) holds 4 parents, so the collector widens, and the answer still
/// equals the reference.
#[test]
fn a_widening_answers_as_the_reference() {
    // Document `i`'s children all score alike, and below those of document `i - 1`: the
    // best 48 children are those of 4 documents.
    let spec = |i: usize| DocSpec {
        parents: vec![(
            0,
            vec![format!("deploy budget{}.", " hotel".repeat(i + 1)); 12],
        )],
        acl: Vec::new(),
    };
    let models: Vec<Model> = (0..40)
        .map(|i| Model::of(format!("doc{i}"), &spec(i)))
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, numbers) = store_of(&dir, &models, 40);
    let request = SearchRequest::text("deploy budget")
        .k(12)
        .no_dedup()
        .expand(Expand::Parent);
    let ranking = exhaustive_ranking(&store, "deploy budget", &request.access);
    let (expected, _) = reference(&models, &numbers, &ranking, &request, ranking.len());
    let response = store.search(&request).expect("search");
    assert_eq!(expected.len(), 12);
    assert_eq!(answer(&response), expected);
    assert!(
        response.stats.children_gathered > 48,
        "no widening: {} children",
        response.stats.children_gathered
    );
}
