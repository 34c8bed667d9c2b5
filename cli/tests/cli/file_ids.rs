//! File ids that survive a move (issue 31, item 2): ids are relative to a root the store
//! records (`--root`, else the current folder at the first ingest of files), the same
//! wherever the store file lives; a file outside the root is refused, or skipped with a
//! warning when found in a folder; a store made before roots were recorded keeps matching
//! its ids, absolute ones included; `folio stats` shows the root.

use std::path::{Path, PathBuf};
use std::process::Output;

use folio::input::{read_paths, FileRoot, Outside};
use folio::Store;
use folio_testkit::cli::{run_in, stderr, stdout, utf8};

/// Runs folio in `cwd`, whatever the folder of its first path.
fn folio_in(cwd: &Path, args: &[&str]) -> Output {
    run_in(env!("CARGO_BIN_EXE_folio"), Some(cwd), args)
}

/// Runs a command in `cwd` that must succeed, with `--json`; its output.
fn json_in(cwd: &Path, args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = folio_in(cwd, &args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn write(path: &Path, text: &str) {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).expect("mkdir");
    }
    std::fs::write(path, text).expect("write fixture");
}

/// `corpus/` of three Markdown files under `project`.
fn corpus(project: &Path) -> PathBuf {
    let corpus = project.join("corpus");
    write(
        &corpus.join("deploy.md"),
        "# Deploys\n\nRoll back with `release rollback`.\n",
    );
    write(
        &corpus.join("guides/onboarding.md"),
        "# Onboarding\n\nCollect your badge.\n",
    );
    write(
        &corpus.join("travel.md"),
        "# Travel\n\nHotels up to 180 EUR a night.\n",
    );
    corpus
}

/// The stored document ids, sorted.
fn ids(cwd: &Path, store: &Path) -> Vec<String> {
    let out = folio_in(cwd, &["search", utf8(store), "a", "--k", "50", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut ids: Vec<String> = response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| hit["doc_id"].as_str().expect("id").to_string())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

fn real(path: &Path) -> String {
    utf8(&std::fs::canonicalize(path).expect("real path")).to_string()
}

const CORPUS_IDS: [&str; 3] = [
    "corpus/deploy.md",
    "corpus/guides/onboarding.md",
    "corpus/travel.md",
];

/// The finding: a store in `stores/` got absolute ids, and a copy of it next to the
/// corpus, re-ingested, added every file again.
#[test]
fn ids_are_the_same_wherever_the_store_lives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    let corpus = corpus(&project);
    std::fs::create_dir_all(project.join("stores")).expect("mkdir");
    let store = project.join("stores/kb.folio");
    let first = json_in(&project, &["ingest", utf8(&store), "corpus"]);
    assert_eq!(first["added"], 3);
    assert_eq!(ids(&project, &store), CORPUS_IDS);
    assert_eq!(first["root"], real(&project));

    // Copied next to the corpus, or to a folder of its own, and ingested from there.
    let beside = corpus.join("kb.folio");
    let elsewhere_dir = tempfile::tempdir().expect("temp dir");
    let elsewhere = elsewhere_dir.path().join("kb.folio");
    for (copy, cwd) in [
        (&beside, &corpus),
        (&elsewhere, &elsewhere_dir.path().to_path_buf()),
    ] {
        std::fs::copy(&store, copy).expect("copy the store");
        let again = json_in(cwd, &["ingest", utf8(copy), utf8(&corpus)]);
        assert_eq!(
            (&again["added"], &again["replaced"], &again["unchanged"]),
            (&0.into(), &0.into(), &3.into()),
            "{again}"
        );
        let stats = json_in(cwd, &["stats", utf8(copy)]);
        assert_eq!(stats["documents"], 3);
        assert_eq!(stats["file_root"]["path"], real(&project));
        assert_eq!(stats["file_root"]["outside"], "refused");
    }
    let text = folio_in(&project, &["stats", utf8(&store)]);
    assert!(
        stdout(&text).contains(&format!("file ids relative to {}", real(&project))),
        "{}",
        stdout(&text)
    );
}

/// Store and corpus copied elsewhere together: `--root NEW` matches every id, and so does
/// an ingest from the new folder once the recorded one is gone.
#[test]
fn a_moved_corpus_matches_with_root_or_from_the_new_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let old = dir.path().join("old");
    let corpus_old = corpus(&old);
    let store_old = old.join("kb.folio");
    json_in(&old, &["ingest", utf8(&store_old), utf8(&corpus_old)]);

    let new = dir.path().join("new");
    let corpus_new = corpus(&new);
    let store_new = new.join("kb.folio");
    std::fs::copy(&store_old, &store_new).expect("copy the store");
    // The recorded root still exists: the copy's files lie outside it, each is named, and
    // with nothing left to read the ingest fails, saying what to do.
    let outside = folio_in(&new, &["ingest", utf8(&store_new), utf8(&corpus_new)]);
    assert!(!outside.status.success());
    let message = stderr(&outside);
    assert!(
        message.contains("onboarding.md")
            && message.contains(&real(&old))
            && message.contains("--root"),
        "{message}"
    );
    let moved = json_in(
        dir.path(),
        &[
            "ingest",
            utf8(&store_new),
            utf8(&corpus_new),
            "--root",
            utf8(&new),
        ],
    );
    // The same ids: replaced, not added (their `file://` sources moved).
    assert_eq!(
        (&moved["added"], &moved["replaced"]),
        (&0.into(), &3.into())
    );
    assert_eq!(ids(&new, &store_new), CORPUS_IDS);
    assert_eq!(
        json_in(&new, &["stats", utf8(&store_new)])["file_root"]["path"],
        real(&new)
    );

    // The old folder gone, a copy of its store ingested from the new folder without --root.
    let store_copy = new.join("copy.folio");
    std::fs::copy(&store_old, &store_copy).expect("copy the store");
    std::fs::remove_dir_all(&old).expect("rm the old folder");
    let out = folio_in(&new, &["ingest", utf8(&store_copy), "corpus", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (&report["added"], &report["replaced"]),
        (&0.into(), &3.into())
    );
    assert_eq!(ids(&new, &store_copy), CORPUS_IDS);
    assert!(stderr(&out).contains("is gone"), "{}", stderr(&out));
    assert_eq!(
        json_in(&new, &["stats", utf8(&store_copy)])["file_root"]["path"],
        real(&new)
    );
}

#[test]
fn a_file_outside_the_root_is_refused_or_skipped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    let corpus = corpus(&project);
    let store = project.join("kb.folio");
    let other = dir.path().join("other");
    write(
        &other.join("stray.md"),
        "# Stray\n\nNot under the project.\n",
    );

    // JSON Lines records carry their ids: read from anywhere, and no root is recorded.
    let records = other.join("records.jsonl");
    write(&records, "{\"doc_id\": \"r1\", \"text\": \"A record.\"}\n");
    json_in(&other, &["ingest", utf8(&store), utf8(&records)]);
    assert!(json_in(&project, &["stats", utf8(&store)])["file_root"].is_null());
    json_in(&project, &["ingest", utf8(&store), "corpus"]);

    // Named on its own: refused, naming the file and the root; nothing written.
    let stray = other.join("stray.md");
    let refused = folio_in(&project, &["ingest", utf8(&store), "corpus", utf8(&stray)]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains("stray.md")
            && message.contains(&real(&project))
            && message.contains("--root"),
        "{message}"
    );
    assert_eq!(json_in(&project, &["stats", utf8(&store)])["documents"], 4);

    // Found in a folder (through a symlink out of the root): skipped with a warning, the
    // others ingested; --prune leaves a file that is still there alone.
    std::os::unix::fs::symlink(&other, corpus.join("linked")).expect("symlink");
    write(&corpus.join("new.md"), "# New\n\nA new page.\n");
    let out = folio_in(
        &project,
        &["ingest", utf8(&store), "corpus", "--prune", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stray.md") && stderr(&out).contains("not read"),
        "{}",
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // new.md added; the three files and the record (`linked/records.jsonl`) unchanged.
    assert_eq!(
        (&report["added"], &report["unchanged"]),
        (&1.into(), &4.into())
    );
    assert_eq!(report["outside_root"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["pruned"], serde_json::json!([]));

    // A narrower root leaves most files out; --prune deletes none of them (they are there).
    let out = folio_in(
        &project,
        &[
            "ingest",
            utf8(&store),
            "corpus",
            "--root",
            "corpus/guides",
            "--prune",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("now relative to"), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["outside_root"].as_array().map(Vec::len), Some(4));
    assert_eq!(report["pruned"], serde_json::json!([]));
    assert_eq!(report["added"], 1, "guides/onboarding.md as onboarding.md");
}

/// A store of older folio: ids relative to the store's folder, absolute outside it, and no
/// recorded root. Re-ingesting its files from any folder matches every id.
#[test]
fn a_store_made_before_roots_keeps_matching_its_ids() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    let corpus = corpus(&project);
    let outside = dir.path().join("outside/notes.md");
    write(&outside, "# Notes\n\nKept beside the project.\n");
    let store = project.join("kb.folio");
    {
        let legacy = Store::builder()
            .create(true)
            .open(&store)
            .expect("create the store");
        let inside = corpus.join("deploy.md");
        let mut batch = legacy.batch();
        for (file, id) in [
            (&inside, "corpus/deploy.md".to_string()),
            (&outside, real(&outside)),
        ] {
            let folder = file.parent().expect("folder");
            let read =
                read_paths(std::slice::from_ref(file), &FileRoot::new(folder), None).expect("read");
            let mut doc = read.documents.into_iter().next().expect("a document");
            doc.doc_id = id;
            batch.upsert(doc);
        }
        batch.commit().expect("commit");
        assert_eq!(legacy.file_root().expect("root"), None);
    }

    let cwd = tempfile::tempdir().expect("temp dir");
    let again = json_in(
        cwd.path(),
        &[
            "ingest",
            utf8(&store),
            utf8(&corpus.join("deploy.md")),
            utf8(&outside),
        ],
    );
    assert_eq!(
        (&again["added"], &again["unchanged"]),
        (&0.into(), &2.into()),
        "{again}"
    );
    // The store's folder is now its recorded root; new files follow the same rule.
    let recorded = Store::open_read_only(&store)
        .expect("open")
        .file_root()
        .expect("root");
    assert_eq!(
        recorded,
        Some(FileRoot {
            path: std::fs::canonicalize(&project).expect("real"),
            outside: Outside::AbsoluteId
        })
    );
    let more = dir.path().join("outside/more.md");
    write(&more, "# More\n\nAnother note.\n");
    json_in(
        cwd.path(),
        &["ingest", utf8(&store), utf8(&corpus), utf8(&more)],
    );
    let mut expected = vec![real(&outside), real(&more)];
    expected.extend(CORPUS_IDS.iter().map(|id| id.to_string()));
    expected.sort();
    assert_eq!(ids(cwd.path(), &store), expected);
}

#[test]
fn a_root_is_an_absolute_utf8_path() {
    let store = Store::builder().open_in_memory().expect("store");
    let refused = store.set_file_root(&FileRoot::new("relative/folder"));
    assert!(
        matches!(refused, Err(folio::store::WriteError::InvalidParameter(_))),
        "{refused:?}"
    );
    assert_eq!(store.file_root().expect("root"), None);
    let root = FileRoot::new("/srv/corpus");
    store.set_file_root(&root).expect("record");
    assert_eq!(store.file_root().expect("root"), Some(root));
}
