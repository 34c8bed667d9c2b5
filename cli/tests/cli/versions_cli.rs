//! The version commands of `folio` end to end: indexes, versions, tags, aliases, routing,
//! rollback, search through an alias with a route key and the request log, compaction,
//! gc, and `check` (exit code 0 only when the store is consistent).

use std::path::{Path, PathBuf};

use crate::folio;

use folio_testkit::versions::Checksummed;
use redb::TableDefinition;

/// Runs folio, requires success, returns stdout.
fn ok(args: &[&str]) -> String {
    let out = folio(args);
    assert!(
        out.status.success(),
        "folio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failing(args: &[&str]) -> String {
    let out = folio(args);
    assert!(!out.status.success(), "folio {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
}

#[test]
fn version_commands_end_to_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    write(
        &docs.join("deploy.md"),
        "# Deploys\n\n## Rolling back\n\nRun `release rollback` to roll back a bad deploy.\n",
    );
    write(&docs.join("lunch.txt"), "Lunch is served at noon.");
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    ok(&["ingest", s, docs.to_str().expect("utf-8")]);
    write(&docs.join("lunch.txt"), "Lunch is served at one.");
    write(
        &docs.join("deploy.md"),
        "# Deploys\n\n## Rolling back\n\nRun `release rollback` to undo a bad deploy.\n",
    );
    // Version 2 replaces both documents; the merge policy then rewrites the dead segment
    // as version 3.
    ok(&["ingest", s, docs.to_str().expect("utf-8")]);

    assert!(
        ok(&["index", "create", s, "small", "--chunking", "structure:40"]).contains("version 1")
    );
    let list = ok(&["index", "list", s]);
    assert!(
        list.contains("default: head 3") && list.contains("small: head 1"),
        "{list}"
    );
    assert!(failing(&["index", "create", s, "bad@name"]).contains("invalid name"));

    let versions = ok(&["versions", s, "default"]);
    assert_eq!(versions.lines().count(), 4, "{versions}");
    assert!(
        versions.contains("compact 1 segment: 0 rows kept"),
        "{versions}"
    );
    ok(&["tag", s, "default@1", "first"]);
    assert!(ok(&["versions", s, "default"]).contains("tag first"));

    ok(&["alias", "set", s, "prod", "default@1:90,default@2:10"]);
    assert!(failing(&["alias", "set", s, "bad", "default@1:60,default@2:30"]).contains("sum"));
    assert!(ok(&["alias", "list", s]).contains("prod = default@1:90, default@2:10"));
    let route = ok(&["route", s, "prod", "alice"]);
    assert!(route.contains("default@1"), "{route}");

    let out = ok(&[
        "search",
        s,
        "roll back",
        "--index",
        "prod",
        "--route-key",
        "alice",
        "--log",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (json["index"].as_str(), json["version"].as_u64()),
        (Some("default"), Some(1))
    );
    let request = json["request_id"].as_u64().expect("logged");
    let human = ok(&["search", s, "lunch", "--index", "default@first"]);
    assert!(human.starts_with("default@1:"), "{human}");
    ok(&[
        "log",
        "feedback",
        s,
        &request.to_string(),
        "down",
        "--note",
        "stale",
    ]);
    let export = dir.path().join("log.jsonl");
    ok(&["log", "export", s, "--out", export.to_str().expect("utf-8")]);
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&export)
            .expect("export")
            .lines()
            .next()
            .expect("one line"),
    )
    .expect("json line");
    assert_eq!(line["target"], "prod");
    assert_eq!(line["feedback"]["rating"], "thumb_down");

    assert!(ok(&["rollback", s, "prod", "2"]).contains("default@2"));
    assert!(ok(&["rollback", s, "default", "1"]).contains("serves version 1"));
    assert!(ok(&["search", s, "lunch"]).starts_with("default@1:"));
    ok(&["rollback", s, "default", "--unpin"]);
    assert!(ok(&["search", s, "lunch"]).starts_with("default@3:"));

    assert!(ok(&["compact", s]).contains("default: nothing to merge"));
    let more = dir.path().join("more.txt");
    write(&more, "Parking is in the basement.");
    ok(&["ingest", s, more.to_str().expect("utf-8")]);
    assert!(ok(&["compact", s, "--index", "default"]).contains("merged 2 segments into version 5"));
    let gc = ok(&["gc", s, "--keep", "1"]);
    assert!(gc.contains("default: kept versions [1, 2, 5]"), "{gc}");
    assert!(failing(&["index", "drop", s, "default"]).contains("cannot be dropped"));
    ok(&["index", "drop", s, "small"]);
    assert!(ok(&["check", s]).contains("consistent"));

    // A child record deleted behind folio's back: the check names it and exits non-zero.
    {
        let db = redb::Database::open(&store).expect("redb");
        let txn = db.begin_write().expect("write");
        let children: TableDefinition<(u32, u32), Checksummed> = TableDefinition::new("children");
        let removed = txn
            .open_table(children)
            .expect("children")
            .pop_last()
            .expect("pop")
            .is_some();
        assert!(removed);
        txn.commit().expect("commit");
    }
    let out = folio(&["check", s]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("problem:"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("inconsistent"));
}

/// The scenario, through the command line: `acl secret b` after `alias set prod
/// default@1` must stop `--as a --index prod` from returning secret's text.
#[test]
fn cli_acl_change_reaches_an_alias_of_an_older_version() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("s.folio");
    let docs = dir.path().join("d.jsonl");
    std::fs::write(
        &docs,
        "{\"doc_id\": \"secret\", \"text\": \"The falcon budget is twelve million.\", \"acl\": [\"a\"]}\n\
         {\"doc_id\": \"memo\", \"text\": \"A public memo about the falcon budget meeting.\"}\n",
    )
    .expect("write docs");
    let s = store.to_str().expect("utf-8");
    let search = |who: &str| {
        ok(&[
            "search",
            s,
            "falcon budget",
            "--as",
            who,
            "--index",
            "prod",
            "--json",
        ])
    };
    ok(&["ingest", s, docs.to_str().expect("utf-8")]);
    ok(&["alias", "set", s, "prod", "default@1"]);
    assert!(
        search("a").contains("twelve million"),
        "a sees secret at first"
    );
    ok(&["acl", s, "secret", "b"]);
    let after = search("a");
    assert!(
        !after.contains("twelve million"),
        "revoked, still served: {after}"
    );
    assert!(after.contains("memo"), "{after}");
    // The grant is not retroactive: version 1 never showed secret to b.
    assert!(!search("b").contains("twelve million"));
    ok(&["delete", s, "memo"]);
    assert!(
        !search("a").contains("public memo"),
        "deleted, still served"
    );
    ok(&["check", s]);
}

/// `index list` says which indexes are compressed and with which re-score width.
#[test]
fn index_list_shows_compressed_indexes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let doc = dir.path().join("deploy.md");
    write(
        &doc,
        "# Deploys\n\n## Rolling back\n\nRun `release rollback` to roll back a bad deploy.\n",
    );
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    ok(&["ingest", s, doc.to_str().expect("utf-8")]);
    let create = [
        "index",
        "create",
        s,
        "packed",
        "--compressed",
        "--rescore",
        "24",
    ];
    ok(&[&create[..], &["--min-graph-size", "1"]].concat());
    let list = ok(&["index", "list", s]);
    let line = |name: &str| {
        list.lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {list}"))
            .to_string()
    };
    assert!(
        line("packed").ends_with("; vectors compressed (rescore 24); lexical auto"),
        "{list}"
    );
    assert!(
        line("default").ends_with("; vectors resident; lexical auto"),
        "{list}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["index", "list", s, "--json"])).expect("json");
    let vectors = |name: &str| {
        json.as_array()
            .expect("array")
            .iter()
            .find(|i| i["name"] == name)
            .map(|i| i["vectors"].clone())
    };
    assert_eq!(
        vectors("packed"),
        Some(serde_json::json!({ "Compressed": { "rescore": 24 } }))
    );
    assert_eq!(vectors("default"), Some(serde_json::json!("Resident")));
}

/// `index create --lexical-language` names the language an index's lexical leg cuts its
/// texts and queries in: German stems `Häuser` and `Haus` alike, the default `auto`
/// (English outside Han) does not; `index list` shows the language, and an unknown one is
/// refused with the choices.
#[test]
fn index_create_takes_a_lexical_language() {
    let dir = tempfile::tempdir().expect("temp dir");
    let doc = dir.path().join("haus.md");
    write(&doc, "# Wohnen\n\nDie Häuser am See sind alt.\n");
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    ok(&["ingest", s, doc.to_str().expect("utf-8")]);
    ok(&[
        "index",
        "create",
        s,
        "wohnen",
        "--lexical-language",
        "german",
    ]);
    let list = ok(&["index", "list", s]);
    assert!(list.contains("; lexical german"), "{list}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["index", "list", s, "--json"])).expect("json");
    let languages: Vec<(String, String)> = json
        .as_array()
        .expect("array")
        .iter()
        .map(|i| {
            let name = i["name"].as_str().expect("name").to_string();
            let language = i["lexical_language"]
                .as_str()
                .expect("language")
                .to_string();
            (name, language)
        })
        .collect();
    assert_eq!(
        languages,
        [
            ("default".to_string(), "auto".to_string()),
            ("wohnen".to_string(), "german".to_string())
        ]
    );
    let found = |index: &str| {
        let out = ok(&[
            "search", s, "Haus", "--index", index, "--mode", "lexical", "--json",
        ]);
        let json: serde_json::Value = serde_json::from_str(&out).expect("json");
        json["results"].as_array().expect("results").len()
    };
    assert_eq!(found("wohnen"), 1);
    assert_eq!(found("default"), 0);
    let refused = failing(&[
        "index",
        "create",
        s,
        "other",
        "--lexical-language",
        "klingon",
    ]);
    assert!(
        refused.contains("german") && refused.contains("auto"),
        "{refused}"
    );
}

/// `search --rescore N` sets a compressed index's re-score width for one search, within
/// the limits; `index create --rescore` is bounded the same way.
#[test]
fn search_takes_a_rescore_width() {
    let dir = tempfile::tempdir().expect("temp dir");
    let doc = dir.path().join("deploy.md");
    write(
        &doc,
        "# Deploys\n\n## Rolling back\n\nRun `release rollback` to roll back a bad deploy.\n\n\
         ## Lunch\n\nLunch is served at noon.\n",
    );
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    ok(&["ingest", s, doc.to_str().expect("utf-8")]);
    let create = [
        "index",
        "create",
        s,
        "packed",
        "--compressed",
        "--min-graph-size",
        "1",
    ];
    ok(&create);
    let search = |rescore: &str| {
        let args = [
            "search",
            s,
            "roll back",
            "--index",
            "packed",
            "--json",
            "--rescore",
            rescore,
        ];
        let json: serde_json::Value = serde_json::from_str(&ok(&args)).expect("json");
        json["results"][0]["doc_id"].clone()
    };
    assert_eq!(search("1"), search("500"));
    assert!(search("1")
        .as_str()
        .is_some_and(|d| d.ends_with("deploy.md")));
    // Resident indexes ignore it.
    ok(&["search", s, "roll back", "--rescore", "3"]);
    let refused = failing(&[
        "search",
        s,
        "roll back",
        "--index",
        "packed",
        "--rescore",
        "0",
    ]);
    assert!(refused.contains("rescore 0 is out of range"), "{refused}");
    let big = failing(
        &[
            &create[..2],
            &[s, "wide", "--compressed", "--rescore", "70000"],
        ]
        .concat(),
    );
    assert!(big.contains("rescore 70000 is out of range"), "{big}");
}

/// A byte of a document's stored text flipped behind folio's back: `check` names the table
/// and key, exits non-zero and leaves the file as it was; a search that needs the text says
/// the store is damaged rather than answering.
#[test]
fn check_names_a_damaged_value_and_never_writes_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    let doc = dir.path().join("lunch.txt");
    write(&doc, "Lunch is served at noon in the atrium.");
    ok(&["ingest", s, doc.to_str().expect("utf-8")]);
    assert!(ok(&["check", s]).contains("consistent"));

    let bytes = flip_a_byte_of(&store, b"served at noon");

    let out = folio(&["check", s]);
    assert!(!out.status.success(), "check passed a damaged store");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("table `rev_text`") && stdout.contains("fails its checksum"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("inconsistent"));
    let report: serde_json::Value =
        serde_json::from_str(&ok_or_failing_json(&["check", s, "--json"])).expect("json");
    assert_eq!(report["damaged"][0]["table"], "rev_text");
    // redb's page checksums, checked on a copy, see it too.
    assert_eq!(report["redb"], "failed");
    assert_eq!(
        std::fs::read(&store).expect("read"),
        bytes,
        "check wrote the file"
    );

    let err = failing(&["search", s, "lunch"]);
    assert!(err.contains("damaged"), "{err}");
    // A backup would carry the damage: it is refused, and leaves no copy.
    let copy = dir.path().join("copy.folio");
    let err = failing(&["backup", s, copy.to_str().expect("utf-8")]);
    assert!(err.contains("damaged"), "{err}");
    assert!(!copy.exists());
}

/// A zeroed page that makes redb itself panic inside a search: the command fails with the
/// library's typed damage error and one line naming redb's place, never the panic's
/// message or a backtrace (the library catches redb's panics; the command's hook keeps them
/// quiet).
#[test]
fn a_panic_inside_redb_reads_as_damage_not_as_a_crash() {
    let dir = tempfile::tempdir().expect("temp dir");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo");
    let store = dir.path().join("s.folio");
    let s = store.to_str().expect("utf-8");
    let d = demo.to_str().expect("utf-8");
    ok(&["ingest", s, d, "--root", d]);
    let pristine = std::fs::read(&store).expect("read");
    // The first page (past redb's header) whose zeroing makes redb panic in a search.
    let found = (1..pristine.len() / 4096).find_map(|page| {
        let mut damaged = pristine.clone();
        damaged[page * 4096..(page + 1) * 4096].fill(0);
        std::fs::write(&store, &damaged).expect("write");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio"))
            .args(["search", s, "refund"])
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("run folio");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.contains("redb panicked")
            .then_some((out.status.code(), err))
    });
    let (code, err) = found.expect("no zeroed page made redb panic: the test damages nothing");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the store is damaged"), "{err}");
    assert!(
        err.contains("note: redb stopped on a damaged page ("),
        "{err}"
    );
    assert!(
        !err.contains("panicked at") && !err.contains("stack backtrace"),
        "{err}"
    );
}

/// The JSON a command prints, whether it exits 0 or not.
fn ok_or_failing_json(args: &[&str]) -> String {
    String::from_utf8_lossy(&folio(args).stdout).into_owned()
}

/// `folio recover` on a store whose one document's text was damaged: the new store holds
/// the others as they were, the report names the lost one, the damaged file is untouched,
/// and the new store passes `check`.
#[test]
fn recover_copies_what_is_reachable_and_names_what_is_lost() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ingested(
        dir.path(),
        &["{\"doc_id\": \"lunch\", \"text\": \"Lunch is served at noon in the atrium.\", \"acl\": [\"staff\"]}\n\
         {\"doc_id\": \"parking\", \"text\": \"Parking is in the basement.\", \"metadata\": {\"floor\": -1}}\n"],
    );
    let s = store.to_str().expect("utf-8");
    let bytes = flip_a_byte_of(&store, b"served at noon");

    let new = dir.path().join("new.folio");
    let n = new.to_str().expect("utf-8");
    let out = ok(&["recover", s, n]);
    assert!(out.contains("1 documents"), "{out}");
    assert!(out.contains("lost: document `lunch`"), "{out}");
    assert!(out.contains("lost: history"), "{out}");
    assert_eq!(
        std::fs::read(&store).expect("read"),
        bytes,
        "recover wrote the damaged file"
    );
    assert!(ok(&["check", n]).contains("consistent"));
    let dump = ok(&["dump", n]);
    assert!(
        dump.contains("\"parking\"") && dump.contains("\"floor\""),
        "{dump}"
    );
    assert!(!dump.contains("\"lunch\""), "{dump}");
    // Never over an existing file.
    assert!(failing(&["recover", s, n]).contains("exists"));
    let report = recovered_json(s, &dir.path().join("again.folio"));
    assert_eq!(report["documents"], 1);
    assert_eq!(report["indexes"], serde_json::json!(["default"]));
}

/// `folio recover` on an undamaged store copies it whole: the report names the versions,
/// the tag and the alias carried, and the new store answers `index@tag` and the alias.
#[test]
fn recover_copies_a_store_whole_when_every_row_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ingested(
        dir.path(),
        &[
            "{\"doc_id\": \"lunch\", \"text\": \"Lunch is served at noon in the atrium.\"}\n",
            "{\"doc_id\": \"lunch\", \"text\": \"Lunch moved to one o'clock.\"}\n",
        ],
    );
    let s = store.to_str().expect("utf-8");
    ok(&["tag", s, "default@1", "first"]);
    ok(&["alias", "set", s, "prod", "default@1"]);

    let new = dir.path().join("new.folio");
    let n = new.to_str().expect("utf-8");
    let out = ok(&["recover", s, n]);
    assert!(out.contains("copied whole, history included"), "{out}");
    assert!(out.contains("tags: default@first"), "{out}");
    assert!(out.contains("aliases: prod"), "{out}");
    assert!(!out.contains("lost:"), "{out}");
    assert!(ok(&["check", n]).contains("consistent"));
    for target in ["default@first", "prod"] {
        let old = ok(&["search", n, "lunch", "--index", target]);
        assert!(old.contains("noon"), "{target}: {old}");
    }
    assert!(ok(&["search", n, "lunch"]).contains("one o'clock"));
    let report = recovered_json(s, &dir.path().join("again.folio"));
    assert_eq!(report["whole"], true);
    assert_eq!(report["tags"], serde_json::json!(["default@first"]));
    assert_eq!(report["aliases"], serde_json::json!(["prod"]));
    assert_eq!(report["versions"]["default"], ok_json_versions(s));
}

/// A store in `dir` made by ingesting each of `batches` (JSON Lines) in turn, one version
/// each; its path.
fn ingested(dir: &Path, batches: &[&str]) -> PathBuf {
    let store = dir.join("s.folio");
    let docs = dir.join("d.jsonl");
    for batch in batches {
        write(&docs, batch);
        let (s, d) = (store.to_str(), docs.to_str());
        ok(&["ingest", s.expect("utf-8"), d.expect("utf-8")]);
    }
    store
}

/// The report `folio recover STORE DEST --json` prints.
fn recovered_json(store: &str, dest: &Path) -> serde_json::Value {
    let dest = dest.to_str().expect("utf-8");
    serde_json::from_str(&ok(&["recover", store, dest, "--json"])).expect("json")
}

/// The version numbers `folio versions --json` lists for the default index.
fn ok_json_versions(store: &str) -> serde_json::Value {
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&["versions", store, "default", "--json"])).expect("json");
    let numbers: Vec<serde_json::Value> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v["version"].clone())
        .collect();
    serde_json::Value::Array(numbers)
}

/// Flips a byte of the first place `text` is stored in the file at `store` (a document's
/// text is stored as written); returns the damaged bytes, as written back.
fn flip_a_byte_of(store: &Path, text: &[u8]) -> Vec<u8> {
    let mut bytes = std::fs::read(store).expect("read");
    let at = bytes
        .windows(text.len())
        .position(|w| w == text)
        .expect("the text is stored as written");
    bytes[at] ^= 0x20;
    std::fs::write(store, &bytes).expect("write");
    bytes
}
