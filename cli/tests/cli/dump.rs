//! `folio dump` (issue 30, item 1): every document as JSON Lines that `folio ingest` reads
//! back into another store with the same text, ACL, dates and metadata.

use std::path::Path;

use folio::Store;
use folio_testkit::cli::{run_in, stderr, stdout, utf8};

fn folio_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    let out = run_in(env!("CARGO_BIN_EXE_folio"), Some(cwd), args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

fn documents(path: &Path) -> Vec<folio::Document> {
    let store = Store::builder()
        .read_only(true)
        .open(path)
        .expect("open read-only");
    let ids = store.document_ids().expect("ids");
    ids.iter()
        .map(|id| store.document(id).expect("read").expect("stored"))
        .collect()
}

#[test]
fn a_dump_ingested_into_a_new_store_gives_the_same_documents() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path();
    let docs = cwd.join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(
        docs.join("refunds.md"),
        "---\ntitle: Refunds\nupdated_at: 2024-03-01\ntags: [billing, money]\npriority: 2\n---\n\
         # Refunds\n\nRefunds take five days.\n",
    )
    .expect("write");
    std::fs::write(
        docs.join("page.html"),
        "<html><head><title>Page</title></head><body><main><h1>Page</h1>\
         <p>Tides &amp; moons.</p></main></body></html>",
    )
    .expect("write");
    std::fs::write(docs.join("rates.csv"), "band,rate\nA,1\nB,2\n").expect("write");
    folio_in(cwd, &["ingest", "kb.folio", "docs"]);
    folio_in(
        cwd,
        &["acl", "kb.folio", "docs/refunds.md", "billing,finance"],
    );

    folio_in(cwd, &["dump", "kb.folio", "--out", "dump.jsonl"]);
    let printed = folio_in(cwd, &["dump", "kb.folio"]);
    let written = std::fs::read_to_string(cwd.join("dump.jsonl")).expect("dump file");
    assert_eq!(
        stdout(&printed),
        written,
        "--out writes what standard output shows"
    );
    assert_eq!(written.lines().count(), 3);
    assert!(stderr(&printed).contains("3 documents dumped"));

    folio_in(cwd, &["ingest", "copy.folio", "dump.jsonl"]);
    let (before, after) = (
        documents(&cwd.join("kb.folio")),
        documents(&cwd.join("copy.folio")),
    );
    assert_eq!(before, after);
    let refunds = after
        .iter()
        .find(|d| d.doc_id == "docs/refunds.md")
        .expect("refunds");
    assert_eq!(refunds.acl, ["billing", "finance"]);
    assert_eq!(refunds.updated_at.as_deref(), Some("2024-03-01"));
    // The ACL holds in the copy: a public search does not see the restricted document.
    let public = folio_in(
        cwd,
        &["search", "copy.folio", "refunds take five days", "--json"],
    );
    assert!(
        !stdout(&public).contains("docs/refunds.md"),
        "{}",
        stdout(&public)
    );
    let billing = folio_in(
        cwd,
        &[
            "search",
            "copy.folio",
            "refunds take five days",
            "--as",
            "billing",
            "--json",
        ],
    );
    assert!(stdout(&billing).contains("docs/refunds.md"));
}

#[test]
fn a_failed_dump_leaves_no_file_and_a_bad_store_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.folio");
    let out = run_in(
        env!("CARGO_BIN_EXE_folio"),
        Some(dir.path()),
        &["dump", utf8(&missing), "--out", "d.jsonl"],
    );
    assert!(!out.status.success());
    assert!(!dir.path().join("d.jsonl").exists());
}

#[test]
fn a_backup_is_a_store_that_answers_and_never_replaces_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path();
    std::fs::write(
        cwd.join("tides.md"),
        "# Tides\n\nSpring tides follow the full moon.\n",
    )
    .expect("write");
    folio_in(cwd, &["ingest", "kb.folio", "tides.md"]);
    folio_in(cwd, &["tag", "kb.folio", "default@1", "launch"]);
    let out = folio_in(cwd, &["backup", "kb.folio", "copy.folio", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(report["rows"].as_u64().expect("rows") > 0);
    let found = folio_in(
        cwd,
        &[
            "search",
            "copy.folio",
            "spring tides",
            "--index",
            "default@launch",
            "--json",
        ],
    );
    assert!(stdout(&found).contains("tides.md"), "{}", stdout(&found));
    let again = run_in(
        env!("CARGO_BIN_EXE_folio"),
        Some(cwd),
        &["backup", "kb.folio", "copy.folio"],
    );
    assert!(!again.status.success());
    assert!(stderr(&again).contains("exists"), "{}", stderr(&again));
}

#[test]
fn a_retention_policy_is_set_shown_and_applied() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path();
    let note = cwd.join("note.md");
    for round in 0..3 {
        std::fs::write(&note, format!("# Note\n\nRound {round} of the tide log.\n"))
            .expect("write");
        folio_in(cwd, &["ingest", "kb.folio", "note.md"]);
    }
    let shown = folio_in(cwd, &["stats", "kb.folio"]);
    assert!(
        stdout(&shown).contains("retention: off"),
        "{}",
        stdout(&shown)
    );
    folio_in(cwd, &["retention", "kb.folio", "--keep-last", "1"]);
    let json = folio_in(cwd, &["retention", "kb.folio", "--json"]);
    let policy: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(policy["retention"]["keep_last"], 1);
    std::fs::write(&note, "# Note\n\nRound 3 of the tide log.\n").expect("write");
    folio_in(cwd, &["ingest", "kb.folio", "note.md"]);
    let versions = folio_in(cwd, &["versions", "kb.folio", "default", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&versions.stdout).expect("json");
    let count = list
        .as_array()
        .or_else(|| list["versions"].as_array())
        .map_or(0, Vec::len);
    assert_eq!(count, 1, "only the head is left: {list}");
    let shown = folio_in(cwd, &["stats", "kb.folio"]);
    assert!(
        stdout(&shown).contains("keep the newest 1 versions"),
        "{}",
        stdout(&shown)
    );
    let refused = run_in(
        env!("CARGO_BIN_EXE_folio"),
        Some(cwd),
        &["retention", "kb.folio", "--max-age", "7 days"],
    );
    assert!(!refused.status.success());
}
