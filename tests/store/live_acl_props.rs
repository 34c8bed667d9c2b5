//! Property test: random histories of upserts, deletes, ACL changes, tags, aliases (one
//! route or a gray release), rollbacks, compactions, garbage collections and reopens,
//! searched as random principals at random versions, tags, aliases and the bare index,
//! against a plain model. No search ever returns a chunk of a document deleted since the
//! version it searched, or one whose current ACL (or the version's) excludes the caller,
//! and every answer holds `min(k, visible)` units.

use std::collections::{BTreeMap, BTreeSet};

use folio::query::SearchRequest;
use folio::store::{Access, Store};
use folio_testkit::versions::{doc, head, route, small_options};
use proptest::prelude::*;

const DOCS: usize = 6;
const PRINCIPALS: &[&str] = &["a", "b", "c"];
const WORDS: &[&str] = &[
    "falcon", "budget", "memo", "hotel", "printer", "badge", "kernel", "invoice",
];

/// One document operation inside a batch.
#[derive(Debug, Clone)]
enum DocOp {
    Upsert(usize, Vec<&'static str>, Vec<&'static str>),
    Delete(usize),
    SetAcl(usize, Vec<&'static str>),
}

#[derive(Debug, Clone)]
enum Op {
    Batch(Vec<DocOp>),
    /// Tag the version at this position of the retained list.
    Tag(usize),
    /// Point an alias at one retained version, or split it between two.
    Alias(usize, usize, Option<usize>),
    /// Roll the bare index back to a retained version (or undo that: `None`).
    Pin(Option<usize>),
    /// Roll an alias back to a retained version.
    RollbackAlias(usize, usize),
    Compact,
    Gc(usize),
    Reopen,
    /// Search a target (see `target`) as some principals (`None`: unrestricted), k, key.
    Search(usize, Option<Vec<&'static str>>, usize, u8),
}

fn acl() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::btree_set(prop::sample::select(PRINCIPALS), 0..3)
        .prop_map(|s| s.into_iter().collect())
}

fn doc_op() -> impl Strategy<Value = DocOp> {
    prop_oneof![
        3 => (0..DOCS, prop::collection::vec(prop::sample::select(WORDS), 2..6), acl())
            .prop_map(|(d, w, a)| DocOp::Upsert(d, w, a)),
        1 => (0..DOCS).prop_map(DocOp::Delete),
        2 => (0..DOCS, acl()).prop_map(|(d, a)| DocOp::SetAcl(d, a)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(doc_op(), 1..4).prop_map(Op::Batch),
        1 => (0..8usize).prop_map(Op::Tag),
        1 => (0..2usize, 0..8usize, prop::option::of(0..8usize))
            .prop_map(|(a, v, w)| Op::Alias(a, v, w)),
        1 => prop::option::of(0..8usize).prop_map(Op::Pin),
        1 => (0..2usize, 0..8usize).prop_map(|(a, v)| Op::RollbackAlias(a, v)),
        1 => Just(Op::Compact),
        1 => (1..4usize).prop_map(Op::Gc),
        1 => Just(Op::Reopen),
        8 => (0..16usize, prop::option::of(prop::collection::vec(prop::sample::select(PRINCIPALS), 0..3)), 1..8usize, any::<u8>())
            .prop_map(|(t, p, k, key)| Op::Search(t, p, k, key)),
    ]
}

/// A document as the model knows it: which incarnation (a new one after each delete)
/// and its ACL.
#[derive(Debug, Clone, PartialEq)]
struct Known {
    incarnation: u64,
    acl: Vec<&'static str>,
}

/// The plain model: the documents now, and what each version held.
#[derive(Default)]
struct Model {
    now: BTreeMap<usize, Known>,
    versions: BTreeMap<u64, BTreeMap<usize, Known>>,
    incarnations: u64,
    tags: u64,
}

fn admits(acl: &[&str], principals: &[&str]) -> bool {
    acl.is_empty() || acl.iter().any(|p| principals.contains(p))
}

impl Model {
    /// The documents a search of `version` may return to `access` (`None`: unrestricted).
    fn visible(&self, version: u64, access: Option<&[&str]>) -> BTreeSet<String> {
        let Some(then) = self.versions.get(&version) else {
            panic!("the store searched version {version}, which the model never made");
        };
        then.iter()
            .filter(|(id, was)| {
                let Some(now) = self.now.get(id) else {
                    return false;
                };
                now.incarnation == was.incarnation
                    && access.is_none_or(|p| admits(&was.acl, p) && admits(&now.acl, p))
            })
            .map(|(id, _)| format!("d{id}"))
            .collect()
    }

    /// Applies a batch to the model as the store applies it (in order); returns the batch
    /// the store should commit, with operations on absent documents left out.
    fn batch(&mut self, ops: &[DocOp]) -> Vec<DocOp> {
        let mut kept = Vec::new();
        for op in ops {
            match op {
                DocOp::Upsert(d, _, acl) => {
                    let incarnation = match self.now.get(d) {
                        Some(k) => k.incarnation,
                        None => {
                            self.incarnations += 1;
                            self.incarnations
                        }
                    };
                    let acl = acl.clone();
                    self.now.insert(*d, Known { incarnation, acl });
                }
                DocOp::Delete(d) => {
                    if self.now.remove(d).is_none() {
                        continue;
                    }
                }
                DocOp::SetAcl(d, acl) => match self.now.get_mut(d) {
                    Some(k) => k.acl = acl.clone(),
                    None => continue,
                },
            }
            kept.push(op.clone());
        }
        kept
    }
}

fn retained(store: &Store) -> Vec<u64> {
    store
        .versions("default")
        .list()
        .expect("versions")
        .iter()
        .map(|v| v.version)
        .collect()
}

fn pick(list: &[u64], i: usize) -> u64 {
    list[i % list.len()]
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    let mut store = small_options().open(&path).expect("create");
    let mut model = Model::default();
    model.versions.insert(0, BTreeMap::new());
    let mut aliases: Vec<bool> = vec![false, false];
    for op in ops {
        match op {
            Op::Batch(ops) => {
                let ops = model.batch(&ops);
                if ops.is_empty() {
                    continue;
                }
                let mut batch = store.batch();
                for op in &ops {
                    match op {
                        DocOp::Upsert(d, words, acl) => {
                            batch.upsert(
                                doc(&format!("d{d}"), &words.join(" ")).with_acl(acl.clone()),
                            );
                        }
                        DocOp::Delete(d) => {
                            batch.delete(&format!("d{d}"));
                        }
                        DocOp::SetAcl(d, acl) => {
                            batch.set_acl(&format!("d{d}"), acl.clone());
                        }
                    }
                }
                let receipt = batch.commit().expect("commit");
                model
                    .versions
                    .insert(receipt.versions["default"], model.now.clone());
            }
            Op::Tag(i) => {
                let v = pick(&retained(&store), i);
                model.tags += 1;
                store
                    .versions("default")
                    .tag(v, &format!("t{}", model.tags))
                    .expect("tag");
            }
            Op::Alias(a, v, w) => {
                let list = retained(&store);
                let (v, w) = (pick(&list, v), w.map(|w| pick(&list, w)));
                let routes = match w {
                    Some(w) if w != v => vec![route("default", v, 60), route("default", w, 40)],
                    _ => vec![route("default", v, 100)],
                };
                store
                    .aliases()
                    .set(&format!("al{a}"), &routes)
                    .expect("alias");
                aliases[a] = true;
            }
            Op::Pin(Some(i)) => {
                let v = pick(&retained(&store), i);
                store.rollback("default", v).expect("pin");
            }
            Op::Pin(None) => {
                store.versions("default").unpin().expect("unpin");
            }
            Op::RollbackAlias(a, i) => {
                if aliases[a] {
                    let v = pick(&retained(&store), i);
                    store.rollback(&format!("al{a}"), v).expect("rollback");
                }
            }
            Op::Compact => {
                let head = head(&store, "default");
                if let Some(done) = store.indexes().compact("default").expect("compact") {
                    let same = model.versions[&head].clone();
                    model.versions.insert(done.version, same);
                }
            }
            Op::Gc(keep) => {
                store.gc(keep).expect("gc");
            }
            Op::Reopen => {
                drop(store);
                store = small_options().open(&path).expect("reopen");
            }
            Op::Search(t, access, k, key) => {
                let list = retained(&store);
                let tags = model.tags as usize;
                let target = match t % 4 {
                    0 => format!("default@{}", pick(&list, t)),
                    1 if tags > 0 => format!("default@t{}", t % tags + 1),
                    2 if aliases[t % 2] => format!("al{}", t % 2),
                    _ => "default".to_string(),
                };
                let access_arg = match &access {
                    None => Access::Unrestricted,
                    Some(p) => Access::principals(p.iter().copied()),
                };
                let mut request = SearchRequest::text("falcon budget memo")
                    .access(access_arg)
                    .target(&target)
                    .route_key(format!("user-{key}"))
                    .k(k);
                request.dedup = None;
                let response = store.search(&request).expect("search");
                let allowed = model.visible(response.version, access.as_deref());
                let got: Vec<&str> = response.results.iter().map(|h| h.doc_id.as_str()).collect();
                for id in &got {
                    prop_assert!(
                        allowed.contains(*id),
                        "{target} (v{}) as {access:?} returned {id}; the model allows {allowed:?}",
                        response.version
                    );
                }
                // One chunk per document: units are documents.
                prop_assert_eq!(
                    got.len(),
                    k.min(allowed.len()),
                    "{} as {:?}",
                    target,
                    access
                );
                prop_assert_eq!(response.stats.visible, allowed.len() as u64);
            }
        }
    }
    let report = store.check_integrity().expect("check");
    prop_assert!(report.is_consistent(), "{:?}", report.problems);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn no_version_shows_what_was_revoked_or_deleted(ops in prop::collection::vec(op(), 1..40)) {
        run(ops)?;
    }
}

/// Every upserted text is one chunk, so the model's units are documents.
#[test]
fn the_model_texts_are_one_chunk_each() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = small_options()
        .open(dir.path().join("s.folio"))
        .expect("create");
    let longest = WORDS.iter().take(5).copied().collect::<Vec<_>>().join(" ");
    store.upsert(doc("d0", &longest)).expect("upsert");
    assert_eq!(store.chunks("default", "d0").expect("chunks").len(), 1);
}
