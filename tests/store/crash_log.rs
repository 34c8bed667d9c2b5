//! The request log under SIGKILL (issue 30, item 2): a child process logs searches and
//! annotates some of them by id, printing each id as it gets it, and is killed at random
//! moments. After every kill no id is handed out again (the next search's id is past every
//! id the child printed) and every annotation the child saw succeed is on its own request.
//! Before ids were reserved, up to 63 handed-out ids were reused after a crash. Every other
//! child logs through a read-only open, which writes only the log.
//!
//! The child is this test binary itself, run with `FOLIO_LOG_CRASH_CHILD` set.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use folio::query::SearchRequest;
use folio::store::{Annotation, LoggedQuery, Store, StoreBuilder};
use folio_testkit::spawn_child;
use folio_testkit::versions::{doc, small_options};

const KILLS: usize = 12;

fn options() -> StoreBuilder {
    small_options().log_requests(true)
}

/// The logger, when this binary runs as the child. Never returns by itself.
#[test]
fn log_crash_child() {
    let Ok(path) = std::env::var("FOLIO_LOG_CRASH_CHILD") else {
        return;
    };
    log_and_annotate(&options().open(&path).expect("child open"));
}

/// The logger on a read-only open (it writes the log only), as a web worker would log.
#[test]
fn log_crash_child_read_only() {
    let Ok(path) = std::env::var("FOLIO_LOG_CRASH_CHILD") else {
        return;
    };
    log_and_annotate(&options().read_only(true).open(&path).expect("child open"));
}

fn log_and_annotate(store: &Store) -> ! {
    let mut n = 0u64;
    loop {
        n += 1;
        let query = format!("tide {n} of {}", std::process::id());
        let response = store.search(&SearchRequest::text(&query)).expect("search");
        let id = response.request_id.expect("logged");
        println!("ID {id} {query}");
        if n.is_multiple_of(5) {
            let mut note = Annotation::default();
            note.session = Some(format!("s{id}"));
            store.log().annotate(id, &note).expect("annotate");
            println!("ANNOTATED {id}");
        }
    }
}

#[test]
fn killed_loggers_never_reuse_an_id_and_annotations_land_on_their_own_request() {
    if std::env::var("FOLIO_LOG_CRASH_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("log.folio");
    {
        let store = options().open(&path).expect("create");
        let mut batch = store.batch();
        batch.upsert(doc("tides", "Spring tides follow the full moon."));
        batch.commit().expect("commit");
    }
    // Every id a child was handed, with its query; the ids it annotated.
    let mut handed: BTreeMap<u64, String> = BTreeMap::new();
    let mut annotated: Vec<u64> = Vec::new();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for kill in 0..KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let lines = 20 + (rng % 180) as usize;
        let role = if kill % 2 == 0 {
            "log_crash_child"
        } else {
            "log_crash_child_read_only"
        };
        let mut child = spawn_child(module_path!(), role, ("FOLIO_LOG_CRASH_CHILD", &path));
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut seen = 0;
        while seen < lines {
            line.clear();
            if reader.read_line(&mut line).expect("read") == 0 {
                break;
            }
            if let Some(rest) = line.trim_end().strip_prefix("ID ") {
                let (id, query) = rest.split_once(' ').expect("id and query");
                let id: u64 = id.parse().expect("id");
                let before = handed.insert(id, query.to_string());
                assert!(
                    before.is_none(),
                    "id {id} handed out twice: {before:?} and {query}"
                );
                seen += 1;
            } else if let Some(id) = line.trim_end().strip_prefix("ANNOTATED ") {
                annotated.push(id.parse().expect("id"));
            }
        }
        child.kill().expect("kill");
        child.wait().expect("reap");
        std::thread::sleep(Duration::from_millis(5));

        let store = options().open(&path).expect("reopen");
        let entries = store.log().entries().expect("entries");
        let by_id: BTreeMap<u64, _> = entries.iter().map(|e| (e.request_id, e)).collect();
        for id in &annotated {
            let entry = by_id
                .get(id)
                .unwrap_or_else(|| panic!("annotated {id} lost"));
            assert_eq!(
                entry.request.outcome.session.as_deref(),
                Some(format!("s{id}").as_str())
            );
            let LoggedQuery::Text(query) = &entry.request.query else {
                panic!("a text query");
            };
            assert_eq!(
                Some(query),
                handed.get(id),
                "annotation {id} on another request"
            );
        }
        for entry in &entries {
            if let (LoggedQuery::Text(query), Some(printed)) =
                (&entry.request.query, handed.get(&entry.request_id))
            {
                assert_eq!(
                    query, printed,
                    "entry {} is not the request it was",
                    entry.request_id
                );
            }
        }
        let next = store
            .search(&SearchRequest::text("after the crash"))
            .expect("search")
            .request_id
            .expect("logged");
        let highest = handed.keys().next_back().copied().unwrap_or(0);
        assert!(next > highest, "id {next} reused (the child had {highest})");
        handed.insert(next, "after the crash".into());
    }
    assert!(!annotated.is_empty());
}
