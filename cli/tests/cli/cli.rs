//! The `folio` command end to end: ingest, search (text and JSON), stats, delete, errors.

use std::path::Path;
use std::process::{Command, Output};

use crate::folio;

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

#[test]
fn search_where_filters_by_metadata_and_reports_bad_expressions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    // Front matter becomes typed metadata.
    write(
        &docs.join("cards.md"),
        "---\nproduct: cards\nversion: 3\ntags: [billing, faq]\n---\n# Refunds\n\n## Cards\n\nCard refunds take five days.\n",
    );
    let jsonl = dir.path().join("more.jsonl");
    write(
        &jsonl,
        concat!(
            "{\"doc_id\": \"old\", \"format\": \"markdown\", \"updated_at\": \"2023-05-01\", \"metadata\": {\"product\": \"loans\", \"reviewed\": \"2023-06-01\"}, \"text\": \"# Refunds\\n\\nLoan refunds take a month.\"}\n",
            "{\"doc_id\": \"new\", \"format\": \"markdown\", \"updated_at\": \"2024-02-01\", \"metadata\": {\"product\": \"loans\", \"draft\": true}, \"text\": \"# Fees\\n\\nLoan fees and refunds are listed here.\"}\n",
        ),
    );
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    for path in [&docs, &jsonl] {
        let out = folio(&["ingest", store, path.to_str().expect("utf-8")]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let search = |filters: &[&str]| {
        let mut args = vec!["search", store, "refunds", "--k", "10", "--json"];
        for f in filters {
            args.extend(["--where", f]);
        }
        let out = folio(&args);
        assert!(out.status.success(), "{filters:?}: {}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        let mut ids: Vec<String> = json["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["doc_id"].as_str().expect("doc_id").to_string())
            .collect();
        ids.sort();
        (ids, json)
    };
    assert_eq!(search(&[]).0, ["docs/cards.md", "new", "old"]);
    assert_eq!(
        search(&[r#"section_path ^= "Refunds""#]).0,
        ["docs/cards.md", "old"]
    );
    assert_eq!(
        search(&[r#"section_path ^= "Refunds""#, "updated_at >= 2024-01-01"]).0,
        Vec::<String>::new()
    );
    assert_eq!(search(&["updated_at >= 2024-01-01"]).0, ["new"]);
    assert_eq!(
        search(&["version >= 3", "tags contains \"faq\""]).0,
        ["docs/cards.md"]
    );
    assert_eq!(
        search(&["reviewed < 2024-01-01 or draft = true"]).0,
        ["new", "old"]
    );
    let (ids, json) = search(&[r#"product = "cards""#]);
    assert_eq!(ids, ["docs/cards.md"]);
    assert_eq!(
        json["results"][0]["metadata"],
        serde_json::json!({"product": "cards", "version": 3.0, "tags": ["billing", "faq"]})
    );
    let (_, json) = search(&[r#"doc_id = "old""#]);
    assert_eq!(json["results"][0]["metadata"]["reviewed"], "2023-06-01");

    for (expression, position) in [
        ("updated_at >= ", 15),
        ("product = cards", 11),
        ("(a = 1", 7),
        ("a ~ 1", 3),
    ] {
        let out = folio(&["search", store, "refunds", "--where", expression]);
        assert_eq!(out.status.code(), Some(1), "{expression}");
        let message = stderr(&out);
        assert!(
            message.contains(&format!("at position {position}")) && message.contains(expression),
            "{expression}: {message}"
        );
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn another_command_name_runs_the_folio_name_program_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("folio-hello");
    write(&program, "#!/bin/sh\necho \"hello $*\"\nexit 3\n");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(["hello", "a", "--b"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "hello a --b\n");
    // Its exit code is folio's.
    assert_eq!(out.status.code(), Some(3));

    let missing = folio(&["no-such-command"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("folio-no-such-command"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn ingest_dry_run_cuts_and_counts_but_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let doc = dir.path().join("guide.md");
    write(
        &doc,
        "# Guide\n\n## Refunds\n\nAsk within 30 days.\n\n## Returns\n\nShip it back.\n",
    );
    let path = dir.path().join("s.folio");
    let store = path.to_str().expect("utf-8 path");
    let doc = doc.to_str().expect("utf-8");

    // A missing store is not created.
    let out = folio(&["ingest", store, doc, "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["added"], 1);
    let planned = report["chunks"].as_u64().expect("chunks");
    assert!(planned >= 1, "{report}");
    assert!(!path.exists(), "a dry run created the store");

    // Against a store: compared with what it holds, the file left byte for byte.
    assert!(folio(&["ingest", store, doc]).status.success());
    let before = std::fs::read(&path).expect("read store");
    let stats: serde_json::Value =
        serde_json::from_str(&stdout(&folio(&["stats", store, "--json"]))).expect("stats json");
    write(
        dir.path().join("guide.md").as_path(),
        "# Guide\n\n## Refunds\n\nAsk within 60 days.\n",
    );
    let out = folio(&["ingest", store, doc, "--dry-run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("dry run, nothing written"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("1 replaced"), "{}", stdout(&out));
    assert_eq!(std::fs::read(&path).expect("read store"), before);
    let after: serde_json::Value =
        serde_json::from_str(&stdout(&folio(&["stats", store, "--json"]))).expect("stats json");
    assert_eq!(stats, after);
}

/// Front matter's fields are typed metadata and set the document's own dates: the README's
/// `--where 'updated_at >= …'` finds a file whose front matter says so (it found nothing
/// when the field was only `metadata.updated_at`), and a YAML list filters by element.
#[test]
fn front_matter_dates_and_lists_are_filterable() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        &dir.path().join("refunds.md"),
        "---\ntitle: Refund rules\nupdated_at: 2024-03-01\ntags:\n  - billing\n  - cards\nacl: [billing]\n---\n# Refunds\n\nCard refunds take five days.\n",
    );
    write(
        &dir.path().join("old.md"),
        "---\nupdated_at: 2023-01-01\ntags: [misc]\n---\n# Old\n\nCard refunds were slower.\n",
    );
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let out = folio(&[
        "ingest",
        store,
        dir.path().join("refunds.md").to_str().expect("utf-8"),
        dir.path().join("old.md").to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let found = |filter: &str| -> Vec<String> {
        let out = folio(&["search", store, "card refunds", "--where", filter, "--json"]);
        assert!(out.status.success(), "{filter}: {}", stderr(&out));
        let response: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
        let mut ids: Vec<String> = response["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|hit| {
                hit["doc_id"]
                    .as_str()
                    .expect("doc_id")
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        ids.sort();
        ids.dedup();
        ids
    };
    assert_eq!(found("updated_at >= 2024-01-01"), ["refunds.md"]);
    assert_eq!(found("metadata.updated_at >= 2024-01-01"), ["refunds.md"]);
    assert_eq!(found(r#"tags = "cards""#), ["refunds.md"]);
    assert_eq!(found(r#"tags contains "misc""#), ["old.md"]);
    // The front matter's `acl` is metadata, never the ACL: the document stays public.
    assert_eq!(found(r#"acl = "billing""#), ["refunds.md"]);
    let out = folio(&["search", store, "card refunds", "--json"]);
    let response: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let titles: Vec<&str> = response["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|h| h["title"].as_str())
        .collect();
    assert!(titles.contains(&"Refund rules"), "{titles:?}");
}

/// `--prune` mirrors a folder: the documents of files that are gone go (issue 31: a
/// re-ingest never removed them); without it they stay, and files elsewhere are untouched.
#[test]
fn prune_removes_the_documents_of_files_that_are_gone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    for name in ["a.md", "b.md", "c.md"] {
        write(&docs.join(name), &format!("# {name}\n\nText of {name}.\n"));
    }
    let other = dir.path().join("other.md");
    write(&other, "# Other\n\nElsewhere.\n");
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let folder = docs.to_str().expect("utf-8");
    let ok = |args: &[&str]| {
        let out = folio(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    ok(&["ingest", store, folder, other.to_str().expect("utf-8")]);
    std::fs::remove_file(docs.join("b.md")).expect("rm");
    ok(&["ingest", store, folder]);
    let ids = |store: &str| -> Vec<String> {
        let listed = folio(&["search", store, "text", "--k", "10", "--json"]);
        let response: serde_json::Value = serde_json::from_str(&stdout(&listed)).expect("json");
        let mut ids: Vec<String> = response["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["doc_id"].as_str().expect("id").to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(store),
        ["docs/a.md", "docs/b.md", "docs/c.md", "other.md"],
        "kept without --prune"
    );
    let report: serde_json::Value =
        serde_json::from_str(&ok(&["ingest", store, folder, "--prune", "--json"])).expect("json");
    assert_eq!(report["pruned"], serde_json::json!(["docs/b.md"]));
    assert_eq!(ids(store), ["docs/a.md", "docs/c.md", "other.md"]);
    assert!(ok(&["ingest", store, folder, "--prune"]).contains("0 pruned"));
}

/// A rare word the hash embedder's vector drowns among common ones: the dense search ranks
/// another document first, the lexical one (a rare word weighs most in BM25) finds it, and
/// a hybrid search names its mode in JSON.
#[test]
fn lexical_mode_finds_a_rare_word_and_hybrid_json_names_the_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jsonl = dir.path().join("docs.jsonl");
    let mut lines = String::new();
    for i in 0..20 {
        lines.push_str(&format!(
            "{{\"doc_id\": \"budget{i}\", \"text\": \"budget budget budget review number {i}\"}}\n"
        ));
    }
    lines.push_str(
        "{\"doc_id\": \"rare\", \"text\": \"the quarterly planning notes mention zqxjvk once among \
         many other words about offices desks chairs lamps windows doors carpets and hallways\"}\n",
    );
    write(&jsonl, &lines);
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let out = folio(&["ingest", store, jsonl.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));

    let first = |mode: &str| {
        let out = folio(&[
            "search",
            store,
            "zqxjvk budget",
            "--k",
            "1",
            "--mode",
            mode,
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON output");
        assert_eq!(json["mode"]["name"], mode);
        json
    };
    assert_ne!(first("dense")["results"][0]["doc_id"], "rare");
    assert_eq!(first("lexical")["results"][0]["doc_id"], "rare");
    let hybrid = first("hybrid");
    // Without a fusion setting, the library's default fusion.
    assert_eq!(hybrid["mode"]["fusion"]["name"], "weighted");
    assert_eq!(
        hybrid["mode"]["fusion"]["dense_weight"].as_f64(),
        Some(0.7),
        "the weight docs/cli.md names"
    );
    assert_eq!(hybrid["results"].as_array().expect("results").len(), 1);

    let out = folio(&[
        "search", store, "zqxjvk", "--mode", "lexical", "--rrf-k", "5",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("need --mode hybrid"),
        "{}",
        stderr(&out)
    );
    let out = folio(&[
        "search",
        store,
        "zqxjvk",
        "--mode",
        "hybrid",
        "--fusion",
        "weighted",
        "--dense-weight",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("dense_weight"), "{}", stderr(&out));
}

#[test]
fn rerank_reorders_through_a_command_and_json_shows_every_stage_score() {
    let dir = tempfile::tempdir().expect("temp dir");
    let jsonl = dir.path().join("docs.jsonl");
    write(
        &jsonl,
        "{\"doc_id\": \"short\", \"text\": \"refund\"}\n\
         {\"doc_id\": \"long\", \"text\": \"a refund is paid back within fourteen days\"}\n",
    );
    // Scores a text by its length: the longer document first.
    let script = dir.path().join("rerank.py");
    write(
        &script,
        "import json, struct, sys\n\
         for line in sys.stdin:\n    \
             texts = json.loads(line)[\"texts\"]\n    \
             sys.stdout.buffer.write(struct.pack(\"<II\", len(texts), 1))\n    \
             for t in texts:\n        \
                 sys.stdout.buffer.write(struct.pack(\"<f\", float(len(t))))\n    \
             sys.stdout.buffer.flush()\n",
    );
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let out = folio(&["ingest", store, jsonl.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let spec = format!("cmd:\"python3 {}\"", script.display());
    let out = folio(&[
        "search",
        store,
        "refund",
        "--mode",
        "lexical",
        "--rerank",
        &spec,
        "--rerank-top",
        "5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON output");
    assert_eq!(
        json["reranker"],
        format!("cmd:python3 {}", script.display())
    );
    let first = &json["results"][0];
    assert_eq!(first["doc_id"], "long");
    assert_eq!(first["scores"]["rerank"], first["score"]);
    assert!(first["scores"]["lexical"].as_f64().expect("a BM25 score") > 0.0);
    assert!(first["scores"].get("dense").is_none(), "{first}");

    let out = folio(&["search", store, "refund", "--rerank-top", "5"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("need --rerank"), "{}", stderr(&out));
    let out = folio(&["search", store, "refund", "--rerank", "bert-ish"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cmd:"), "{}", stderr(&out));
}
