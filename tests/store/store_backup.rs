//! `Store::backup` (issue 30, item 1): a consistent copy of a live store. Taken while a
//! writer commits, every copy is one committed state whole (documents, versions, tags,
//! request log), opens, passes the integrity check and answers; a backup never replaces
//! a file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::{BackupError, Store, DEFAULT_INDEX};

fn text(i: usize) -> String {
    format!("note{i} about harbour{i} and lamp{i}: the tide table of day {i}.")
}

#[test]
fn backups_taken_while_a_writer_commits_are_whole_committed_states() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::builder()
        .create(true)
        .log_requests(true)
        .open(dir.path().join("live.folio"))
        .expect("create");
    let mut first = store.batch();
    first.upsert(Document::new("d0", SourceFormat::Text, text(0)).with_acl(["crew"]));
    first.commit().expect("commit");
    store.versions(DEFAULT_INDEX).tag(1, "first").expect("tag");
    let logged = store
        .search(&SearchRequest::text("harbour0"))
        .expect("search");
    assert!(logged.request_id.is_some());

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 1;
            while !stop.load(Ordering::Relaxed) && i < 400 {
                let mut batch = store.batch();
                batch.upsert(Document::new(format!("d{i}"), SourceFormat::Text, text(i)));
                batch.commit().expect("commit");
                i += 1;
            }
            i
        })
    };
    let mut copies = Vec::new();
    for n in 0..4 {
        let dest = dir.path().join(format!("copy{n}.folio"));
        let report = store.backup(&dest).expect("backup");
        assert_eq!(report.path, dest);
        assert!(report.rows > 0 && report.bytes > 0);
        copies.push(dest);
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().expect("writer");
    assert!(
        written > 1,
        "the writer committed while the copies were taken"
    );

    for path in &copies {
        let mut copy = Store::builder().open(path).expect("the copy opens");
        let report = copy.check_integrity().expect("check");
        assert!(report.is_consistent(), "{path:?}: {report:?}");
        // One committed state: documents d0..dN, all of them in the head version.
        let ids = copy.document_ids().expect("ids");
        let n = ids.len();
        let mut expected: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
        expected.sort();
        assert_eq!(ids, expected, "{path:?}");
        let versions = copy.versions(DEFAULT_INDEX).list().expect("versions");
        let head = versions.last().expect("a version");
        assert!(head.head, "{path:?}: {versions:?}");
        assert_eq!(head.documents, n as u64, "{path:?}: {versions:?}");
        let tagged = SearchRequest::text("harbour0")
            .target("default@first")
            .as_principals(["crew"]);
        let found = copy.search(&tagged).expect("the tag came along");
        assert_eq!(found.results[0].doc_id, "d0");
        let public = copy
            .search(&SearchRequest::text("harbour0"))
            .expect("search");
        assert!(
            public.results.iter().all(|h| h.doc_id != "d0"),
            "the ACL came along"
        );
        let last = format!("harbour{}", n - 1);
        let newest = copy
            .search(&SearchRequest::text(&last).as_principals(["crew"]))
            .expect("search");
        assert_eq!(newest.results[0].doc_id, format!("d{}", n - 1));
        assert!(
            !copy.log().entries().expect("log").is_empty(),
            "the request log came along"
        );
    }
}

#[test]
fn a_backup_never_replaces_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("s.folio"))
        .expect("create");
    let dest = dir.path().join("taken.folio");
    std::fs::write(&dest, b"mine").expect("write");
    match store.backup(&dest) {
        Err(BackupError::Exists(path)) => assert_eq!(path, dest),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(std::fs::read(&dest).expect("read"), b"mine");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 2, "no partial file left: {names:?}");
}
