//! The command line loses no data silently and prints what a script can trust (issue 11,
//! items 4 and 6). Every argument's help text and the command list of `docs/cli.md` are
//! checked by unit tests in `cli/src/commands.rs`, which walk clap's command tree.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::folio;

fn folio_in(cwd: Option<&Path>, args: &[&str]) -> Output {
    folio_testkit::cli::run_in(env!("CARGO_BIN_EXE_folio"), cwd, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must succeed and returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = folio(args);
    assert!(out.status.success(), "folio {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Runs a command with `--json` that must succeed and parses its whole stdout.
fn json(args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = ok(&args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("folio {args:?}: {e}:\n{out}"))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write fixture");
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A temporary folder (dropped with the first value) holding the path of a store not yet
/// made and `d.jsonl` with `records`.
fn fixture(records: &str) -> (tempfile::TempDir, String, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = utf8(&dir.path().join("s.folio")).to_string();
    let docs = dir.path().join("d.jsonl");
    write(&docs, records);
    (dir, store, docs)
}

fn documents(store: &str) -> u64 {
    json(&["stats", store])["documents"]
        .as_u64()
        .expect("documents")
}

// ---- 4. No silent data loss ----

#[test]
fn demo_refuses_to_overwrite_a_file_it_did_not_make() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("notes.md");
    write(&docs, "# Notes\n\nThe only copy of my notes.\n");
    let mine = dir.path().join("mine.folio");
    ok(&["ingest", utf8(&mine), utf8(&docs)]);

    let out = folio(&["demo", "--store", utf8(&mine)]);
    assert!(
        !out.status.success(),
        "demo overwrote a store it did not make"
    );
    assert!(
        stderr(&out).contains("not made by `folio demo`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(documents(utf8(&mine)), 1);
    let hits = json(&["search", utf8(&mine), "notes"]);
    assert_eq!(hits["results"][0]["doc_id"], "notes.md");

    let text = dir.path().join("thesis.txt");
    write(&text, "Four years of work.");
    assert!(!folio(&["demo", "--store", utf8(&text)]).status.success());
    assert_eq!(
        std::fs::read_to_string(&text).expect("read"),
        "Four years of work."
    );

    // A store the demo made is its own to replace.
    let demo = dir.path().join("demo.folio");
    ok(&["demo", "--store", utf8(&demo)]);
    ok(&["demo", "--store", utf8(&demo)]);
}

#[test]
fn acl_without_principals_is_refused_and_public_takes_a_flag() {
    let (_dir, store, docs) = fixture(
        "{\"doc_id\": \"salaries\", \"text\": \"The salary bands for next year.\", \"acl\": [\"hr\"]}\n",
    );
    let s = store.as_str();
    ok(&["ingest", s, utf8(&docs)]);
    let hits = |who: &[&str]| {
        let mut args = vec!["search", s, "salary bands"];
        for p in who {
            args.extend(["--as", p]);
        }
        json(&args)["results"].as_array().expect("results").len()
    };
    assert_eq!((hits(&[]), hits(&["hr"])), (0, 1));

    for args in [vec!["acl", s, "salaries"], vec!["acl", s, "salaries", ""]] {
        let out = folio(&args);
        assert!(!out.status.success(), "{args:?} made the document public");
        assert!(stderr(&out).contains("--public"), "{}", stderr(&out));
    }
    assert_eq!(hits(&[]), 0, "a refused acl changed nothing");
    assert!(!folio(&["acl", s, "salaries", "hr", "--public"])
        .status
        .success());

    let done = json(&["acl", s, "salaries", "--public"]);
    assert_eq!(done["principals"], serde_json::json!([]));
    assert_eq!(hits(&[]), 1);
}

/// `--wait-followers`: nothing published, it returns at once; an index published and no
/// follower running, it fails once the time is up, the change committed; once the entry is
/// acknowledged, it succeeds.
#[test]
fn acl_and_delete_wait_for_the_followers_when_asked() {
    let (_dir, store, docs) = fixture(
        "{\"doc_id\": \"a\", \"text\": \"Alpha notes.\", \"acl\": [\"hr\"]}\n{\"doc_id\": \"b\", \"text\": \"Beta notes.\"}\n",
    );
    let s = store.as_str();
    ok(&["ingest", s, utf8(&docs)]);
    ok(&["acl", s, "a", "ops", "--wait-followers", "5"]);
    {
        let opened = folio::Store::open(&store).expect("open");
        opened
            .outbox()
            .mark_published("default", "http://127.0.0.1:19530", "folio")
            .expect("mark");
    }
    let out = folio(&["acl", s, "a", "eng", "--wait-followers", "0.2"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no follower applied the change within 0.2s"),
        "{}",
        stderr(&out)
    );
    let opened = folio::Store::open(&store).expect("open");
    assert_eq!(
        opened.document("a").expect("read").expect("kept").acl,
        ["eng"],
        "committed"
    );
    let pending = opened.outbox().pending(usize::MAX).expect("pending");
    assert_eq!(pending.len(), 1);
    opened.outbox().acknowledge(pending[0].seq).expect("ack");
    drop(opened);
    // The delete's entry is acknowledged by another process while the command waits.
    let path = store.clone();
    let acknowledger = std::thread::spawn(move || {
        let opened = folio::Store::open(&path).expect("open");
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(30) {
            if let Some(entry) = opened.outbox().pending(1).expect("pending").first() {
                opened.outbox().acknowledge(entry.seq).expect("ack");
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    });
    ok(&["delete", s, "b", "--wait-followers", "30"]);
    assert!(acknowledger.join().expect("thread"));
}

#[test]
fn file_ids_are_stable_however_the_path_is_spelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs/guides")).expect("mkdir");
    let file = root.join("docs/guides/deploy.md");
    write(&file, "# Deploys\n\nRoll back with `release rollback`.\n");
    std::os::unix::fs::symlink(root.join("docs"), root.join("link")).expect("symlink");
    let store = root.join("s.folio");
    let s = utf8(&store);

    ok(&["ingest", s, utf8(&file)]);
    // Spelled relative to another working directory, through `..`, through a symlink,
    // or found by walking a directory: the same document.
    let spellings: [(&Path, &str); 5] = [
        (root, "docs"),
        (root, "docs/guides/deploy.md"),
        (&root.join("docs"), "./guides/../guides/deploy.md"),
        (root, "link/guides/deploy.md"),
        (&root.join("docs/guides"), "."),
    ];
    for (cwd, spelled) in spellings {
        let out = folio_in(Some(cwd), &["ingest", s, spelled]);
        assert!(out.status.success(), "{spelled}: {}", stderr(&out));
        assert_eq!(documents(s), 1, "{spelled} made another document");
        assert!(stdout(&out).contains("0 added"), "{}", stdout(&out));
    }
    // The rule docs/cli.md states: the real path relative to the store's folder.
    let chunks = json(&["chunks", s, "docs/guides/deploy.md"]);
    assert!(!chunks.as_array().expect("chunks").is_empty());
}

#[test]
fn ingest_reports_added_replaced_unchanged_and_warns_on_an_acl_change() {
    let (_dir, store, docs) = fixture(
        "{\"doc_id\": \"a\", \"text\": \"Alpha text.\", \"acl\": [\"x\"]}\n\
         {\"doc_id\": \"b\", \"text\": \"Beta text.\"}\n",
    );
    let s = store.as_str();
    let first = json(&["ingest", s, utf8(&docs)]);
    assert_eq!(
        (&first["added"], &first["replaced"], &first["unchanged"]),
        (&2.into(), &0.into(), &0.into())
    );

    write(
        &docs,
        "{\"doc_id\": \"a\", \"text\": \"Alpha text.\", \"acl\": [\"x\"]}\n\
         {\"doc_id\": \"b\", \"text\": \"Beta text, revised.\"}\n\
         {\"doc_id\": \"c\", \"text\": \"Gamma text.\"}\n",
    );
    let out = folio(&["ingest", s, utf8(&docs)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 added, 1 replaced, 1 unchanged"),
        "{}",
        stdout(&out)
    );
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));

    // Given again without an ACL (issue 30: the document became public by accident): it
    // keeps the stored one, unchanged; a new text keeps it too, and says so.
    write(&docs, "{\"doc_id\": \"a\", \"text\": \"Alpha text.\"}\n");
    let kept = json(&["ingest", s, utf8(&docs)]);
    assert_eq!(
        (&kept["unchanged"], &kept["acl_changes"]),
        (&1.into(), &serde_json::json!([]))
    );
    write(
        &docs,
        "{\"doc_id\": \"a\", \"text\": \"Alpha text, revised.\"}\n",
    );
    let out = folio(&["ingest", s, utf8(&docs)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`a` keeps who may see it"),
        "{}",
        stderr(&out)
    );
    let stored = json(&["search", s, "alpha", "--as", "x"]);
    assert_eq!(stored["results"][0]["doc_id"], "a");
    let public = json(&["search", s, "alpha"]);
    let ids: Vec<&str> = public["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|h| h["doc_id"].as_str())
        .collect();
    assert!(
        !ids.contains(&"a"),
        "a restricted document answered a public search: {ids:?}"
    );

    // Public only when asked: replaced, and the change of audience is said aloud.
    write(&docs, "{\"doc_id\": \"a\", \"text\": \"Alpha text.\"}\n");
    let out = folio(&["ingest", s, utf8(&docs), "--json", "--public"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(
        (&report["replaced"], &report["unchanged"]),
        (&1.into(), &0.into())
    );
    assert_eq!(
        report["acl_changes"],
        serde_json::json!([{"doc_id": "a", "before": ["x"], "after": []}])
    );
    let warning = stderr(&out);
    assert!(
        warning.contains("warning: `a` was visible to x, now to everyone"),
        "{warning}"
    );
}

#[test]
fn a_symlink_loop_is_followed_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    write(&docs.join("a.md"), "# A\n\nSome text.\n");
    std::os::unix::fs::symlink(&docs, docs.join("again")).expect("symlink");
    let store = dir.path().join("s.folio");
    ok(&["ingest", utf8(&store), utf8(&docs)]);
    assert_eq!(documents(utf8(&store)), 1);
}

#[test]
fn a_zero_byte_file_becomes_a_new_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("empty.folio");
    write(&store, "");
    let docs = dir.path().join("a.txt");
    write(&docs, "Lunch is served at noon.");
    ok(&["ingest", utf8(&store), utf8(&docs)]);
    let hits = json(&["search", utf8(&store), "lunch"]);
    assert_eq!(hits["results"][0]["doc_id"], "a.txt");
}

#[test]
fn a_missing_parent_folder_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("a.txt");
    write(&docs, "Lunch is served at noon.");
    let folder = dir.path().join("no-such-folder");
    let store = folder.join("s.folio");
    let out = folio(&["ingest", utf8(&store), utf8(&docs)]);
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(
        message.contains("does not exist") && message.contains(utf8(&folder)),
        "{message}"
    );
    assert!(
        !folder.exists(),
        "the folder is not created behind the user's back"
    );
}

// ---- 6. Output a script can trust ----

#[test]
fn every_command_that_changes_the_store_prints_json() {
    let (_dir, store, docs) = fixture(
        "{\"doc_id\": \"a\", \"text\": \"Alpha text about deploys.\"}\n\
         {\"doc_id\": \"b\", \"text\": \"Beta text about lunch.\"}\n",
    );
    let s = store.as_str();
    assert_eq!(json(&["ingest", s, utf8(&docs)])["added"], 2);
    assert_eq!(
        json(&["acl", s, "a", "x,y"])["principals"],
        serde_json::json!(["x", "y"])
    );
    assert_eq!(
        json(&["delete", s, "b"])["doc_ids"],
        serde_json::json!(["b"])
    );
    assert_eq!(
        json(&["index", "create", s, "small", "--chunking", "structure:40"])["created"],
        "small"
    );
    assert_eq!(json(&["tag", s, "default@1", "first"])["version"], 1);
    assert_eq!(
        json(&["tag", s, "default", "first", "--remove"])["removed"],
        true
    );
    assert_eq!(
        json(&["alias", "set", s, "prod", "default@1"])["routes"][0]["version"],
        1
    );
    assert_eq!(json(&["route", s, "prod", "alice"])["version"], 1);
    let logged = json(&["search", s, "alpha", "--log"])["request_id"].clone();
    let logged = logged.as_u64().expect("request id").to_string();
    assert_eq!(
        json(&["log", "feedback", s, &logged, "up"])["rating"],
        "thumb_up"
    );
    assert_eq!(json(&["rollback", s, "prod", "2"])["version"], 2);
    assert_eq!(json(&["rollback", s, "default", "1"])["version"], 1);
    assert_eq!(
        json(&["rollback", s, "default", "--unpin"])["was_pinned_to"],
        1
    );
    assert_eq!(json(&["alias", "remove", s, "prod"])["removed"], "prod");
    assert!(json(&["compact", s])["merged"].is_object());
    assert!(json(&["gc", s, "--keep", "1"])["deleted"]["versions"].is_u64());
    assert_eq!(json(&["index", "drop", s, "small"])["dropped"], "small");
    assert!(json(&["compact-file", s])["bytes_after"].is_u64());
}

#[test]
fn check_json_is_one_document() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("s.folio");
    let docs = dir.path().join("a.txt");
    write(&docs, "Lunch is served at noon.");
    ok(&["ingest", utf8(&store), utf8(&docs)]);
    let report = json(&["check", utf8(&store)]);
    assert_eq!(report["documents"], 1);
    assert_eq!(report["problems"], serde_json::json!([]));
}

#[test]
fn the_version_printed_after_a_commit_is_the_one_searches_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("s.folio");
    let s = utf8(&store);
    let docs = dir.path().join("d.jsonl");
    let write_docs = |word: &str| {
        write(
            &docs,
            &format!(
                "{{\"doc_id\": \"a\", \"text\": \"Lunch is served at {word}.\"}}\n\
                 {{\"doc_id\": \"b\", \"text\": \"Parking opens at {word}.\"}}\n"
            ),
        );
    };
    write_docs("noon");
    ok(&["ingest", s, utf8(&docs)]);
    // Replacing every document leaves a dead segment; the merge policy rewrites it in a
    // version of its own right after the commit.
    write_docs("one");
    let report = json(&["ingest", s, utf8(&docs)]);
    let searched = json(&["search", s, "lunch"])["version"].clone();
    assert_eq!(report["versions"]["default"], searched, "{report}");
    assert_eq!(searched, 3, "the merge made a version after the commit");

    write_docs("two");
    let text = ok(&["ingest", s, utf8(&docs)]);
    let searched = json(&["search", s, "lunch"])["version"].clone();
    assert!(text.contains(&format!("default@{searched}")), "{text}");
    let deleted = json(&["delete", s, "b"]);
    assert_eq!(
        deleted["versions"]["default"],
        json(&["search", s, "lunch"])["version"]
    );
}

#[test]
fn control_characters_are_escaped_on_a_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("s.folio");
    let s = utf8(&store);
    let docs = dir.path().join("d.jsonl");
    // An id that would turn the terminal red, and a text that would clear the screen and
    // reverse the rest of the line.
    write(
        &docs,
        "{\"doc_id\": \"evil\\u001b[31m\", \"text\": \"# Lunch\\n\\nLunch \\u001b[2J is \\u202e served at noon.\"}\n",
    );
    ok(&["ingest", s, utf8(&docs)]);
    let evil = "evil\u{1b}[31m";
    for args in [
        vec!["search", s, "lunch"],
        vec!["chunks", s, evil],
        vec!["acl", s, evil, "x"],
        vec!["delete", s, "nobody", evil],
    ] {
        let out = folio(&args);
        let both = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            !both.contains('\u{1b}') && !both.contains('\u{202e}'),
            "{args:?}: {both:?}"
        );
    }
    let shown = ok(&["search", s, "lunch", "--as", "x"]);
    assert!(shown.contains("evil\\u{1b}[31m"), "{shown}");
    assert!(shown.contains("\\u{202e}"), "{shown}");
    // JSON keeps the text as it is (its own escapes are enough).
    let hits = json(&["search", s, "lunch", "--as", "x"]);
    assert_eq!(hits["results"][0]["doc_id"], evil);
}
