//! Property test: metadata filters against a brute-force oracle. Random documents (random
//! typed metadata, `updated_at`, heading and ACL) are written in two batches (the second
//! re-types, deletes and re-shares some); random filter expressions are searched as random
//! principals at the head and at the first version. No hit lies outside filter ∩ visible,
//! the answer holds `min(k, matching ∩ visible)` units, and they are the best ones (the
//! store has no graph, so the exact ranking is known).

use std::collections::{BTreeMap, BTreeSet};

use folio::filter::{parse_date, Attributes, Filter};
use folio::query::SearchRequest;
use folio::store::{Access, Store};
use folio::{Document, MetadataValue, SourceFormat};
use folio_testkit::versions::small_options;
use proptest::prelude::*;

const DOCS: usize = 16;
const PRINCIPALS: &[&str] = &["a", "b"];
const WORDS: &[&str] = &["falcon", "budget", "memo", "hotel", "printer", "badge"];
const HEADINGS: &[&str] = &["Refunds", "Refunds policy", "Fees", "Cards"];
const CATEGORIES: &[&str] = &["billing", "cards", "loans"];
const TAGS: &[&str] = &["faq", "new", "legal"];
const DATES: &[&str] = &["2023-01-15", "2024-01-01", "2024-06-30T12:00:00Z"];

/// One document as the test writes it.
#[derive(Debug, Clone)]
struct Doc {
    words: Vec<&'static str>,
    heading: &'static str,
    acl: Vec<&'static str>,
    updated_at: Option<&'static str>,
    metadata: BTreeMap<String, MetadataValue>,
}

impl Doc {
    fn document(&self, id: &str) -> Document {
        let text = format!("# {}\n\n{}.\n", self.heading, self.words.join(" "));
        let mut doc = Document::new(id, SourceFormat::Markdown, text).with_acl(self.acl.clone());
        doc.updated_at = self.updated_at.map(str::to_string);
        doc.metadata = self.metadata.clone();
        doc
    }

    fn matches(&self, id: &str, filter: &Filter) -> bool {
        let path = [self.heading.to_string()];
        filter.matches(&Attributes {
            doc_id: id,
            title: "",
            source_uri: "",
            published_at: None,
            updated_at: self.updated_at,
            metadata: &self.metadata,
            section_path: &path,
        })
    }

    fn admits(&self, who: &[&str]) -> bool {
        self.acl.is_empty() || self.acl.iter().any(|p| who.contains(p))
    }
}

fn id(i: usize) -> String {
    format!("d{i}")
}

fn metadata() -> impl Strategy<Value = BTreeMap<String, MetadataValue>> {
    (
        prop::option::of(prop::sample::select(CATEGORIES)),
        prop::option::of(0..5i32),
        prop::option::of(any::<bool>()),
        prop::option::of(prop::sample::select(DATES)),
        prop::option::of(prop::collection::btree_set(
            prop::sample::select(TAGS),
            0..3,
        )),
    )
        .prop_map(|(category, n, flag, date, tags)| {
            let mut m = BTreeMap::new();
            if let Some(c) = category {
                m.insert("category".into(), MetadataValue::String(c.into()));
            }
            if let Some(n) = n {
                m.insert("n".into(), MetadataValue::Number(f64::from(n)));
            }
            if let Some(b) = flag {
                m.insert("flag".into(), MetadataValue::Bool(b));
            }
            if let Some(d) = date {
                m.insert(
                    "reviewed".into(),
                    MetadataValue::Date(parse_date(d).unwrap()),
                );
            }
            if let Some(tags) = tags {
                let tags = tags.into_iter().map(str::to_string).collect();
                m.insert("tags".into(), MetadataValue::List(tags));
            }
            m
        })
}

fn doc() -> impl Strategy<Value = Doc> {
    (
        prop::collection::vec(prop::sample::select(WORDS), 2..5),
        prop::sample::select(HEADINGS),
        prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..2),
        prop::option::of(prop::sample::select(DATES)),
        metadata(),
    )
        .prop_map(|(words, heading, acl, updated_at, metadata)| Doc {
            words,
            heading,
            acl: acl.into_iter().collect(),
            updated_at,
            metadata,
        })
}

/// A change the second batch makes to document `i`.
#[derive(Debug, Clone)]
enum Change {
    Replace(usize, Doc),
    Delete(usize),
    Share(usize, Vec<&'static str>),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0..DOCS, doc()).prop_map(|(i, d)| Change::Replace(i, d)),
        (0..DOCS).prop_map(Change::Delete),
        (
            0..DOCS,
            prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..2)
        )
            .prop_map(|(i, acl)| Change::Share(i, acl.into_iter().collect())),
    ]
}

/// One test of the language, as text.
fn test_text() -> impl Strategy<Value = String> {
    let quoted = |values: &'static [&'static str]| {
        prop::sample::select(values).prop_map(|v| format!("{v:?}"))
    };
    let cmp = prop::sample::select(&["=", "!=", "<", "<=", ">", ">="][..]);
    prop_oneof![
        (quoted(CATEGORIES), cmp.clone()).prop_map(|(v, op)| format!("category {op} {v}")),
        (0..5i32, cmp.clone()).prop_map(|(v, op)| format!("n {op} {v}")),
        any::<bool>().prop_map(|b| format!("flag = {b}")),
        (prop::sample::select(DATES), cmp.clone()).prop_map(|(d, op)| format!("reviewed {op} {d}")),
        (prop::sample::select(DATES), cmp).prop_map(|(d, op)| format!("updated_at {op} {d}")),
        quoted(TAGS).prop_map(|t| format!("tags contains {t}")),
        (quoted(TAGS), quoted(TAGS)).prop_map(|(a, b)| format!("tags in [{a}, {b}]")),
        prop::sample::select(&["Refunds", "Ref", "Cards", "F"][..])
            .prop_map(|p| format!("section_path ^= {p:?}")),
        (0..DOCS, 0..DOCS).prop_map(|(a, b)| format!("doc_id in [\"d{a}\", \"d{b}\"]")),
        prop::sample::select(&["category", "n", "flag", "tags", "reviewed", "updated_at"][..])
            .prop_map(|f| format!("{f} exists")),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    test_text().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
            inner.prop_map(|a| format!("not ({a})")),
        ]
    })
}

/// Every unit of `target` by score, best first, as (doc_id, score): the ranking the
/// filtered answer must be the best part of.
fn ranking(store: &Store, target: &str, query: &str) -> Vec<(String, f32)> {
    let request = SearchRequest::text(query)
        .access(Access::Unrestricted)
        .target(target)
        .k(1000)
        .no_dedup();
    let response = store.search(&request).expect("search");
    response
        .results
        .into_iter()
        .map(|h| (h.doc_id, h.score))
        .collect()
}

fn check(
    store: &Store,
    target: &str,
    query: &str,
    who: &[&str],
    k: usize,
    filter: &Filter,
    allowed: &BTreeSet<String>,
) -> Result<(), TestCaseError> {
    let request = SearchRequest::text(query)
        .as_principals(who.iter().copied())
        .target(target)
        .k(k)
        .no_dedup()
        .filter(filter.clone());
    let response = store.search(&request).expect("search");
    let got: Vec<(String, f32)> = response
        .results
        .iter()
        .map(|h| (h.doc_id.clone(), h.score))
        .collect();
    for (doc_id, _) in &got {
        prop_assert!(
            allowed.contains(doc_id),
            "{target} {filter}: {doc_id} returned"
        );
    }
    prop_assert_eq!(
        got.len(),
        k.min(allowed.len()),
        "{} {}: {:?}",
        target,
        filter,
        got
    );
    let best: Vec<f32> = ranking(store, target, query)
        .into_iter()
        .filter(|(doc_id, _)| allowed.contains(doc_id))
        .map(|(_, score)| score)
        .take(k)
        .collect();
    let scores: Vec<f32> = got.iter().map(|(_, s)| *s).collect();
    prop_assert_eq!(scores, best, "{} {}", target, filter);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn filtered_searches_return_the_best_of_filter_and_visible(
        docs in prop::collection::vec(doc(), DOCS),
        changes in prop::collection::vec(change(), 0..6),
        searches in prop::collection::vec(
            (expression(), prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3),
             1..8usize, prop::sample::select(WORDS)),
            4,
        ),
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = small_options().open(dir.path().join("s.folio")).expect("create");
        let mut batch = store.batch();
        for (i, d) in docs.iter().enumerate() {
            batch.upsert(d.document(&id(i)));
        }
        batch.commit().expect("v1");
        let first = docs.clone();
        let mut now: Vec<Option<Doc>> = docs.into_iter().map(Some).collect();
        // Deleted in the second batch (perhaps upserted again): version 1 shows none of it.
        let mut deleted = [false; DOCS];
        let mut batch = store.batch();
        for c in &changes {
            match c {
                Change::Replace(i, d) => {
                    batch.upsert(d.document(&id(*i)));
                    now[*i] = Some(d.clone());
                }
                Change::Delete(i) if now[*i].is_some() => {
                    batch.delete(&id(*i));
                    now[*i] = None;
                    deleted[*i] = true;
                }
                Change::Share(i, acl) if now[*i].is_some() => {
                    batch.set_acl(&id(*i), acl.clone());
                    if let Some(d) = now[*i].as_mut() {
                        d.acl = acl.clone();
                    }
                }
                _ => {}
            }
        }
        if !changes.is_empty() {
            batch.commit().expect("v2");
        }
        for (text, who, k, query) in &searches {
            let filter = Filter::parse(text).expect("generated expressions parse");
            let who: Vec<&str> = who.iter().copied().collect();
            // The head: the current documents, as they are now.
            let head: BTreeSet<String> = now
                .iter()
                .enumerate()
                .filter_map(|(i, d)| {
                    let d = d.as_ref()?;
                    (d.admits(&who) && d.matches(&id(i), &filter)).then(|| id(i))
                })
                .collect();
            check(&store, "default", query, &who, *k, &filter, &head)?;
            // Version 1: its revisions' metadata, for documents that still exist and that
            // both the version's ACL and the current one admit.
            let old: BTreeSet<String> = first
                .iter()
                .zip(&now)
                .enumerate()
                .filter_map(|(i, (then, now))| {
                    let now = now.as_ref().filter(|_| !deleted[i])?;
                    let shown = then.admits(&who) && now.admits(&who);
                    (shown && then.matches(&id(i), &filter)).then(|| id(i))
                })
                .collect();
            check(&store, "default@1", query, &who, *k, &filter, &old)?;
        }
    }
}
