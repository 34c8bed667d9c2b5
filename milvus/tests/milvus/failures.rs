//! Failures a user acts on, each a typed error that names the collection (where there is
//! one) and what to run: nothing published, an unfinished publish, another store's
//! collection, a port nobody listens on, a server that accepts and never answers.

use crate::common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use folio::store::NoProgress;
use folio::{Document, SearchRequest, SourceFormat, Store};
use folio_milvus::{Error, Remote};
use milvus::v2::prelude::*;

fn store(dir: &std::path::Path, doc_prefix: &str) -> Store {
    let store = Store::builder()
        .create(true)
        .open(dir.join(format!("{doc_prefix}.folio")))
        .unwrap();
    let mut batch = store.batch();
    for i in 0..12 {
        batch.upsert(Document::new(
            format!("{doc_prefix}-{i}"),
            SourceFormat::Markdown,
            format!("# Note {i}\n\nThe travel {i} refund and the invoice of card {i}.\n"),
        ));
    }
    batch.commit().unwrap();
    store
}

fn set_property(uri: &str, collection: &str, key: &str, value: &str) {
    common::with_client(uri, |client| async move {
        client
            .alter_collection_properties(
                AlterCollectionPropertiesRequest::builder()
                    .collection_name(collection)
                    .property(key, value)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
    });
}

fn cli(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn missing_incomplete_and_foreign_collections_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let ours = store(dir.path(), "ours");
    let server = common::LiteServer::start();
    let uri = server.uri();
    let remote = Remote::connect(&uri).unwrap();
    let request = SearchRequest::text("travel refund");
    let run = format!("run `folio publish STORE default@1 --milvus {uri}`");

    let missing = remote.search(&ours, &request, "folio").unwrap_err();
    assert!(
        matches!(&missing, Error::NotPublished { collection, version: 1, nearest: None, .. } if collection == "folio_default_v1"),
        "{missing:?}"
    );
    assert!(missing.to_string().contains(&run), "{missing}");
    let path = dir.path().join("ours.folio");
    let path = path.to_str().unwrap();
    let printed = cli(&["search", path, "travel", "--milvus", &uri]);
    assert!(printed.contains(&run), "{printed}");

    let published = remote
        .publish(
            &ours,
            "default",
            &folio_milvus::PublishOptions::default(),
            &NoProgress,
        )
        .unwrap();
    set_property(&uri, &published.collection, "folio.complete", "false");
    let unfinished = remote.search(&ours, &request, "folio").unwrap_err();
    assert!(
        matches!(&unfinished, Error::Incomplete { collection, published: 1, .. } if collection == "folio_default_v1"),
        "{unfinished:?}"
    );
    assert!(unfinished.to_string().contains(&run), "{unfinished}");
    set_property(&uri, &published.collection, "folio.complete", "true");
    assert!(!remote
        .search(&ours, &request, "folio")
        .unwrap()
        .0
        .results
        .is_empty());

    // Answers printed into a pipe nobody reads any more (`folio milvus search ... | head`):
    // the command stops, it does not panic.
    let mut piped = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .args(["search", path, "travel", "--milvus", &uri, "--k", "12"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(piped.stdout.take());
    let out = piped.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && out.status.code() != Some(101),
        "{:?}: {stderr}",
        out.status
    );

    // Another store with the same index and version: Milvus answers with its rows, folio's
    // chunk-id check refuses them, and the error says so.
    let theirs = store(dir.path(), "theirs");
    let foreign = remote.search(&theirs, &request, "folio").unwrap_err();
    assert!(
        matches!(&foreign, Error::ForeignCollection { collection, version: 1, .. } if collection == "folio_default_v1"),
        "{foreign:?}"
    );
    assert!(
        foreign
            .to_string()
            .contains("does not hold this store's default@1"),
        "{foreign}"
    );
    let theirs_path = dir.path().join("theirs.folio");
    let printed = cli(&[
        "search",
        theirs_path.to_str().unwrap(),
        "travel",
        "--milvus",
        &uri,
    ]);
    assert!(printed.contains("`folio_default_v1`"), "{printed}");
    assert!(printed.contains("does not hold this store's"), "{printed}");
}

#[test]
fn a_server_down_or_silent_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path(), "kb");
    // A port nobody listens on: refused at once.
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let uri = format!("http://127.0.0.1:{closed}");
    let started = Instant::now();
    let down = Remote::connect(&uri).err().expect("nothing listens");
    assert!(
        matches!(&down, Error::Unreachable { uri: u, .. } if *u == uri),
        "{down:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(down.to_string().contains("no Milvus server at"), "{down}");
    let path = dir.path().join("kb.folio");
    let printed = cli(&["search", path.to_str().unwrap(), "travel", "--milvus", &uri]);
    assert!(
        printed.contains(&format!("no Milvus server at {uri}")),
        "{printed}"
    );

    // A listener that accepts connections and never answers: a timeout at the limit.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let started = Instant::now();
    let silence = Remote::connect_within(&uri, Duration::from_secs(1))
        .err()
        .expect("nothing answers");
    assert!(
        matches!(&silence, Error::Timeout { limit, collection: None, .. } if *limit == Duration::from_secs(1)),
        "{silence:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        silence.to_string().contains("did not answer within 1s"),
        "{silence}"
    );
}
