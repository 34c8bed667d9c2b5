//! Many processes, one store: any number of processes read while others write, a reader
//! sees each commit at its next search without reopening, writing handles in two processes
//! commit in turn, each on the other's commits, and read commands never need to write the
//! file.
//!
//! The child processes are this test binary itself, run with `FOLIO_PROC_WRITER` or
//! `FOLIO_PROC_READER` set, and the `folio` binary.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::folio;

use folio::chunk::ChunkSpec;
use folio::query::SearchRequest;
use folio::store::{
    IndexError, LoggedQuery, OpenError, ReadError, StorageError, StoreBuilder, WriteError,
};
use folio::QueryError;
use folio_testkit::test_name;
use folio_testkit::versions::{config_like_default, doc, everything, route, small_options};

const READERS: usize = 8;
const BATCHES: u64 = 50;
const PER_BATCH: usize = 3;
/// How late a reader may first see the final version after its commit returned.
const FRESHNESS: Duration = Duration::from_secs(1);

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_micros()
}

fn reader_options() -> StoreBuilder {
    small_options().read_only(true).create(false)
}

fn writer_options() -> StoreBuilder {
    small_options().create(false)
}

/// Batch `b`'s documents hold the word `marker`; returns the batch of a document id.
fn batch_of(doc_id: &str) -> u64 {
    doc_id[1..5].parse().expect("batch id")
}

/// The writer child: commits `BATCHES` batches (each one version of `default`), moving
/// alias `live` after each, and prints `COMMIT version microseconds` after each commit.
#[test]
fn writer_child() {
    let Ok(path) = std::env::var("FOLIO_PROC_WRITER") else {
        return;
    };
    let store = writer_options().open(&path).expect("writer open");
    for b in 1..=BATCHES {
        let mut batch = store.batch();
        for i in 0..PER_BATCH {
            batch.upsert(doc(
                &format!("b{b:04}-{i}"),
                &format!("Batch {b} item {i}: marker words {}.", b * 11 + i as u64),
            ));
        }
        let version = batch.commit().expect("commit").versions["default"];
        store
            .aliases()
            .set("live", &[route("default", version, 100)])
            .expect("alias");
        println!("COMMIT {version} {}", now_us());
        std::thread::sleep(Duration::from_millis(15));
    }
}

/// A reader child: opens the store once, read-only, and searches until the file `stop`
/// appears beside the store, printing `SEEN version microseconds` when the version it
/// gets changes. Every answer must be one whole version: batches `1..=version`, each
/// complete.
#[test]
fn reader_child() {
    let Ok(path) = std::env::var("FOLIO_PROC_READER") else {
        return;
    };
    let path = PathBuf::from(path);
    let stop = path.with_file_name("stop");
    let store = reader_options().open(&path).expect("reader open");
    println!("READY");
    let (mut last, mut searches) = (u64::MAX, 0u64);
    let deadline = Instant::now() + Duration::from_secs(300);
    while !stop.exists() && Instant::now() < deadline {
        for target in ["default", "live"] {
            let response = everything(&store, target, "marker words batch");
            searches += 1;
            let mut per_batch: BTreeMap<u64, usize> = BTreeMap::new();
            for hit in &response.results {
                *per_batch.entry(batch_of(&hit.doc_id)).or_default() += 1;
            }
            assert!(
                per_batch.keys().copied().eq(1..=response.version)
                    && per_batch.values().all(|n| *n == PER_BATCH),
                "{target}@{} is not one whole version: {per_batch:?}",
                response.version
            );
            if target == "default" && response.version != last {
                last = response.version;
                println!("SEEN {last} {}", now_us());
            }
        }
    }
    println!("SEARCHES {searches}");
}

/// A logger child: opens the store read-only with the request log and runs `LOGGED`
/// searches, printing `LOGGED id search-number` for each, then closes.
#[test]
fn logger_child() {
    let Ok(path) = std::env::var("FOLIO_PROC_LOGGER") else {
        return;
    };
    let store = reader_options()
        .log_requests(true)
        .open(&path)
        .expect("logger open");
    for i in 0..LOGGED {
        let query = logged_query(std::process::id(), i);
        let id = store
            .search(&SearchRequest::text(&query))
            .expect("logged search")
            .request_id
            .expect("request id");
        println!("LOGGED {id} {i}");
    }
}

/// Searches each logger child runs.
const LOGGED: u64 = 300;

fn logged_query(pid: u32, i: u64) -> String {
    format!("marker words {i} from {pid}")
}

fn spawn_child(role: &str, path: &Path) -> Child {
    let test = match role {
        "FOLIO_PROC_WRITER" => "writer_child",
        "FOLIO_PROC_LOGGER" => "logger_child",
        _ => "reader_child",
    };
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", &test_name(module_path!(), test)])
        .args(["--nocapture", "--test-threads=1"])
        .env(role, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child")
}

/// Sends each `(child, word, number, microseconds)` line of `child`'s stdout to `lines`.
fn forward(child: &mut Child, id: usize, lines: mpsc::Sender<(usize, String, u64, u128)>) {
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The harness prints `test NAME ... ` before the first line, unbroken.
            let line = line.rsplit("... ").next().unwrap_or(&line).to_string();
            let mut words = line.split_whitespace();
            let word = words.next().unwrap_or_default().to_string();
            let n = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
            let t = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
            if lines.send((id, word, n, t)).is_err() {
                return;
            }
        }
    });
}

fn finish(child: Child, what: &str) {
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Four processes log searches through read-only opens while a fifth commits batches:
/// once they closed, every search each logger was answered with is in the log, under its
/// own id, and no id was handed out twice.
#[test]
fn four_read_only_loggers_lose_nothing_while_a_fifth_writes() {
    if std::env::var("FOLIO_PROC_WRITER").is_ok() || std::env::var("FOLIO_PROC_LOGGER").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let mut writer = spawn_child("FOLIO_PROC_WRITER", &path);
    let (lines, received) = mpsc::channel();
    let mut loggers = Vec::new();
    for id in 0..4 {
        let mut logger = spawn_child("FOLIO_PROC_LOGGER", &path);
        forward(&mut logger, id, lines.clone());
        loggers.push(logger);
    }
    drop(lines);
    let pids: Vec<u32> = loggers.iter().map(Child::id).collect();
    for logger in loggers {
        finish(logger, "a logger");
    }
    let out = writer.wait().expect("writer");
    assert!(out.success(), "the writer failed");
    let mut handed: BTreeMap<u64, String> = BTreeMap::new();
    for (logger, word, id, i) in received.iter() {
        if word != "LOGGED" {
            continue;
        }
        let query = logged_query(pids[logger], i as u64);
        if let Some(before) = handed.insert(id, query.clone()) {
            panic!("id {id} handed out twice: {before} and {query}");
        }
    }
    assert_eq!(handed.len(), 4 * LOGGED as usize, "every logger reported");
    let store = reader_options().open(&path).expect("open");
    let logged: BTreeMap<u64, String> = store
        .log()
        .entries()
        .expect("entries")
        .into_iter()
        .filter_map(|e| match e.request.query {
            LoggedQuery::Text(q) => Some((e.request_id, q)),
            _ => None,
        })
        .collect();
    for (id, query) in &handed {
        assert_eq!(logged.get(id), Some(query), "entry {id} lost or changed");
    }
    assert_eq!(
        store.stats().expect("stats").documents,
        2 + BATCHES * PER_BATCH as u64,
        "every batch of the writer landed"
    );
}

#[test]
fn eight_reader_processes_follow_one_writer() {
    if std::env::var("FOLIO_PROC_WRITER").is_ok() || std::env::var("FOLIO_PROC_READER").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.folio");
    let store = small_options().open(&path).expect("create");
    store
        .aliases()
        .set("live", &[route("default", 0, 100)])
        .expect("alias");
    drop(store);
    let (send, lines) = mpsc::channel();
    let mut readers: Vec<Child> = (0..READERS)
        .map(|r| {
            let mut child = spawn_child("FOLIO_PROC_READER", &path);
            forward(&mut child, r, send.clone());
            child
        })
        .collect();
    let mut ready = 0;
    while ready < READERS {
        let (_, word, _, _) = lines
            .recv_timeout(Duration::from_secs(120))
            .expect("readers start");
        ready += usize::from(word == "READY");
    }
    let mut writer = spawn_child("FOLIO_PROC_WRITER", &path);
    forward(&mut writer, READERS, send);

    // Until every reader has seen the final version and the writer has reported it (a
    // reader may see it before the writer's line arrives), or the writer died.
    let mut committed: BTreeMap<u64, u128> = BTreeMap::new();
    let mut seen: Vec<BTreeMap<u64, u128>> = vec![BTreeMap::new(); READERS];
    let deadline = Instant::now() + Duration::from_secs(300);
    while (seen.iter().any(|s| !s.contains_key(&BATCHES)) || !committed.contains_key(&BATCHES))
        && Instant::now() < deadline
    {
        let Ok((id, word, n, t)) = lines.recv_timeout(Duration::from_secs(1)) else {
            if writer
                .try_wait()
                .expect("writer")
                .is_some_and(|s| !s.success())
            {
                break;
            }
            continue;
        };
        match word.as_str() {
            "COMMIT" => {
                committed.insert(n, t);
            }
            "SEEN" => {
                seen[id].entry(n).or_insert(t);
            }
            _ => {}
        }
    }
    std::fs::write(dir.path().join("stop"), b"").expect("stop file");
    finish(writer, "the writer");
    for (r, reader) in readers.drain(..).enumerate() {
        finish(reader, &format!("reader {r}"));
    }
    assert_eq!(
        committed.keys().copied().collect::<Vec<_>>(),
        (1..=BATCHES).collect::<Vec<_>>(),
        "the writer reports every commit"
    );
    let final_commit = committed[&BATCHES];
    let mut lags = Vec::new();
    for (r, versions) in seen.iter().enumerate() {
        let first = *versions
            .get(&BATCHES)
            .unwrap_or_else(|| panic!("reader {r} never saw version {BATCHES}: {versions:?}"));
        let lag = Duration::from_micros(first.saturating_sub(final_commit) as u64);
        assert!(
            lag <= FRESHNESS,
            "reader {r} saw version {BATCHES} {lag:?} after its commit"
        );
        lags.push(lag);
        assert!(
            versions.len() > 1,
            "reader {r} searched while the writer committed: {versions:?}"
        );
    }
    println!(
        "{READERS} readers, {BATCHES} commits; final version seen after {:?} at most; versions \
         seen per reader: {:?}",
        lags.iter().max(),
        seen.iter().map(BTreeMap::len).collect::<Vec<_>>()
    );
    let mut store = writer_options().open(&path).expect("reopen");
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
    let out = folio(&["check", path.to_str().expect("utf-8")]);
    assert!(out.status.success(), "folio check: {}", text(&out.stderr));
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A store with a few documents, an alias and a logged search, closed.
fn seeded(dir: &Path) -> PathBuf {
    let path = dir.join("s.folio");
    let options = small_options().log_requests(true);
    let store = options.open(&path).expect("create");
    let mut batch = store.batch();
    batch.upsert(doc(
        "runbook",
        "Rolling back a deploy: run release rollback.",
    ));
    batch.upsert(doc("lunch", "Lunch is served at noon in the cafeteria."));
    batch.commit().expect("commit");
    store
        .aliases()
        .set("prod", &[route("default", 1, 100)])
        .expect("alias");
    store
        .search(&SearchRequest::text("rollback"))
        .expect("logged search");
    path
}

/// Every read command, as `folio` runs them.
fn read_commands(store: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["search", store, "rollback deploy"],
        vec!["search", store, "rollback", "--index", "prod", "--json"],
        vec!["stats", store],
        vec!["chunks", store, "runbook"],
        vec!["versions", store, "default"],
        vec!["index", "list", store],
        vec!["alias", "list", store],
        vec!["route", store, "prod", "tenant"],
        vec!["log", "export", store],
        vec!["check", store],
    ]
}

#[test]
fn other_processes_read_while_one_writes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let writer = writer_options().open(&path).expect("writer");
    let mut batch = writer.batch();
    batch.upsert(doc("hotel", "Hotel limits for travel."));
    batch.commit().expect("commit while open");
    let store = path.to_str().expect("utf-8");
    for args in read_commands(store) {
        let out = folio(&args);
        assert!(
            out.status.success(),
            "`folio {}` while another process writes: {}",
            args.join(" "),
            text(&out.stderr)
        );
    }
    let out = folio(&["search", store, "hotel travel"]);
    assert!(
        text(&out.stdout).contains("hotel"),
        "a reader sees the writer's last commit: {}",
        text(&out.stdout)
    );
    // Another process writes too: an idle writing handle holds no lock.
    let out = folio(&["delete", store, "lunch"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // This handle sees that commit at its next read, and plans its next commit on it: a
    // plan on its own last state would number the version again and bring "lunch" back.
    let seen = everything(&writer, "default", "lunch hotel");
    assert!(seen.version > 2, "version {}", seen.version);
    assert!(seen.results.iter().all(|h| h.doc_id != "lunch"));
    let mut batch = writer.batch();
    batch.upsert(doc("train", "Train tickets are booked by the travel desk."));
    let receipt = batch
        .commit()
        .expect("commits after another process's commit");
    assert_eq!(receipt.versions["default"], seen.version + 1);
    let after = everything(&writer, "default", "lunch hotel train");
    let mut ids: Vec<&str> = after.results.iter().map(|h| h.doc_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids, ["hotel", "runbook", "train"]);
}

/// The writer child's commits interleaved with this process's, each process keeping its
/// writing handle open throughout: every commit lands, as its own version, on the other's.
#[test]
fn writing_handles_in_two_processes_commit_in_turn() {
    if std::env::var("FOLIO_PROC_WRITER").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let store = writer_options().open(&path).expect("writer");
    let mut child = spawn_child("FOLIO_PROC_WRITER", &path);
    let (lines, received) = mpsc::channel();
    forward(&mut child, 0, lines);
    // The child's first commit, so the two run side by side from here.
    let first = loop {
        match received.recv_timeout(Duration::from_secs(120)) {
            Ok((_, word, version, _)) if word == "COMMIT" => break version,
            Ok(_) => {}
            Err(e) => panic!("no commit from the child: {e}"),
        }
    };
    let mut mine = Vec::new();
    for b in 1..=BATCHES {
        let mut batch = store.batch();
        batch.upsert(doc(&format!("p{b:04}"), &format!("Parent batch {b}.")));
        let version = batch.commit().expect("commit").versions["default"];
        mine.push(version);
        store
            .aliases()
            .set("mine", &[route("default", version, 100)])
            .expect("alias");
        std::thread::sleep(Duration::from_millis(15));
    }
    finish(child, "the writer child");
    let theirs: Vec<u64> = std::iter::once(first)
        .chain(
            received
                .try_iter()
                .filter(|(_, word, _, _)| word == "COMMIT")
                .map(|(_, _, version, _)| version),
        )
        .collect();
    assert_eq!(
        theirs.len(),
        BATCHES as usize,
        "the child reported every commit"
    );
    let mut all: Vec<u64> = mine.iter().chain(&theirs).copied().collect();
    all.sort();
    assert!(
        all.iter().copied().eq(2..=2 * BATCHES + 1),
        "every commit is its own version: {all:?}"
    );
    assert!(
        mine.windows(2).any(|w| w[1] > w[0] + 1),
        "the commits interleaved: {mine:?}"
    );
    let documents = store.stats().expect("stats").documents;
    assert_eq!(documents, 2 + BATCHES * (1 + PER_BATCH as u64));
    drop(store);
    let mut store = writer_options().open(&path).expect("reopen");
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Runs `folio` as a user who may only read `dir`'s files: `nobody` when the tests run as
/// root (which the file mode does not stop), else the current user. `nobody` runs the binary
/// from a fresh directory anyone may enter ([`reachable_folio`]): the checkout, and the built
/// binary with it, may be in a folder only root can enter (`/root`, a `mktemp -d` folder).
fn folio_as_reader(dir: &Path, args: &[&str]) -> Output {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let copy = reachable_folio();
            let mut command = Command::new(copy.path().join("folio"));
            command.args(args).current_dir(dir).uid(65534).gid(65534);
            loop {
                match command.output() {
                    // A copy just written may still be open in a child another test forked.
                    Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    out => return out.expect("run folio"),
                }
            }
        }
    }
    Command::new(env!("CARGO_BIN_EXE_folio"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run folio")
}

/// A fresh temporary directory (mode 0755, outside the checkout) holding `folio` (0755): a
/// hard link to the built binary when it is on the same file system and anyone may run it,
/// else a copy.
#[cfg(unix)]
fn reachable_folio() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let open = || std::fs::Permissions::from_mode(0o755);
    let dir = tempfile::Builder::new()
        .prefix("folio-reader")
        .tempdir()
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), open()).expect("chmod");
    let built = Path::new(env!("CARGO_BIN_EXE_folio"));
    let exe = dir.path().join("folio");
    let runnable = std::fs::metadata(built)
        .expect("folio")
        .permissions()
        .mode()
        & 0o005
        == 0o005;
    if !(runnable && std::fs::hard_link(built, &exe).is_ok()) {
        std::fs::copy(built, &exe).expect("copy folio");
        std::fs::set_permissions(&exe, open()).expect("chmod");
    }
    dir
}

#[cfg(unix)]
#[test]
fn a_store_the_user_may_only_read_can_be_searched_listed_and_checked() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let bytes = std::fs::read(&path).expect("read");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // The user really may not write it: a write command fails, and so does a logged
    // search, saying why.
    let out = folio_as_reader(dir.path(), &["delete", "s.folio", "lunch"]);
    assert!(!out.status.success(), "the file is writable for this user");
    let out = folio_as_reader(dir.path(), &["search", "s.folio", "lunch", "--log"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("cannot keep the request log"),
        "{}",
        text(&out.stderr)
    );
    for args in read_commands("s.folio") {
        let out = folio_as_reader(dir.path(), &args);
        assert!(
            out.status.success(),
            "`folio {}` on a read-only file: {}",
            args.join(" "),
            text(&out.stderr)
        );
        if args[0] == "search" {
            assert!(
                text(&out.stdout).contains("runbook"),
                "{}",
                text(&out.stdout)
            );
        }
    }
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "read commands left the file as it was"
    );
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The modes of this process's open descriptors of `path` (Linux).
#[cfg(target_os = "linux")]
fn open_modes(path: &Path) -> Vec<i32> {
    let target = std::fs::canonicalize(path).expect("canonical");
    let mut modes = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("fds") {
        let entry = entry.expect("fd");
        if std::fs::read_link(entry.path()).ok().as_deref() != Some(target.as_path()) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            entry.file_name().to_string_lossy()
        ))
        .expect("fdinfo");
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i32::from_str_radix(f.trim(), 8).ok())
            .expect("flags");
        modes.push(flags & libc::O_ACCMODE);
    }
    modes
}

#[test]
fn a_reader_follows_the_writer_without_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let writer = writer_options().open(&path).expect("writer");
    let reader = reader_options().open(&path).expect("reader");
    assert!(reader.is_read_only() && !writer.is_read_only());
    #[cfg(target_os = "linux")]
    {
        let modes = open_modes(&path);
        assert_eq!(
            modes.iter().filter(|m| **m == libc::O_RDONLY).count(),
            1,
            "the reader's descriptor is read-only: {modes:?}"
        );
        assert_eq!(modes.len(), 2, "{modes:?}");
    }
    assert_eq!(everything(&reader, "default", "lunch").version, 1);

    // A batch: the reader's next search answers from the new version (that its new head
    // reuses the segment already loaded is `follow.rs`'s unit test).
    let mut batch = writer.batch();
    batch.upsert(doc("hotel", "Hotel limits for travel."));
    batch.commit().expect("commit");
    let response = everything(&reader, "default", "hotel travel");
    assert_eq!(response.version, 2);
    assert!(response.results.iter().any(|h| h.doc_id == "hotel"));
    let stats = reader.stats().expect("stats");
    assert_eq!(
        (stats.indexes[0].version, stats.indexes[0].segments),
        (2, 2)
    );

    // A new index, a moved alias, a tag: all seen at the next read.
    let config = config_like_default(&writer, ChunkSpec::default());
    writer.indexes().create("second", config).expect("index");
    writer
        .aliases()
        .set("prod", &[route("second", 1, 100)])
        .expect("alias");
    assert_eq!(
        reader
            .indexes()
            .list()
            .expect("indexes")
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        ["default", "second"]
    );
    let response = everything(&reader, "prod", "hotel");
    assert_eq!((response.index.as_str(), response.version), ("second", 1));

    // A dropped index and collected versions are gone for the reader too.
    writer
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("alias");
    writer.indexes().drop("second").expect("drop");
    let mut batch = writer.batch();
    batch.delete("lunch");
    batch.commit().expect("commit");
    writer.gc(1).expect("gc");
    assert!(matches!(
        reader.search(&SearchRequest::text("x").target("second")),
        Err(QueryError::Read(ReadError::UnknownTarget { ref name })) if name == "second"
    ));
    assert!(matches!(
        reader.search(&SearchRequest::text("x").target("default@1")),
        Err(QueryError::Read(ReadError::UnknownVersion {
            version: 1,
            ..
        }))
    ));
    let response = everything(&reader, "default", "lunch hotel");
    assert_eq!(response.version, 3);
    assert!(response.results.iter().all(|h| h.doc_id != "lunch"));

    // Nothing the reader does writes.
    let mut batch = reader.batch();
    batch.delete("hotel");
    assert!(matches!(
        batch.commit(),
        Err(WriteError::Storage(StorageError::ReadOnly))
    ));
    assert!(matches!(
        reader.aliases().set("x", &[route("default", 3, 100)]),
        Err(IndexError::Storage(StorageError::ReadOnly))
    ));
    let mut reader = reader;
    let report = reader.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
    // A read-only open that logs writes its log entries, and nothing else.
    let logger = reader_options()
        .log_requests(true)
        .open(&path)
        .expect("a read-only open of a writable file logs");
    let id = logger
        .search(&SearchRequest::text("hotel"))
        .expect("logged search")
        .request_id
        .expect("request id");
    assert!(matches!(
        logger.aliases().set("x", &[route("default", 3, 100)]),
        Err(IndexError::Storage(StorageError::ReadOnly))
    ));
    drop(logger);
    let entries = reader.log().entries().expect("entries");
    assert!(entries.iter().any(|e| e.request_id == id), "{entries:?}");
}

#[test]
fn a_read_only_open_of_an_older_format_refuses_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.folio");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/format2.folio"
        ),
        &path,
    )
    .expect("copy fixture");
    let bytes = std::fs::read(&path).expect("read");
    match reader_options().open(&path) {
        Err(OpenError::UpgradeNeeded { found, current, .. }) => {
            assert_eq!(found, 2);
            assert_eq!(current, folio::store::FORMAT_VERSION);
        }
        other => panic!("expected UpgradeNeeded, got {:?}", other.err()),
    }
    assert_eq!(std::fs::read(&path).expect("read"), bytes);
    // A read command says so where it may not write the file...
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let out = folio_as_reader(dir.path(), &["stats", "old.folio"]);
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("opening it for writing once upgrades it"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(std::fs::read(&path).expect("read"), bytes);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    // ...and upgrades it first where it may, as the first command that writes would.
    let out = folio(&["stats", path.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("upgraded"),
        "{}",
        text(&out.stderr)
    );
    reader_options().open(&path).expect("reads once upgraded");
}

/// The child of `a_reader_opens_after_the_writer_was_killed`: opens for writing, commits,
/// says so, and waits to be killed.
#[test]
fn killed_writer_child() {
    let Ok(path) = std::env::var("FOLIO_PROC_KILLED") else {
        return;
    };
    let store = writer_options().open(&path).expect("open");
    let mut batch = store.batch();
    batch.upsert(doc("late", "Written just before the kill."));
    batch.commit().expect("commit");
    println!("COMMITTED");
    std::thread::sleep(Duration::from_secs(600));
}

/// The seeded store in `dir`, once a writer that committed `late` was killed while it had
/// the file open.
fn killed_writers_store(dir: &Path) -> PathBuf {
    let path = seeded(dir);
    let mut child = folio_testkit::spawn_child(
        module_path!(),
        "killed_writer_child",
        ("FOLIO_PROC_KILLED", &path),
    );
    let stdout = child.stdout.take().expect("stdout");
    let committed = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.ends_with("COMMITTED"));
    assert!(committed, "the child committed");
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    path
}

#[test]
fn a_reader_opens_after_the_writer_was_killed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = killed_writers_store(dir.path());
    // The kill left the file for redb to recover: a plain read-only open refuses it.
    let mut redb_reader = redb::Database::builder();
    redb_reader.set_concurrency_mode(redb::ConcurrencyMode::SingleWriter);
    assert!(matches!(
        redb_reader.open_read_only(&path),
        Err(redb::DatabaseError::RepairAborted)
    ));
    // A user who may only read the file cannot recover it, and is told why.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let writable = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let out = folio_as_reader(dir.path(), &["search", "s.folio", "late"]);
        std::fs::set_permissions(&path, writable).expect("chmod");
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("was not closed by the process that last wrote it"),
            "{}",
            text(&out.stderr)
        );
    }
    let reader = reader_options()
        .open(&path)
        .expect("a reader opens after the kill");
    assert!(reader
        .document_ids()
        .expect("ids")
        .contains(&"late".to_string()));
}

/// `folio check`, `backup`, `dump` and `recover` on a file whose writer was killed leave
/// it byte for byte as it was (they read a recovered copy), and answer with the killed
/// writer's last commit: `check` says the file needs recovery and exits 0, the copy passing
/// everything; a user who may only read the file can check it too.
#[test]
fn check_backup_dump_and_recover_leave_a_killed_writers_file_as_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = killed_writers_store(dir.path());
    let bytes = std::fs::read(&path).expect("read");
    let store = path.to_str().expect("utf-8");
    let untouched = |what: &str| {
        assert!(
            std::fs::read(&path).expect("read") == bytes,
            "{what} wrote the file"
        );
    };
    let out = folio(&["check", store]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("needs redb's recovery") && said.contains("consistent"),
        "{said}"
    );
    untouched("check");
    let out = folio(&["check", store, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["needs_recovery"], true, "{report}");
    untouched("check --json");

    let copy = dir.path().join("copy.folio");
    let out = folio(&["backup", store, copy.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    untouched("backup");
    let holds_late = |store: &Path| {
        let ids = reader_options().open(store).expect("opens").document_ids();
        ids.expect("ids").contains(&"late".to_string())
    };
    assert!(holds_late(&copy), "the backup holds the last commit");

    let out = folio(&["dump", store]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"late\""));
    untouched("dump");

    let recovered = dir.path().join("recovered.folio");
    // The seeded store's embedder (`small_options`).
    let to = recovered.to_str().expect("utf-8");
    let out = folio(&["recover", store, to, "--embedder", "hash:8"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    untouched("recover");
    assert!(holds_late(&recovered), "the recovery holds the last commit");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let out = folio_as_reader(dir.path(), &["check", "s.folio"]);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(out.status.success(), "{}", text(&out.stderr));
        untouched("check as a reader");
    }
}

/// A reader handle that outlives a revocation, a delete and a rollback in another handle
/// never serves what the writer took away, at any version it can name.
#[test]
fn a_reader_never_serves_what_the_writer_revoked() {
    use folio::store::Access;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.folio");
    drop(small_options().open(&path).expect("create"));
    let writer = writer_options().open(&path).expect("writer");
    let mut batch = writer.batch();
    batch.upsert(doc("secret", "Falcon budget memo.").with_acl(["a"]));
    batch.upsert(doc("gone", "Falcon budget draft.").with_acl(["a"]));
    batch.upsert(doc("lunch", "Lunch is served at noon."));
    batch.commit().expect("commit");
    writer
        .aliases()
        .set("prod", &[route("default", 1, 100)])
        .expect("alias");
    let reader = reader_options().open(&path).expect("reader");
    let ids = |target: &str| -> Vec<String> {
        let request = SearchRequest::text("falcon budget")
            .access(Access::principals(["a"]))
            .target(target)
            .k(10);
        let mut ids: Vec<String> = reader
            .search(&request)
            .expect("search")
            .results
            .into_iter()
            .map(|h| h.doc_id)
            .collect();
        ids.sort();
        ids
    };
    // The reader caches a's mask for version 1 before the writer acts.
    assert_eq!(ids("prod"), ["gone", "lunch", "secret"]);
    assert_eq!(ids("default@1"), ["gone", "lunch", "secret"]);

    let mut batch = writer.batch();
    batch.set_acl("secret", ["b"]);
    batch.delete("gone");
    batch.commit().expect("revoke");
    writer.rollback("default", 1).expect("rollback");
    for target in ["prod", "default@1", "default@2", "default"] {
        assert_eq!(ids(target), ["lunch"], "{target}");
    }
}

/// A writing process killed at random moments, inside its commits too, while this process
/// keeps a writing handle open: after each kill this handle commits on the file's last
/// commit (redb's multi-writer mode picks the file up where the dead writer's last commit
/// left it), sees every batch the dead writer reported, and the file ends consistent.
#[test]
fn a_writer_killed_mid_commit_leaves_the_other_writers_going() {
    if std::env::var("FOLIO_PROC_WRITER").is_ok() {
        return;
    }
    const KILLS: u64 = 6;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = seeded(dir.path());
    let store = writer_options().open(&path).expect("writer");
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for kill in 0..KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let commits = 1 + rng % 12;
        let mut child = spawn_child("FOLIO_PROC_WRITER", &path);
        let stdout = child.stdout.take().expect("stdout");
        // Kept open until the kill, so the child never finds its output closed.
        let mut lines = BufReader::new(stdout).lines();
        let reported = lines
            .by_ref()
            .map_while(Result::ok)
            .filter(|l| l.contains("COMMIT "))
            .take(commits as usize)
            .count() as u64;
        // A moment later, often inside the next commit (15 ms apart).
        std::thread::sleep(Duration::from_micros(rng % 15_000));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        drop(lines);
        assert_eq!(reported, commits, "the child reported {commits} commits");

        let mut batch = store.batch();
        batch.upsert(doc(&format!("k{kill}"), &format!("After kill {kill}.")));
        batch
            .commit()
            .expect("commits after the other writer was killed");
        let ids = store.document_ids().expect("ids");
        for b in 1..=commits {
            assert!(
                ids.contains(&format!("b{b:04}-0")),
                "batch {b} the killed writer reported is gone"
            );
        }
        assert!(ids.contains(&format!("k{kill}")));
    }
    drop(store);
    let mut store = writer_options().open(&path).expect("reopen");
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}
