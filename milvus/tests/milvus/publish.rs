//! Publishing a version to milvus-lite: every live child one row, acknowledged and counted
//! before the collection is marked complete; a rerun writes nothing; a server killed in the
//! middle of a publish, restarted, and the publish rerun, ends complete without duplicates.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use folio::store::{NoProgress, Progress};
use folio::{Document, SourceFormat, Store};
use folio_milvus::{PublishOptions, Remote, VectorIndex};

const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];

/// A store of `docs` Markdown documents, some public, the others shared with one or two of
/// three principals; one document deleted, so the version has a hole.
fn store(dir: &std::path::Path, docs: usize) -> Store {
    let store = Store::builder()
        .create(true)
        .open(dir.join("kb.folio"))
        .unwrap();
    let mut batch = store.batch();
    for i in 0..docs {
        let text = format!(
            "# Doc {i}\n\n## Setup\n\nInstall part {i} with care.\n\n## Usage\n\nRun tool {} then {}.\n",
            i * 7,
            i % 5
        );
        let acl: Vec<&str> = match i % 4 {
            0 => vec![],
            1 => vec![PRINCIPALS[0]],
            2 => vec![PRINCIPALS[1], PRINCIPALS[2]],
            _ => vec![PRINCIPALS[2]],
        };
        batch.upsert(Document::new(format!("doc-{i}"), SourceFormat::Markdown, text).with_acl(acl));
    }
    batch.commit().unwrap();
    let mut batch = store.batch();
    batch.delete("doc-1");
    batch.commit().unwrap();
    store
}

fn options() -> PublishOptions {
    PublishOptions {
        batch: 16,
        checkpoint: 32,
        index: VectorIndex::Flat,
        ..PublishOptions::default()
    }
}

#[test]
fn a_version_is_published_whole_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 40);
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    let report = remote
        .publish(&store, "default", &options(), &NoProgress)
        .unwrap();
    let live = store.export("default").unwrap().children().len();
    assert!(live > 2 * 32, "{live} children: more than two checkpoints");
    assert_eq!(
        report.collection,
        format!("folio_default_v{}", report.version)
    );
    assert_eq!(
        (report.rows, report.written, report.removed),
        (live, live, 0)
    );
    assert_eq!(remote.rows(&report.collection).unwrap(), live);
    assert!(remote.is_complete(&report.collection).unwrap());

    let again = remote
        .publish(&store, "default", &options(), &NoProgress)
        .unwrap();
    assert_eq!((again.rows, again.written), (live, 0));
    assert_eq!(remote.rows(&report.collection).unwrap(), live);

    // The command: another prefix, another collection.
    drop(store);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-publish"))
        .arg(dir.path().join("kb.folio"))
        .args([
            "default",
            "--milvus",
            &server.uri(),
            "--collection",
            "cli",
            "--flat",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let collection = format!("cli_default_v{}", report.version);
    assert!(
        stdout.contains(&format!("`{collection}`: {live} rows")),
        "{stdout}"
    );
    assert_eq!(remote.rows(&collection).unwrap(), live);
    assert!(remote.is_complete(&collection).unwrap());
}

/// Kills the server once `after` rows are acknowledged.
struct KillAt<'a> {
    done: AtomicU64,
    after: u64,
    server: &'a std::sync::Mutex<common::LiteServer>,
}

impl Progress for KillAt<'_> {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, n: u64) {
        if self.done.fetch_add(n, Ordering::SeqCst) + n >= self.after {
            self.server.lock().unwrap().kill();
        }
    }
    fn set_done(&self, done: u64) {
        self.done.store(done, Ordering::SeqCst);
    }
}

#[test]
fn a_publish_cut_by_a_killed_server_is_finished_by_a_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 80);
    let live = store.export("default").unwrap().children().len();
    let server = std::sync::Mutex::new(common::LiteServer::start());
    let uri = server.lock().unwrap().uri();
    let remote = Remote::connect(&uri).unwrap();
    remote.retry_for(Duration::from_secs(1));
    let kill = KillAt {
        done: AtomicU64::new(0),
        after: live / 2,
        server: &server,
    };
    assert!(remote
        .publish(&store, "default", &options(), &kill)
        .is_err());

    server.lock().unwrap().restart();
    let remote = Remote::connect(&uri).unwrap();
    let report = remote
        .publish(&store, "default", &options(), &NoProgress)
        .unwrap();
    assert_eq!((report.rows, report.removed), (live, 0));
    // The rerun resumed after the last checkpoint, not from the start.
    assert!(
        report.written < live,
        "{} of {live} written again",
        report.written
    );
    assert_eq!(remote.rows(&report.collection).unwrap(), live);
    assert!(remote.is_complete(&report.collection).unwrap());
}
