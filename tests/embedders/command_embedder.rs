//! The command embedder against small programs written by the test: the pipe protocol,
//! query and passage roles, reported errors, a wrong dimension, a hang and a crash.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::embed::{CommandEmbedder, CommandOptions, EmbedError, Embedder};
use folio::query::SearchRequest;
use folio::store::{Store, WriteError};

/// A Python program that serves 3-dimensional vectors `[chars, 1, role]` (role 2 for
/// queries, 0 for passages); `behaviour` changes what it does with a text named `"fail"`.
fn program(dir: &Path, behaviour: &str) -> String {
    let script = format!(
        r#"
import json, os, struct, sys, time
open(sys.argv[0] + ".pid", "w").write(str(os.getpid()))
out = sys.stdout.buffer
for line in sys.stdin:
    req = json.loads(line)
    texts = req["texts"]
    dim = 3
    if "fail" in texts:
        behaviour = "{behaviour}"
        if behaviour == "report":
            msg = b"cannot embed 'fail'"
            out.write(struct.pack("<II", 0xFFFFFFFF, len(msg)) + msg); out.flush(); continue
        if behaviour == "hang":
            time.sleep(30)
        if behaviour == "crash":
            sys.exit(3)
        if behaviour == "wide":
            dim = 4
    out.write(struct.pack("<II", len(texts), dim))
    for t in texts:
        row = [float(len(t)), 1.0, 2.0 if req["role"] == "query" else 0.0, 5.0][:dim]
        out.write(struct.pack("<%df" % dim, *row))
    out.flush()
"#
    );
    let path = dir.join(format!("serve_{behaviour}.py"));
    std::fs::write(&path, script).expect("write the program");
    format!("python3 {}", path.display())
}

fn start(dir: &Path, behaviour: &str) -> CommandEmbedder {
    let options = CommandOptions {
        timeout: Duration::from_millis(2000),
        batch_size: 2,
    };
    CommandEmbedder::start(&program(dir, behaviour), options).expect("start")
}

#[test]
fn speaks_the_protocol_in_batches_with_roles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = start(dir.path(), "report");
    assert_eq!(embedder.dimension(), 3);
    assert!(embedder.name().starts_with("cmd:python3 "));
    // Five texts in batches of two: rows stay in order.
    let v = embedder
        .embed(&["a", "bb", "ccc", "", "eeeee"])
        .expect("embed");
    assert_eq!(
        v,
        [1., 1., 0., 2., 1., 0., 3., 1., 0., 0., 1., 0., 5., 1., 0.]
    );
    assert_eq!(
        embedder.embed_queries(&["abcd"]).expect("query"),
        [4., 1., 2.]
    );
}

#[test]
fn a_reported_error_is_clear_and_the_program_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = start(dir.path(), "report");
    let error = embedder.embed(&["fail"]).expect_err("reported");
    assert!(matches!(error, EmbedError::Protocol { .. }), "{error}");
    assert!(error.to_string().contains("cannot embed 'fail'"), "{error}");
    assert_eq!(
        embedder.embed(&["ok"]).expect("still serving"),
        [2., 1., 0.]
    );
}

#[test]
fn a_wrong_dimension_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = start(dir.path(), "wide");
    let store = Store::builder()
        .create(true)
        .embedder(Arc::new(embedder))
        .open(dir.path().join("kb.folio"))
        .expect("open");
    let error = store
        .upsert(Document::new("d", SourceFormat::Text, "fail"))
        .expect_err("4 values where 3 were declared");
    assert!(
        matches!(
            error,
            WriteError::Embed(EmbedError::Dimension {
                expected: 3,
                got: 4
            })
        ),
        "{error}"
    );
    assert_eq!(store.stats().expect("stats").documents, 0);
    // The program was restarted: the next document goes in.
    store
        .upsert(Document::new("e", SourceFormat::Text, "fine text"))
        .expect("next");
    let response = store.search(&SearchRequest::text("fine")).expect("search");
    assert_eq!(response.results[0].doc_id, "e");
}

#[test]
fn a_hang_times_out_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = start(dir.path(), "hang");
    let store = Store::builder()
        .create(true)
        .embedder(Arc::new(embedder))
        .open(dir.path().join("kb.folio"))
        .expect("open");
    let started = Instant::now();
    let error = store
        .upsert(Document::new("d", SourceFormat::Text, "fail"))
        .expect_err("the program never answers");
    assert!(
        matches!(error, WriteError::Embed(EmbedError::Timeout { .. })),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(store.stats().expect("stats").documents, 0);
    #[cfg(target_os = "linux")]
    assert_ended(&dir.path().join("serve_hang.py.pid"));
}

#[cfg(target_os = "linux")]
/// The program whose id is in `pid_file` has ended (at most a zombie) within 2 s: a
/// program that timed out is not left running.
fn assert_ended(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).expect("the program wrote its id");
    let stat = format!("/proc/{}/stat", pid.trim());
    let started = Instant::now();
    loop {
        let state = std::fs::read_to_string(&stat).ok().and_then(|line| {
            let after_name = line.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(after_name)
        });
        match state {
            None | Some('Z') | Some('X') => return,
            Some(state) if started.elapsed() > Duration::from_secs(2) => {
                panic!("the program {} still runs (state {state})", pid.trim())
            }
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn a_crash_is_reported_and_the_program_restarted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = start(dir.path(), "crash");
    let error = embedder.embed(&["fail"]).expect_err("the program exits");
    assert!(matches!(error, EmbedError::Command { .. }), "{error}");
    assert_eq!(embedder.embed(&["back"]).expect("restarted"), [4., 1., 0.]);
}

#[test]
fn a_program_that_cannot_start_is_an_error() {
    let error = CommandEmbedder::start("exit 0", CommandOptions::default())
        .err()
        .expect("no answer to the dimension request");
    assert!(matches!(error, EmbedError::Command { .. }), "{error}");
}
