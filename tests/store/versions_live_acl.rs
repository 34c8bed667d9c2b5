//! Revocations and deletions are live in every retained version; grants are not
//! retroactive. A search of any version (`@N`, a tag, an alias, a gray-release route, a
//! pinned rollback) shows a chunk only if the version's ACL and the document's current ACL
//! both admit the caller and the document has not been deleted since. (The command-line
//! scenario of issue 11 is in `versions_cli.rs`.)

use folio::chunk::{ChunkSpec, SourceFormat};
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::{Access, Store};
use folio_testkit::versions::{config_like_default, doc, route, small_options, temp_store};

/// The doc ids a search of `target` as `principals` returns (every visible unit).
fn seen(store: &Store, target: &str, principals: &[&str]) -> Vec<String> {
    seen_as(
        store,
        target,
        Access::principals(principals.iter().copied()),
        None,
    )
}

fn seen_as(store: &Store, target: &str, access: Access, key: Option<&str>) -> Vec<String> {
    let mut request = SearchRequest::text("falcon budget memo")
        .access(access)
        .k(1000)
        .target(target);
    if let Some(key) = key {
        request = request.route_key(key);
    }
    request.dedup = None;
    let mut ids: Vec<String> = store
        .search(&request)
        .expect("search")
        .results
        .into_iter()
        .map(|h| h.doc_id)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn secret() -> Document {
    doc("secret", "The falcon budget is twelve million.").with_acl(["a"])
}

fn memo() -> Document {
    doc("memo", "A public memo about the falcon budget meeting.")
}

/// Version 1: `secret` (shared with `a`) and the public `memo`.
fn seed(store: &Store) {
    let mut batch = store.batch();
    batch.upsert(secret());
    batch.upsert(memo());
    batch.commit().expect("v1");
}

fn consistent(store: Store) {
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// A revocation reaches every way of naming an older version.
#[test]
fn a_revocation_reaches_every_retained_version() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    store
        .upsert(doc("other", "Other falcon notes."))
        .expect("v2");
    store.versions("default").tag(1, "first").expect("tag");
    store
        .aliases()
        .set("prod", &[route("default", 1, 100)])
        .expect("prod");
    store
        .aliases()
        .set("gray", &[route("default", 1, 50), route("default", 2, 50)])
        .expect("gray");
    let targets = ["default@1", "default@first", "prod", "default@2"];
    for target in targets {
        assert!(seen(&store, target, &["a"]).contains(&"secret".to_string()));
    }

    store.set_acl("secret", ["b"]).expect("revoke a, grant b");
    store.rollback("default", 1).expect("pin");
    for target in targets.iter().copied().chain(["default"]) {
        let ids = seen(&store, target, &["a"]);
        assert!(!ids.contains(&"secret".to_string()), "{target}: {ids:?}");
        assert!(ids.contains(&"memo".to_string()), "{target}: {ids:?}");
        // Grants are not retroactive: versions 1 and 2 never showed secret to b.
        let ids = seen(&store, target, &["b"]);
        assert!(!ids.contains(&"secret".to_string()), "{target}: {ids:?}");
    }
    // Both routes of the gray release, whichever the key picks.
    for key in (0..40).map(|i| format!("user-{i}")) {
        let ids = seen_as(&store, "gray", Access::principals(["a"]), Some(&key));
        assert!(!ids.contains(&"secret".to_string()), "gray, key {key}");
    }
    // The head shows b what the head's ACL says.
    store.versions("default").unpin().expect("unpin");
    assert!(seen(&store, "default", &["b"]).contains(&"secret".to_string()));
    assert!(!seen(&store, "default", &["a"]).contains(&"secret".to_string()));
    // Rolling back after the revocation re-grants nothing.
    store.rollback("prod", 1).expect("rollback alias");
    assert!(!seen(&store, "prod", &["a"]).contains(&"secret".to_string()));
    consistent(store);
}

/// A deleted document leaves every version; rollback does not resurrect it; a re-upsert
/// brings the new content back from its own version on, and the deleted content stays
/// gone from the versions before the delete.
#[test]
fn deletions_are_live_and_rollback_never_resurrects() {
    let (_dir, store) = temp_store(small_options());
    seed(&store);
    store
        .aliases()
        .set("prod", &[route("default", 1, 100)])
        .expect("prod");
    store.delete("memo").expect("v2");
    for target in ["default@1", "prod", "default"] {
        let everyone = seen_as(&store, target, Access::Unrestricted, None);
        assert!(!everyone.contains(&"memo".to_string()), "{target}");
        assert_eq!(seen(&store, target, &["a"]), ["secret"], "{target}");
    }
    store.rollback("default", 1).expect("pin");
    store.rollback("prod", 1).expect("rollback");
    assert_eq!(seen(&store, "default", &[]), Vec::<String>::new());
    assert_eq!(seen(&store, "prod", &[]), Vec::<String>::new());

    store
        .upsert(doc("memo", "A new public memo about the falcon budget."))
        .expect("v3");
    assert_eq!(seen(&store, "default@3", &[]), ["memo"]);
    assert_eq!(seen(&store, "default@1", &[]), Vec::<String>::new());
    consistent(store);
}

/// An upsert that changes the ACL revokes the older revisions too, in every version; one
/// that keeps it leaves older versions showing the older content.
#[test]
fn a_replacement_with_a_new_acl_revokes_the_older_revisions() {
    let (_dir, store) = temp_store(small_options());
    store.upsert(secret()).expect("v1");
    store
        .upsert(doc("secret", "The falcon budget is ten million.").with_acl(["a"]))
        .expect("v2: same ACL");
    let texts = |target: &str, who: &str| -> Vec<String> {
        let request = SearchRequest::text("falcon budget")
            .as_principals([who])
            .k(10)
            .target(target);
        store
            .search(&request)
            .expect("search")
            .results
            .into_iter()
            .map(|h| h.text)
            .collect()
    };
    assert!(texts("default@1", "a")[0].contains("twelve"));
    assert!(texts("default@2", "a")[0].contains("ten"));
    store
        .upsert(doc("secret", "The falcon budget is nine million.").with_acl(["c"]))
        .expect("v3: a loses access");
    for v in 1..=3 {
        assert!(texts(&format!("default@{v}"), "a").is_empty(), "v{v}");
    }
    // c sees the version that granted it, not the older text.
    assert!(texts("default@2", "c").is_empty());
    assert!(texts("default@3", "c")[0].contains("nine"));
    consistent(store);
}

/// Compaction renumbers live children: the copies follow the document's ACL, and a later
/// revocation reaches versions before and after the compaction; gc and a reopen keep it.
#[test]
fn revocations_survive_compaction_gc_and_reopen() {
    let (dir, store) = temp_store(small_options());
    store.upsert(secret()).expect("v1");
    store.upsert(memo()).expect("v2");
    let compacted = store
        .indexes()
        .compact("default")
        .expect("compact")
        .expect("merged")
        .version;
    store.versions("default").tag(1, "first").expect("tag");
    store
        .versions("default")
        .tag(compacted, "merged")
        .expect("tag");
    store
        .indexes()
        .create("second", config_like_default(&store, ChunkSpec::default()))
        .expect("second index");
    store.versions("second").tag(1, "built").expect("tag");
    for target in ["default@first", "default@merged", "second@built"] {
        assert!(seen(&store, target, &["a"]).contains(&"secret".to_string()));
    }
    store.set_acl("secret", ["b"]).expect("revoke");
    store.gc(1).expect("gc");
    let path = dir.path().join("s.folio");
    drop(store);
    let store = small_options().open(&path).expect("reopen");
    for target in ["default@first", "default@merged", "second@built"] {
        assert!(
            !seen(&store, target, &["a"]).contains(&"secret".to_string()),
            "{target}"
        );
        assert!(!seen(&store, target, &["b"]).contains(&"secret".to_string()));
    }
    // Given back to a: the versions that showed it to a show it again.
    store.set_acl("secret", ["a"]).expect("re-grant");
    for target in ["default@first", "default@merged", "second@built"] {
        assert!(seen(&store, target, &["a"]).contains(&"secret".to_string()));
    }
    store.delete("secret").expect("delete");
    store.indexes().compact("default").expect("compact");
    store.gc(1).expect("gc");
    for (target, left) in [
        ("default@first", &[][..]),
        ("default@merged", &["memo"]),
        ("second@built", &["memo"]),
    ] {
        let ids = seen_as(&store, target, Access::Unrestricted, None);
        assert_eq!(ids, left, "{target}");
    }
    consistent(store);
}

/// Several documents in one batch, some changed twice: what every version shows follows
/// the last operation on each.
#[test]
fn one_batch_with_repeated_operations_on_a_document() {
    let (_dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    batch.upsert(secret());
    batch.upsert(memo());
    batch.upsert(
        Document::new("plan", SourceFormat::Text, "The falcon budget plan.").with_acl(["a"]),
    );
    batch.commit().expect("v1");
    let mut batch = store.batch();
    batch.set_acl("secret", ["b"]);
    batch.set_acl("secret", ["a", "b"]);
    batch.delete("plan");
    batch.upsert(
        Document::new("plan", SourceFormat::Text, "A new falcon budget plan.").with_acl(["a"]),
    );
    batch.delete("memo");
    batch.commit().expect("v2");
    assert_eq!(seen(&store, "default@1", &["a"]), ["secret"]);
    assert_eq!(seen(&store, "default@2", &["a"]), ["plan", "secret"]);
    consistent(store);
}
