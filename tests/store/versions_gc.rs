//! Under a steady update load with `gc`, the file stops growing (redb reuses the pages gc
//! frees), and a retained version answers exactly as it did before any of it.

use folio::store::MergePolicy;
use folio_testkit::versions::{answer, assert_plateau, doc, head, small_options, temp_store};

const DOCS: usize = 150;
const ROUNDS: usize = 120;

fn text(doc: usize, round: usize) -> String {
    format!(
        "Document {doc} at round {round} talks about deploys and budgets.\n\n\
         A second paragraph on hotels, printers and backups, number {round}.\n\n\
         A third one: vacation days, kernels and invoices for {doc}."
    )
}

#[test]
fn the_file_plateaus_and_retained_versions_answer_the_same() {
    let options = small_options().merge(MergePolicy::default());
    let (dir, store) = temp_store(options);
    let path = dir.path().join("s.folio");
    let mut batch = store.batch();
    for d in 0..DOCS {
        batch.upsert(doc(&format!("doc{d}"), &text(d, 0)));
    }
    batch.commit().expect("initial");
    let baseline = head(&store, "default");
    store
        .versions("default")
        .tag(baseline, "baseline")
        .expect("tag");
    let queries = [
        "deploys budgets",
        "hotels printers round 3",
        "vacation doc17",
    ];
    let before: Vec<_> = queries
        .iter()
        .map(|q| answer(&store, "default@baseline", q))
        .collect();

    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut sizes = Vec::with_capacity(ROUNDS);
    for round in 1..=ROUNDS {
        let mut batch = store.batch();
        for _ in 0..15 {
            let d = (next() % DOCS as u64) as usize;
            batch.upsert(doc(&format!("doc{d}"), &text(d, round)));
        }
        let receipt = batch.commit().expect("update");
        assert_eq!(receipt.merge_error, None);
        store.gc(3).expect("gc");
        sizes.push(std::fs::metadata(&path).expect("size").len());
    }
    let third = ROUNDS / 3;
    println!(
        "file size after rounds 1, {third}, {}, {ROUNDS}: {} {} {} {} bytes",
        2 * third,
        sizes[0],
        sizes[third - 1],
        sizes[2 * third - 1],
        sizes[ROUNDS - 1]
    );
    let (early, middle, late) = assert_plateau(&sizes);
    println!("peaks by third {early} {middle} {late}");

    let after: Vec<_> = queries
        .iter()
        .map(|q| answer(&store, "default@baseline", q))
        .collect();
    assert_eq!(
        after, before,
        "a retained version answers the same after gc"
    );
    let versions = store.versions("default").list().expect("versions");
    assert!(
        versions.len() <= 3 + 1 + 1,
        "{} versions kept",
        versions.len()
    );
    let mut store = store;
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// The retention policy (issue 30, item 6): off by default; once set, every commit is
/// followed by a collection that keeps what the policy says and every named version, in
/// this process and after a reopen; `Off` stops it.
#[test]
fn a_retention_policy_collects_after_each_commit_and_keeps_named_versions() {
    use folio::store::{Retention, Store};
    let (dir, store) = temp_store(small_options());
    let commit = |store: &Store, round: usize| {
        let mut batch = store.batch();
        batch.upsert(doc("doc0", &text(0, round)));
        batch.commit().expect("commit")
    };
    let versions = |store: &Store| -> Vec<u64> {
        let list = store.versions("default").list().expect("versions");
        list.iter().map(|v| v.version).collect()
    };
    for round in 0..4 {
        assert!(commit(&store, round).collected.is_none(), "off by default");
    }
    assert_eq!(store.stats().expect("stats").retention, Retention::Off);
    assert_eq!(versions(&store).len(), 5, "version 0 and four commits");
    store.versions("default").tag(2, "release").expect("tag");

    store
        .set_retention(Retention::KeepLast(2))
        .expect("set the policy");
    let receipt = commit(&store, 4);
    let collected = receipt.collected.expect("the commit collected");
    assert!(collected.versions >= 3, "{collected:?}");
    let kept = versions(&store);
    let newest = *kept.last().expect("head");
    assert_eq!(
        kept,
        vec![2, newest - 1, newest],
        "the tag and the newest two"
    );
    assert_eq!(
        answer(&store, "default@release", "deploys round 1"),
        answer(&store, "default@2", "deploys round 1")
    );
    drop(store);

    // Recorded in the file: a new handle applies it too.
    let store = small_options()
        .open(dir.path().join("s.folio"))
        .expect("reopen");
    assert_eq!(
        store.stats().expect("stats").retention,
        Retention::KeepLast(2)
    );
    commit(&store, 5);
    let kept = versions(&store);
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert_eq!(kept[0], 2);

    // By age: every version but the head and the tag is older than a millisecond.
    store
        .set_retention(Retention::YoungerThan(std::time::Duration::from_millis(1)))
        .expect("set");
    std::thread::sleep(std::time::Duration::from_millis(20));
    commit(&store, 6);
    let kept = versions(&store);
    assert_eq!(kept.first(), Some(&2));
    assert!(
        kept.len() <= 3,
        "the tag, the head, a merge's version at most: {kept:?}"
    );

    store.set_retention(Retention::Off).expect("off");
    for round in 7..10 {
        assert!(commit(&store, round).collected.is_none());
    }
    assert_eq!(versions(&store).len(), kept.len() + 3);
    assert!(store.set_retention(Retention::KeepLast(0)).is_err());
}
