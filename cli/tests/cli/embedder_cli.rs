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
