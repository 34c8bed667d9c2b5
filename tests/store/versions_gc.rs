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
