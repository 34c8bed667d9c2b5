//! Property test: 256 random histories of upserts, deletes, ACL changes, tags, aliases (one
//! route or a gray release), rollbacks, compactions, garbage collections, index creations
//! and drops, reopens and injected write faults (the Nth write, sync or resize of the next
//! operation fails), with and without automatic merges, searched as random principals at
//! random versions, tags, aliases and bare indexes. The histories run on the plain model
//! the `store_ops` fuzz target uses (`folio_testkit::store_ops`): no search ever returns a
//! chunk of a document deleted since the version it searched, or one whose current ACL (or
//! the version's) excludes the caller; every answer holds `min(k, visible)` units; the file
//! passes `check` after every fault and at the end.

use folio_testkit::store_ops::{self, DocOp, Op, DOCS, WORDS};
use folio_testkit::versions::{doc, small_options};
use proptest::prelude::*;

/// Positions pick among what exists, modulo its count (see `store_ops::Op`).
fn position() -> impl Strategy<Value = usize> {
    0..16usize
}

fn doc_op() -> impl Strategy<Value = DocOp> {
    let words = prop::collection::vec(0..WORDS.len(), 1..6);
    prop_oneof![
        3 => (0..DOCS, words, 0..8u8).prop_map(|(doc, words, acl)| DocOp::Upsert { doc, words, acl }),
        1 => (0..DOCS).prop_map(|doc| DocOp::Delete { doc }),
        2 => (0..DOCS, 0..8u8).prop_map(|(doc, acl)| DocOp::SetAcl { doc, acl }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(doc_op(), 1..4).prop_map(Op::Batch),
        1 => (position(), position()).prop_map(|(index, version)| Op::Tag { index, version }),
        1 => (position(), position(), prop::option::of(position()))
            .prop_map(|(alias, version, split)| Op::Alias { alias, version, split }),
        1 => prop::option::of(position()).prop_map(|version| Op::Pin { version }),
        1 => (position(), position())
            .prop_map(|(alias, version)| Op::RollbackAlias { alias, version }),
        1 => position().prop_map(|index| Op::Compact { index }),
        1 => (1..4usize).prop_map(|keep| Op::Gc { keep }),
        1 => Just(Op::CreateIndex),
        1 => Just(Op::DropIndex),
        1 => Just(Op::Reopen),
        2 => (0..40u32).prop_map(|after| Op::Fault { after }),
        8 => (0..64usize, prop::option::of(0..8u8), 1..9usize, any::<u8>())
            .prop_map(|(target, principals, k, key)| Op::Search { target, principals, k, key }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn no_version_shows_what_was_revoked_or_deleted(
        merges in any::<bool>(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        store_ops::run(merges, &ops);
    }
}

/// The model counts documents as units: the longest text a history writes (five words) is
/// one chunk.
#[test]
fn the_model_texts_are_one_chunk_each() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = small_options()
        .open(dir.path().join("s.folio"))
        .expect("create");
    let mut words = WORDS.to_vec();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    let longest = words[..5].join(" ");
    store.upsert(doc("d0", &longest)).expect("upsert");
    assert_eq!(store.chunks("default", "d0").expect("chunks").len(), 1);
}
