//! `--embedder` on the command line: the identity an index records, and the refusal, naming
//! both embedders, to query or ingest with another one.

use std::path::Path;
use std::process::Output;

use crate::folio;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A command embedder: 4 dimensions from letter counts, so "refund" texts match.
fn fake_model(dir: &Path) -> String {
    let script = r#"
import json, struct, sys
out = sys.stdout.buffer
for line in sys.stdin:
    texts = json.loads(line)["texts"]
    out.write(struct.pack("<II", len(texts), 4))
    for t in texts:
        t = t.lower()
        out.write(struct.pack("<4f", t.count("r") + 0.1, t.count("d") + 0.1, t.count("l") + 0.1, 1.0))
    out.flush()
"#;
    let path = dir.join("model.py");
    std::fs::write(&path, script).expect("write the model");
    format!("cmd:python3 {}", path.display())
}

#[test]
fn an_index_keeps_its_embedder_and_refuses_others_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("refunds.md");
    std::fs::write(&docs, "# Refunds\n\nRefunds are paid within 14 days.\n").expect("doc");
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let model = fake_model(dir.path());

    let out = folio(&[
        "ingest",
        store,
        docs.to_str().expect("path"),
        "--embedder",
        &model,
    ]);
    assert!(out.status.success(), "{}", text(&out));

    let out = folio(&["stats", store, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("cmd:python3"), "{}", text(&out));

    let out = folio(&["search", store, "refunds", "--embedder", &model]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("refunds"), "{}", text(&out));

    // Without the model: refused, naming both.
    let out = folio(&["search", store, "refunds"]);
    assert!(!out.status.success());
    let message = text(&out);
    assert!(
        message.contains("cmd:python3") && message.contains("folio-hash-v1"),
        "{message}"
    );

    let out = folio(&[
        "ingest",
        store,
        docs.to_str().expect("path"),
        "--embedder",
        "hash",
    ]);
    assert!(!out.status.success());
    let message = text(&out);
    assert!(
        message.contains("cmd:python3") && message.contains("folio-hash-v1"),
        "{message}"
    );

    let out = folio(&["search", store, "x", "--embedder", "glove:6B"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("expected hash"), "{}", text(&out));
}

/// A command model counts no tokens: without a tokenizer the ingest says its chunks were
/// not counted (issue 31: its truncation was silent); with `--tokenizer` and
/// `--max-tokens` they are counted, and one too long is refused or split as for the
/// in-process models.
#[test]
fn a_command_model_is_counted_with_a_tokenizer_and_says_so_without() {
    let dir = tempfile::tempdir().expect("temp dir");
    let docs = dir.path().join("notes.md");
    let paragraph = "Refunds are paid within fourteen days of the request. ".repeat(5);
    std::fs::write(&docs, format!("# Notes\n\n{paragraph}\n")).expect("doc");
    let model = fake_model(dir.path());
    let docs = docs.to_str().expect("path");
    let ingest = |store: &str, extra: &[&str]| {
        let path = dir.path().join(store);
        let mut args = vec![
            "ingest",
            path.to_str().expect("utf-8"),
            docs,
            "--embedder",
            &model,
        ];
        args.extend_from_slice(extra);
        folio(&args)
    };
    let plain = ingest("plain.folio", &[]);
    assert!(plain.status.success(), "{}", text(&plain));
    assert!(
        text(&plain).contains("tokens: not counted"),
        "{}",
        text(&plain)
    );

    let refused = ingest(
        "refused.folio",
        &[
            "--tokenizer",
            "chars",
            "--max-tokens",
            "60",
            "--truncation",
            "refuse",
        ],
    );
    assert!(
        !refused.status.success(),
        "a chunk longer than 60 characters was accepted"
    );
    assert!(text(&refused).contains("60"), "{}", text(&refused));

    let split = ingest(
        "split.folio",
        &["--tokenizer", "chars", "--max-tokens", "60"],
    );
    assert!(split.status.success(), "{}", text(&split));
    assert!(text(&split).contains("split into"), "{}", text(&split));
    assert!(!text(&split).contains("not counted"), "{}", text(&split));
}

/// `folio` with `env` set and the Hugging Face variables pointing at nothing of this machine,
/// run in `hf_home`'s folder (the test's, where its store and documents are).
fn folio_in(env: &[(&str, &Path)], hf_home: &Path, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_folio"));
    if let Some(folder) = hf_home.parent() {
        command.current_dir(folder);
    }
    command
        .args(args)
        .env_remove("FOLIO_MODELS")
        .env_remove("HF_HUB_CACHE")
        .env("HF_HOME", hf_home)
        .env("HF_HUB_OFFLINE", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run folio")
}

#[test]
fn a_named_model_is_one_word_and_matches_its_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = folio_testkit::models::minilm_folder();
    // The PyPI package's files are the pinned commit's: `minilm` takes them from FOLIO_MODELS.
    let models = dir.path().join("models");
    std::fs::create_dir(&models).expect("models");
    std::os::unix::fs::symlink(&folder, models.join("minilm")).expect("link");
    let docs = dir.path().join("runbook.md");
    std::fs::write(
        &docs,
        "# Deploys\n\n## Rolling back\n\nTo undo a broken release, redeploy the previous build.\n\n\
         ## Lunch\n\nThe canteen serves soup on Fridays.\n",
    )
    .expect("doc");
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let hf_home = dir.path().join("hf");
    let env = [("FOLIO_MODELS", models.as_path())];

    let out = folio_in(
        &env,
        &hf_home,
        &[
            "ingest",
            store,
            docs.to_str().expect("path"),
            "--embedder",
            "minilm",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = folio_in(&env, &hf_home, &["stats", store, "--json"]);
    assert!(
        text(&out).contains("bert:all-MiniLM-L6-v2"),
        "{}",
        text(&out)
    );

    let query = "how do I revert a bad deploy";
    let out = folio_in(
        &env,
        &hf_home,
        &["search", store, query, "--embedder", "minilm"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("1."))
        .map(str::to_string);
    assert!(
        first.as_deref().is_some_and(|l| l.contains("Rolling back")),
        "{}",
        text(&out)
    );
    // The same model by its folder is the same embedder: same name, same fingerprint.
    let by_folder = format!("bert:{}", folder.display());
    let out = folio_in(
        &env,
        &hf_home,
        &["search", store, query, "--embedder", &by_folder],
    );
    assert!(out.status.success(), "{}", text(&out));

    // Nowhere to be found and offline: the error says where the files go.
    let out = folio_in(
        &[],
        &hf_home,
        &["search", store, query, "--embedder", "minilm"],
    );
    assert!(!out.status.success());
    for needed in [
        "HF_HUB_OFFLINE",
        "$FOLIO_MODELS/minilm",
        "huggingface-cli download",
    ] {
        assert!(text(&out).contains(needed), "{needed}: {}", text(&out));
    }
}

/// While `folio ingest` embeds a batch with a real model, other processes tag, roll back
/// and move an alias on the same store: each holds the file's writer lock only for its own
/// commit, so all succeed before the ingest ends, and the ingest's commit then lands on
/// theirs.
#[test]
fn tag_rollback_and_alias_go_through_while_another_process_embeds() {
    // Enough that the embedding outlasts a round of the three commands in either build.
    const DOCUMENTS: usize = if cfg!(debug_assertions) { 40 } else { 400 };
    let dir = tempfile::tempdir().expect("temp dir");
    let models = dir.path().join("models");
    std::fs::create_dir(&models).expect("models");
    let folder = folio_testkit::models::minilm_folder();
    std::os::unix::fs::symlink(&folder, models.join("minilm")).expect("link");
    let env = [("FOLIO_MODELS", models.as_path())];
    let hf_home = dir.path().join("hf");
    let store = dir.path().join("s.folio");
    let store = store.to_str().expect("utf-8 path");
    let first = dir.path().join("first.md");
    std::fs::write(
        &first,
        "# Deploys\n\nRedeploy the previous build to undo one.\n",
    )
    .expect("doc");
    let out = folio_in(
        &env,
        &hf_home,
        &[
            "ingest",
            store,
            first.to_str().expect("path"),
            "--embedder",
            "minilm",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("docs");
    for i in 0..DOCUMENTS {
        std::fs::write(
            docs.join(format!("note{i}.md")),
            format!(
                "# Note {i}\n\nThe travel desk books trains for trip {i}. Hotels are limited \
                 to a nightly rate set by the region, and receipts go to finance within a \
                 week of the return. Ask the desk for exceptions to trip {i}.\n"
            ),
        )
        .expect("doc");
    }

    let mut ingest = std::process::Command::new(env!("CARGO_BIN_EXE_folio"));
    ingest
        .current_dir(dir.path())
        .args([
            "ingest",
            store,
            docs.to_str().expect("path"),
            "--embedder",
            "minilm",
        ])
        .env_remove("HF_HUB_CACHE")
        .env("HF_HOME", &hf_home)
        .env("HF_HUB_OFFLINE", "1")
        .env("FOLIO_MODELS", &models)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut ingest = ingest.spawn().expect("spawn ingest");
    // Past opening the store (where a writing open took the file until it closed).
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (mut round, mut rounds_while_embedding) = (0, 0);
    while ingest.try_wait().expect("ingest status").is_none() {
        round += 1;
        let tag = format!("before{round}");
        for args in [
            vec!["tag", store, "default@1", &tag],
            vec!["rollback", store, "default", "1"],
            vec!["alias", "set", store, "prod", "default@1:100"],
        ] {
            let out = folio_in(&[], &hf_home, &args);
            assert!(
                out.status.success(),
                "`folio {}` while another process embeds: {}",
                args.join(" "),
                text(&out)
            );
        }
        if ingest.try_wait().expect("ingest status").is_none() {
            rounds_while_embedding += 1;
        }
    }
    assert!(
        rounds_while_embedding > 0,
        "the ingest ended before a round of the other commands: give it more documents"
    );
    let out = ingest.wait_with_output().expect("ingest");
    assert!(out.status.success(), "{}", text(&out));

    let versions = folio_in(&[], &hf_home, &["versions", store, "default"]);
    assert!(text(&versions).contains("before1"), "{}", text(&versions));
    let aliases = folio_in(&[], &hf_home, &["alias", "list", store]);
    assert!(text(&aliases).contains("prod"), "{}", text(&aliases));
    let stats = folio_in(&[], &hf_home, &["stats", store, "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("stats json");
    assert_eq!(
        stats["documents"],
        serde_json::json!(1 + DOCUMENTS),
        "{stats}"
    );
}
