//! The command reranker against a small program written by the test: the pipe protocol in
//! batches, a reported error, a wrong answer's shape, and a search reranked through it.

use std::path::Path;
use std::time::Duration;

use folio::embed::{CommandOptions, CommandReranker, EmbedError, Reranker, RerankerSpec};

/// A Python program scoring each text by its length plus the query's; a text `"fail"` gets
/// an error frame, `"wide"` a frame of two columns.
fn program(dir: &Path) -> String {
    let script = r#"
import json, struct, sys
out = sys.stdout.buffer
for line in sys.stdin:
    req = json.loads(line)
    assert req["role"] == "rerank"
    texts = req["texts"]
    if "fail" in texts:
        msg = b"cannot score 'fail'"
        out.write(struct.pack("<II", 0xFFFFFFFF, len(msg)) + msg); out.flush(); continue
    columns = 2 if "wide" in texts else 1
    out.write(struct.pack("<II", len(texts), columns))
    for t in texts:
        out.write(struct.pack("<%df" % columns, *([float(len(t) + len(req["query"]))] * columns)))
    out.flush()
"#;
    let path = dir.join("rerank.py");
    std::fs::write(&path, script).unwrap();
    format!("python3 {}", path.display())
}

#[test]
fn scores_in_batches_and_reports_what_goes_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let options = CommandOptions {
        timeout: Duration::from_secs(10),
        batch_size: 2,
    };
    let command = program(dir.path());
    let reranker = CommandReranker::start(&command, options).unwrap();
    assert_eq!(reranker.name(), format!("cmd:{command}"));
    let scores = reranker
        .score("qq", &["a", "bbb", "cc", "dddd", "e"])
        .unwrap();
    assert_eq!(scores, [3.0, 5.0, 4.0, 6.0, 3.0]);
    let error = reranker.score("q", &["fail"]).unwrap_err();
    assert!(error.to_string().contains("cannot score 'fail'"), "{error}");
    let error = reranker.score("q", &["wide"]).unwrap_err();
    assert!(matches!(error, EmbedError::Command { .. }), "{error}");
    // The program goes on after an error it reported.
    assert_eq!(reranker.score("q", &["ab"]).unwrap(), [3.0]);

    let spec: RerankerSpec = format!("cmd:\"{command}\"").parse().unwrap();
    let built = spec.build().unwrap();
    let request = folio::SearchRequest::text("q").rerank(folio::query::Rerank::new(built));
    let store_dir = tempfile::tempdir().unwrap();
    let store = folio::store::Store::builder()
        .create(true)
        .open(store_dir.path().join("kb.folio"))
        .unwrap();
    store
        .upsert(folio::document::Document::new(
            "d",
            folio::chunk::SourceFormat::Text,
            "some text",
        ))
        .unwrap();
    let response = store.search(&request).unwrap();
    assert_eq!(response.results[0].scores.rerank, Some(10.0));
    assert_eq!(response.reranker, Some(format!("cmd:{command}")));
}
