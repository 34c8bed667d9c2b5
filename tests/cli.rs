//! The `folio` command end to end: ingest, search (text and JSON), stats, delete, errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::path::Path;
use std::process::{Command, Output};

fn folio(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(args)
        .output()
        .expect("run folio")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write fixture");
}

#[test]
fn ingest_search_json_stats_and_delete() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    write(&docs.join("deploy.md"), "# Deploys\n\n## Rolling back\n\nRun `release rollback` to roll back a bad deploy.\n\n```sh\nrelease rollback --to previous\n```\n");
    write(
        &docs.join("notes.txt"),
        "Lunch is served at noon. The cafeteria closes at three.",
    );
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");

    let out = folio(&[
        "ingest",
        store,
        docs.to_str().expect("utf-8"),
        "--acl",
        "eng",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let jsonl = dir.path().join("more.jsonl");
    write(&jsonl, "{\"doc_id\": \"pub1\", \"title\": \"Holidays\", \"format\": \"markdown\", \"text\": \"# Holidays\\n\\nThe office is closed on public holidays.\", \"acl\": []}\n");
    assert!(folio(&["ingest", store, jsonl.to_str().expect("utf-8")])
        .status
        .success());

    let out = folio(&[
        "search",
        store,
        "roll back a deploy",
        "--as",
        "eng",
        "--k",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON output");
    let first = &json["results"][0];
    assert_eq!(first["doc_id"], "docs/deploy.md");
    assert_eq!(
        first["section_path"],
        serde_json::json!(["Deploys", "Rolling back"])
    );
    assert!(first["parent_id"]
        .as_str()
        .expect("parent_id")
        .starts_with("docs/deploy.md#p"));
    assert!(first["children"][0]["start"].as_u64().is_some());
    assert!(json["index"].is_string() && json["version"].is_u64());

    // Without the principal, engineering documents stay hidden.
    let out = folio(&["search", store, "roll back a deploy", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON output");
    for hit in json["results"].as_array().expect("results") {
        assert_eq!(hit["doc_id"], "pub1");
    }

    let out = folio(&["stats", store]);
    assert!(stdout(&out).contains("3 documents"), "{}", stdout(&out));
    assert!(folio(&["delete", store, "docs/deploy.md"]).status.success());
    let out = folio(&["stats", store]);
    assert!(stdout(&out).contains("2 documents"), "{}", stdout(&out));
    let out = folio(&["delete", store, "docs/deploy.md"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no document"), "{}", stderr(&out));
}

#[test]
fn missing_or_corrupt_store_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.folio");
    let out = folio(&["search", missing.to_str().expect("utf-8"), "x"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no store at"), "{}", stderr(&out));

    let garbage = dir.path().join("garbage.folio");
    write(&garbage, &"not a database ".repeat(1000));
    let out = folio(&["stats", garbage.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a folio store"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn demo_runs_offline_and_shows_section_paths() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("demo.folio");
    let out = folio(&["demo", "--store", store.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(" › "), "section paths are shown:\n{text}");
    assert!(
        text.contains("engineering") && text.contains("finance"),
        "{text}"
    );
}

#[test]
fn a_store_of_another_hash_configuration_opens_with_it() {
    use std::sync::Arc;

    use folio::chunk::SourceFormat;
    use folio::document::Document;
    use folio::embed::HashEmbedder;
    use folio::store::Store;

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("eval.folio");
    // What `folio eval --store-dir` leaves behind: the built-in embedder at 2,048 dims.
    let options = Store::builder()
        .create(true)
        .embedder(Arc::new(HashEmbedder::new(2048).expect("config")));
    {
        let store = options.open(&path).expect("create");
        let mut batch = store.batch();
        batch.upsert(Document::new(
            "runbook",
            SourceFormat::Markdown,
            "# Deploys\n\nRun `release rollback` to undo a bad deploy.\n",
        ));
        batch.commit().expect("commit");
    }
    // The library keeps refusing a silent switch of configuration...
    assert!(Store::open(&path).is_err());
    // ...while the command line reads the configuration the store records.
    let store = path.to_str().expect("utf-8 path");
    let out = folio(&["search", store, "undo a deploy", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\"runbook\""), "{}", stdout(&out));
    let out = folio(&["stats", store]);
    assert!(out.status.success(), "{}", stderr(&out));
}
