//! The outbox: once an index is marked published, every commit that changes a document's
//! audience, deletes a document or moves an alias of it appends an entry in that same
//! commit; nothing is recorded for an index never published; a follower's
//! acknowledgement trims the table and numbers are never reused.

use folio::chunk::ChunkSpec;
use folio::store::{Change, OutboxEntry, Store};
use folio_testkit::versions::{config_like_default, doc, route, small_options, temp_store};
use proptest::prelude::*;

const URI: &str = "http://milvus.example:19530";

/// (index, change) of every pending entry, in order.
fn pending(store: &Store) -> Vec<(Option<String>, Change)> {
    store
        .outbox()
        .pending(usize::MAX)
        .expect("pending")
        .into_iter()
        .map(|e| (e.index, e.change))
        .collect()
}

fn audience(index: &str, doc_id: &str) -> (Option<String>, Change) {
    (
        Some(index.to_string()),
        Change::Audience {
            doc_id: doc_id.to_string(),
        },
    )
}

fn deleted(index: &str, doc_id: &str) -> (Option<String>, Change) {
    (
        Some(index.to_string()),
        Change::Deleted {
            doc_id: doc_id.to_string(),
        },
    )
}

fn alias(index: &str, name: &str) -> (Option<String>, Change) {
    (
        Some(index.to_string()),
        Change::Alias {
            alias: name.to_string(),
        },
    )
}

/// `default` and `other` over documents a, b (for `eng`) and c.
fn seeded() -> (tempfile::TempDir, Store) {
    let (dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    batch.upsert(doc("a", "Alpha notes.").with_acl(["eng"]));
    batch.upsert(doc("b", "Beta notes.").with_acl(["eng"]));
    batch.upsert(doc("c", "Gamma notes."));
    batch.commit().expect("v1");
    store
        .indexes()
        .create("other", config_like_default(&store, ChunkSpec::default()))
        .expect("other");
    (dir, store)
}

#[test]
fn nothing_is_recorded_for_an_index_never_published() {
    let (_dir, store) = seeded();
    store.set_acl("a", ["ops"]).expect("acl");
    store.delete("b").expect("delete");
    store
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("alias");
    store.rollback("prod", 1).expect("rollback");
    assert!(pending(&store).is_empty());
    assert!(store.outbox().published().expect("marks").is_empty());
}

#[test]
fn each_change_to_a_published_index_is_in_the_commit_that_made_it() {
    let (_dir, store) = seeded();
    store
        .outbox()
        .mark_published("default", URI, "folio")
        .expect("mark");
    let marks = store.outbox().published().expect("marks");
    assert_eq!(marks.len(), 1);
    assert_eq!(
        (
            marks[0].index.as_str(),
            marks[0].uri.as_str(),
            marks[0].prefix.as_str()
        ),
        ("default", URI, "folio")
    );
    let mut expected = Vec::new();
    // A second handle on the file sees each entry once the commit is there: it is in the
    // commit, not written after it.
    let reader = small_options()
        .read_only(true)
        .open(store.path())
        .expect("reader");
    let mut step = |what: &str, f: &dyn Fn(), entries: Vec<(Option<String>, Change)>| {
        f();
        expected.extend(entries);
        assert_eq!(pending(&store), expected, "after {what}");
        assert_eq!(pending(&reader), expected, "after {what}, another handle");
    };
    step(
        "revoke",
        &|| drop(store.set_acl("a", ["ops"]).expect("revoke")),
        vec![audience("default", "a")],
    );
    step(
        "grant",
        &|| drop(store.set_acl("c", ["eng", "ops"]).expect("grant")),
        vec![audience("default", "c")],
    );
    step(
        "delete",
        &|| drop(store.delete("b").expect("delete")),
        vec![deleted("default", "b")],
    );
    // An upsert that keeps the ACL changes no published row's audience; one that changes
    // it does (the older children's rows answer to it now).
    step(
        "same acl",
        &|| {
            drop(
                store
                    .upsert(doc("a", "Alpha, revised.").with_acl(["ops"]))
                    .expect("upsert"),
            )
        },
        vec![],
    );
    step(
        "new acl",
        &|| {
            drop(
                store
                    .upsert(doc("a", "Alpha, again.").with_acl(["eng"]))
                    .expect("upsert"),
            )
        },
        vec![audience("default", "a")],
    );
    step(
        "new document",
        &|| drop(store.upsert(doc("d", "Delta.")).expect("upsert")),
        vec![],
    );
    step(
        "alias set",
        &|| {
            store
                .aliases()
                .set("prod", &[route("default", 2, 100)])
                .expect("alias")
        },
        vec![alias("default", "prod")],
    );
    step(
        "alias rollback",
        &|| drop(store.rollback("prod", 1).expect("rollback")),
        vec![alias("default", "prod")],
    );
    step(
        "alias of another index",
        &|| {
            store
                .aliases()
                .set("side", &[route("other", 1, 100)])
                .expect("alias")
        },
        vec![],
    );
    step(
        "alias moved to another index",
        &|| {
            store
                .aliases()
                .set("side", &[route("default", 1, 100)])
                .expect("alias")
        },
        vec![alias("default", "side")],
    );
    step(
        "alias removed",
        &|| store.aliases().remove("prod").expect("remove"),
        vec![alias("default", "prod")],
    );
    step(
        "pin and tag",
        &|| {
            drop(store.rollback("default", 1).expect("pin"));
            store.versions("default").tag(1, "first").expect("tag");
        },
        vec![],
    );

    let entries = store.outbox().pending(usize::MAX).expect("pending");
    assert!(entries.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(entries.iter().all(|e| e.time_ms > 0));
    assert_eq!(store.outbox().pending(2).expect("two").len(), 2);
}

#[test]
fn an_acknowledgement_trims_and_numbers_are_never_reused() {
    let (_dir, store) = seeded();
    store
        .outbox()
        .mark_published("default", URI, "folio")
        .expect("mark");
    store.set_acl("a", ["ops"]).expect("acl");
    store.set_acl("b", ["ops"]).expect("acl");
    store.delete("c").expect("delete");
    let entries = store.outbox().pending(usize::MAX).expect("pending");
    let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(store.outbox().acknowledge(seqs[1]).expect("ack"), 2);
    let left: Vec<OutboxEntry> = store.outbox().pending(usize::MAX).expect("pending");
    assert_eq!(left, entries[2..].to_vec());
    // Acknowledging again, or below what is left, removes nothing.
    assert_eq!(store.outbox().acknowledge(seqs[1]).expect("ack"), 0);
    assert_eq!(store.outbox().acknowledge(seqs[2]).expect("ack"), 1);
    assert!(pending(&store).is_empty());
    let path = store.path().to_path_buf();
    drop(store);
    let store = small_options().open(&path).expect("reopen");
    store.set_acl("a", ["eng"]).expect("acl");
    let after = store.outbox().pending(usize::MAX).expect("pending");
    assert_eq!(after.len(), 1);
    assert!(after[0].seq > seqs[2], "{} reused", after[0].seq);
    let mut store = store;
    assert!(store.check_integrity().expect("check").is_consistent());
}

#[test]
fn a_dropped_index_loses_its_mark_and_its_entries_name_no_index() {
    let (_dir, store) = seeded();
    store
        .outbox()
        .mark_published("other", URI, "folio")
        .expect("mark");
    store.set_acl("a", ["ops"]).expect("acl");
    store.indexes().drop("other").expect("drop");
    assert!(store.outbox().published().expect("marks").is_empty());
    assert_eq!(
        pending(&store),
        vec![(None, Change::Audience { doc_id: "a".into() })]
    );
    store.set_acl("b", ["ops"]).expect("acl");
    assert_eq!(pending(&store).len(), 1);
}

#[derive(Debug, Clone)]
enum Op {
    Acl(usize, bool),
    Delete(usize),
    Upsert(usize, bool),
    Alias(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4usize, any::<bool>()).prop_map(|(d, eng)| Op::Acl(d, eng)),
        (0..4usize).prop_map(Op::Delete),
        (0..4usize, any::<bool>()).prop_map(|(d, eng)| Op::Upsert(d, eng)),
        any::<bool>().prop_map(Op::Alias),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Random writes on a store with a published index (`default`) and an unpublished one
    /// (`other`): the outbox holds exactly the model's entries for the published one, in
    /// commit order.
    #[test]
    fn the_outbox_holds_exactly_the_published_indexes_changes(ops in prop::collection::vec(op(), 1..14)) {
        let (_dir, store) = seeded();
        store.outbox().mark_published("default", URI, "folio").expect("mark");
        // The model: which documents exist and with which ACL.
        let mut acl: Vec<Option<bool>> = vec![Some(true), Some(true), Some(false), None];
        let mut expected = Vec::new();
        for op in ops {
            match op {
                Op::Acl(d, eng) => {
                    let id = ["a", "b", "c", "d"][d];
                    let result = store.set_acl(id, if eng { vec!["eng"] } else { vec![] });
                    match acl[d] {
                        Some(_) => {
                            result.expect("acl");
                            acl[d] = Some(eng);
                            expected.push(audience("default", id));
                        }
                        None => prop_assert!(result.is_err()),
                    }
                }
                Op::Delete(d) => {
                    let id = ["a", "b", "c", "d"][d];
                    let result = store.delete(id);
                    match acl[d] {
                        Some(_) => {
                            result.expect("delete");
                            acl[d] = None;
                            expected.push(deleted("default", id));
                        }
                        None => prop_assert!(result.is_err()),
                    }
                }
                Op::Upsert(d, eng) => {
                    let id = ["a", "b", "c", "d"][d];
                    let mut document = doc(id, "Some notes.");
                    if eng {
                        document = document.with_acl(["eng"]);
                    }
                    store.upsert(document).expect("upsert");
                    if acl[d].is_some_and(|before| before != eng) {
                        expected.push(audience("default", id));
                    }
                    acl[d] = Some(eng);
                }
                Op::Alias(on_default) => {
                    let index = if on_default { "default" } else { "other" };
                    let before = store.aliases().list().expect("aliases");
                    store.aliases().set("prod", &[route(index, 1, 100)]).expect("alias");
                    let was_default = before.iter().any(|a| a.name == "prod" && a.routes[0].index == "default");
                    if on_default || was_default {
                        expected.push(alias("default", "prod"));
                    }
                }
            }
            prop_assert_eq!(&pending(&store), &expected);
        }
    }
}

/// The synchronous mode: waiting returns at once with nothing pending, `false` when no
/// follower acknowledges in time, and `true` as soon as one acknowledges every entry that
/// was committed before the wait (entries committed during it are not waited for).
#[test]
fn waiting_for_the_followers_acknowledgement() {
    use std::time::{Duration, Instant};
    let (_dir, store) = seeded();
    assert!(store
        .outbox()
        .wait_acknowledged(Duration::ZERO)
        .expect("wait"));
    store
        .outbox()
        .mark_published("default", URI, "folio")
        .expect("mark");
    store.set_acl("a", ["ops"]).expect("acl");
    let started = Instant::now();
    assert!(!store
        .outbox()
        .wait_acknowledged(Duration::from_millis(100))
        .expect("wait"));
    assert!(started.elapsed() >= Duration::from_millis(100));
    let through = store.outbox().pending(usize::MAX).expect("pending")[0].seq;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(150));
            // A later commit's entry stays pending: only the earlier one is waited for.
            store.set_acl("b", ["ops"]).expect("acl");
            store.outbox().acknowledge(through).expect("ack");
        });
        assert!(store
            .outbox()
            .wait_acknowledged(Duration::from_secs(30))
            .expect("wait"));
    });
    assert_eq!(pending(&store), vec![audience("default", "b")]);
}

/// `gc` records the versions it collected of a published index (their copies serve
/// nothing now), and nothing for an unpublished one.
#[test]
fn collected_versions_of_a_published_index_are_recorded() {
    let (_dir, store) = seeded();
    store
        .outbox()
        .mark_published("default", URI, "folio")
        .expect("mark");
    store.upsert(doc("d", "Delta.")).expect("v2");
    store.upsert(doc("e", "Epsilon.")).expect("v3");
    store.indexes().compact("other").ok();
    let report = store.gc(1).expect("gc");
    assert!(report.versions > 0);
    let retained = &report.retained["default"];
    let collected: Vec<u64> = (0..3).filter(|v| !retained.contains(v)).collect();
    assert_eq!(
        pending(&store),
        vec![(
            Some("default".to_string()),
            Change::Collected {
                versions: collected
            }
        )],
        "nothing for `other`, whose versions were collected too"
    );
}
