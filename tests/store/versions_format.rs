//! Files of older and other format versions: read (versions 1 to 6 are upgraded in place,
//! atomically), or refused with a message naming the versions. The fixtures are small
//! stores written by folio builds of each format; `regenerate_format11_fixture` rewrites
//! the current one.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use folio::chunk::{ChildStrategy, ChunkSpec, EmbedForm, ParentStrategy, SourceFormat};
use folio::document::Document;
use folio::embed::{EmbedError, Embedder, HashEmbedder};
use folio::filter::{parse_date, Filter};
use folio::index::lexical::LexicalLanguage;
use folio::index::Metric;
use folio::query::{SearchMode, SearchRequest};
use folio::store::{
    Access, GraphParams, LogEntry, OpenError, Outcome, Rating, Store, StoreBuilder, Verdict,
    FORMAT_VERSION,
};
use folio::MetadataValue;
use folio_testkit::versions::{config_like_default, route, Checksummed, TestBackend};
use redb::{ReadableDatabase, TableDefinition};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The meta table as format 9 stores it: each value a payload and its checksum.
const SEALED_META: TableDefinition<&str, Checksummed> = TableDefinition::new("meta");

/// Opens fixtures without embedding anything, so they stay readable whatever becomes of
/// the built-in embedder's settings.
struct NoEmbedder;

impl Embedder for NoEmbedder {
    fn name(&self) -> &str {
        "fixture-reader"
    }
    fn fingerprint(&self) -> String {
        "none".into()
    }
    fn dimension(&self) -> usize {
        1
    }
    fn metric(&self) -> Metric {
        Metric::Cosine
    }
    fn max_input_tokens(&self) -> usize {
        0
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Err(EmbedError::Failed(
            "the fixture reader embeds nothing".into(),
        ))
    }
}

fn reader_options() -> StoreBuilder {
    Store::builder().embedder(Arc::new(NoEmbedder))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a fixture in a temporary directory: opening upgrades files in place.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).expect("copy fixture");
    (dir, path)
}

fn stored_format(path: &Path) -> u32 {
    let db = redb::Database::open(path).expect("redb open");
    let txn = db.begin_read().expect("read");
    let bytes = match txn.open_table(META) {
        Ok(meta) => meta
            .get("format_version")
            .expect("get")
            .expect("present")
            .value()
            .to_vec(),
        Err(redb::TableError::TableTypeMismatch { .. }) => {
            let meta = txn.open_table(SEALED_META).expect("sealed meta");
            let value = meta.get("format_version").expect("get").expect("present");
            Checksummed::payload(value.value()).to_vec()
        }
        Err(e) => panic!("meta: {e}"),
    };
    u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

/// The best unit for the stored vector of the first child of `target`'s first segment.
fn self_match(store: &Store, target: &str) -> (String, f32) {
    let segments = store.vectors(target).expect("vectors").segments;
    let vector = segments[0].rows()[..segments[0].dim()].to_vec();
    let response = store
        .search(
            &SearchRequest::vector(vector)
                .access(Access::Unrestricted)
                .target(target)
                .k(1),
        )
        .expect("vector search");
    let hit = &response.results[0];
    (hit.children[0].chunk_id.clone(), hit.children[0].score)
}

/// Every answer a reader can get from `store`, as text: documents, indexes, versions,
/// chunks, aliases, the request log, and vector searches of every retained version, tag
/// and alias (the first row of each segment as the query, principals `eng` and none).
/// Scores are printed to 4 decimals so the text does not depend on the distance kernel's
/// last bits. `tests/fixtures/formatN.answers.txt` hold what the folio build that wrote
/// format N answered (`record_fixture_answers`), so an upgrade is checked against them.
/// A logged request as the format 2 to 5 builds printed it (`{:?}` of their `LogEntry`):
/// what format 6 added is checked by `check_fixture_contents`.
fn log_line(entry: &LogEntry) -> String {
    let r = &entry.request;
    let feedback = match &r.feedback {
        Some(f) => format!(
            "Some(Feedback {{ rating: {:?}, note: {:?}, time_ms: {} }})",
            f.rating, f.note, f.time_ms
        ),
        None => "None".into(),
    };
    format!(
        "LogEntry {{ request_id: {}, request: LoggedRequest {{ time_ms: {}, query: {:?}, \
         principals: {:?}, target: {:?}, route_key: {:?}, index: {:?}, version: {}, \
         children: {:?}, parents: {:?}, context_tokens: {}, latency_us: {}, feedback: {feedback} }} }}",
        entry.request_id,
        r.time_ms,
        r.query,
        r.principals,
        r.target,
        r.route_key,
        r.index,
        r.version,
        r.children,
        r.parents,
        r.context_tokens,
        r.latency_us,
    )
}

fn answers(store: &Store) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let ids = store.document_ids().expect("ids");
    writeln!(out, "documents {ids:?}").unwrap();
    for id in &ids {
        writeln!(out, "{:?}", store.document(id).expect("document")).unwrap();
    }
    let mut targets = Vec::new();
    for index in store.indexes().list().expect("indexes") {
        // As the format 1 to 8 builds printed it: `check_fixture_contents` checks the form,
        // and the vectors setting (listed since format 8) and the lexical language (since
        // format 10) are checked apart.
        let form = format!(", embed_form: {:?}", index.spec.embed_form);
        let vectors = format!(", vectors: {:?}", index.vectors);
        let lexical = format!(", lexical_language: {:?}", index.lexical_language);
        let line = format!("{index:?}").replacen(&form, "", 1);
        let line = line.replacen(&vectors, "", 1).replacen(&lexical, "", 1);
        writeln!(out, "{line}").unwrap();
        for id in &ids {
            for chunk in store.chunks(&index.name, id).expect("chunks") {
                writeln!(out, "  {chunk:?}").unwrap();
            }
        }
        targets.push(index.name.clone());
        for version in store.versions(&index.name).list().expect("versions") {
            writeln!(out, "  {version:?}").unwrap();
            targets.push(format!("{}@{}", index.name, version.version));
            for tag in &version.tags {
                targets.push(format!("{}@{tag}", index.name));
            }
        }
    }
    for alias in store.aliases().list().expect("aliases") {
        writeln!(out, "{alias:?}").unwrap();
        targets.push(alias.name.clone());
    }
    for entry in store.log().entries().expect("log") {
        writeln!(out, "{}", log_line(&entry)).unwrap();
    }
    for target in targets {
        let queries: Vec<Vec<f32>> = store
            .vectors(&target)
            .expect("vectors")
            .segments
            .iter()
            .map(|s| s.rows()[..s.dim()].to_vec())
            .collect();
        for (i, vector) in queries.into_iter().enumerate() {
            for access in [Access::Unrestricted, Access::Principals(vec!["eng".into()])] {
                let mut request = SearchRequest::vector(vector.clone())
                    .access(access.clone())
                    .target(&target)
                    .k(100);
                request.dedup = None;
                let response = store.search(&request).expect("search");
                writeln!(
                    out,
                    "search {target} segment {i} {access:?}: {} v{}",
                    response.index, response.version
                )
                .unwrap();
                for hit in &response.results {
                    let children: Vec<String> = hit
                        .children
                        .iter()
                        .map(|c| format!("{} {:.4} {}..{}", c.chunk_id, c.score, c.start, c.end))
                        .collect();
                    writeln!(
                        out,
                        "  {} {} {:.4} {:?} {:?} {}..{} {} {children:?}",
                        hit.doc_id,
                        hit.parent_id,
                        hit.score,
                        hit.section_path,
                        hit.text,
                        hit.start,
                        hit.end,
                        hit.tokens
                    )
                    .unwrap();
                }
            }
        }
    }
    out
}

fn recorded_answers(format: u32) -> String {
    std::fs::read_to_string(fixture(&format!("format{format}.answers.txt"))).expect("answers")
}

/// What an upgraded fixture answers: what its own build answered (`recorded`), except that
/// searches of versions other than the head no longer return documents deleted since, or
/// whose current ACL excludes the caller (format 4 made revocations and deletions live).
/// Head answers must come through unchanged.
fn live_answers(recorded: &str, store: &Store) -> String {
    let heads: Vec<(String, u64)> = store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .map(|i| (i.name, i.head))
        .collect();
    let mut out = String::new();
    // In a search block: whether it searched a head, and who asked (None: unrestricted).
    let mut block: Option<(bool, Option<String>)> = None;
    for line in recorded.lines() {
        if let Some(header) = line.strip_prefix("search ") {
            let (query, answered) = header.rsplit_once(": ").expect("search header");
            let (index, version) = answered.rsplit_once(" v").expect("index and version");
            let head = heads.contains(&(index.to_string(), version.parse().expect("version")));
            let who = query
                .split_once("Principals([\"")
                .map(|(_, p)| p.trim_end_matches("\"])").to_string());
            block = Some((head, who));
        } else if !line.starts_with("  ") {
            block = None;
        } else if let Some((head, who)) = &block {
            let doc_id = line.split_whitespace().next().expect("doc id");
            let admitted = store
                .document(doc_id)
                .expect("document")
                .is_some_and(|d| match who {
                    None => true,
                    Some(p) => d.acl.is_empty() || d.acl.contains(p),
                });
            if !admitted {
                assert!(!head, "a head answer changed: {line}");
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Writes `tests/fixtures/format{FORMAT_VERSION}.answers.txt`, what this build answers from
/// its own fixture; run it after `regenerate_format11_fixture`. (`format1.answers.txt` and
/// `format2.answers.txt` were written by the format 2 build, which read both fixtures
/// without re-encoding a record, and stay as they are.)
#[test]
#[ignore = "writes the fixture's answers"]
fn record_fixture_answers() {
    let (_dir, path) = copy(&format!("format{FORMAT_VERSION}.folio"));
    let store = reader_options().open(&path).expect("open");
    std::fs::write(
        fixture(&format!("format{FORMAT_VERSION}.answers.txt")),
        answers(&store),
    )
    .expect("write answers");
}

#[test]
fn a_format1_file_is_upgraded_and_reads_as_before() {
    let (_dir, path) = copy("format1.folio");
    assert_eq!(stored_format(&path), 1);
    let mut store = reader_options().open(&path).expect("open v1");
    let expected = live_answers(&recorded_answers(1), &store);
    assert_ne!(
        expected,
        recorded_answers(1),
        "version 1 showed the deleted `lunch`"
    );
    assert_eq!(answers(&store), expected);
    let versions = store.versions("default").list().expect("versions");
    let changes: Vec<&str> = versions.iter().map(|v| v.change.as_str()).collect();
    assert_eq!(changes, ["create", "upsert 3", "upsert 1, delete 1"]);
    assert_eq!(store.document_ids().expect("ids"), ["handbook", "runbook"]);
    let handbook = store.document("handbook").expect("read").expect("stored");
    assert!(handbook.text.contains("30 days"));
    let runbook = store.document("runbook").expect("read").expect("stored");
    assert_eq!(runbook.acl, ["eng"]);
    let (chunk, score) = self_match(&store, "default@1");
    assert!(chunk.ends_with("#c0"), "{chunk}");
    assert!((score - 1.0).abs() < 1e-4);
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
    // Version 2 features work on the upgraded file.
    store
        .versions("default")
        .tag(1, "before-upgrade")
        .expect("tag");
    store
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("alias");
    drop(store);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format2_file_is_upgraded_and_reads_as_before() {
    let (_dir, path) = copy("format2.folio");
    assert_eq!(stored_format(&path), 2);
    let store = reader_options().open(&path).expect("open v2");
    let expected = live_answers(&recorded_answers(2), &store);
    assert_eq!(answers(&store), expected);
    check_fixture_contents(store, 2);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
    // Reopening the upgraded file reads it as it is.
    let store = reader_options().open(&path).expect("reopen");
    assert_eq!(answers(&store), expected);
}

#[test]
fn a_format3_file_is_upgraded_and_reads_as_before_except_what_was_deleted() {
    let (_dir, path) = copy("format3.folio");
    assert_eq!(stored_format(&path), 3);
    let store = reader_options().open(&path).expect("open v3");
    let expected = live_answers(&recorded_answers(3), &store);
    // `lunch`, deleted in version 2, was still served by version 1, its tag, the `split`
    // alias and the pinned `small` index.
    assert_ne!(expected, recorded_answers(3));
    assert_eq!(answers(&store), expected);
    check_fixture_contents(store, 3);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format4_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format4.folio");
    assert_eq!(stored_format(&path), 4);
    let store = reader_options().open(&path).expect("open v4");
    // Format 5 only typed metadata values (the fixture has none): nothing else changes.
    assert_eq!(answers(&store), recorded_answers(4));
    // The last batch revoked `eng` from `runbook` and brought `lunch` back: no version
    // shows runbook to eng, and version 1 does not show the deleted lunch.
    for target in [
        "default@1",
        "default@first",
        "prod",
        "split",
        "small",
        "default",
    ] {
        let mut request = SearchRequest::vector(vec![1.0; 8])
            .as_principals(["eng"])
            .target(target)
            .k(100);
        request.dedup = None;
        for hit in store.search(&request).expect("search").results {
            assert_ne!(hit.doc_id, "runbook", "{target}");
        }
    }
    for target in ["default@1", "small"] {
        let mut request = SearchRequest::vector(vec![1.0; 8])
            .access(Access::Unrestricted)
            .target(target)
            .k(100);
        request.dedup = None;
        for hit in store.search(&request).expect("search").results {
            assert_ne!(hit.doc_id, "lunch", "{target}");
        }
    }
    check_fixture_contents(store, 4);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format5_file_is_upgraded_and_its_log_kept() {
    let (_dir, path) = copy("format5.folio");
    assert_eq!(stored_format(&path), 5);
    let store = reader_options().open(&path).expect("open v5");
    // Format 6 only extended the logged requests: nothing else changes.
    assert_eq!(answers(&store), recorded_answers(5));
    let log = store.log().entries().expect("log");
    let request = &log[0].request;
    assert_eq!(request.target, "prod");
    assert_eq!(request.filter, None);
    assert_eq!(request.outcome, Outcome::default());
    let feedback = request.feedback.as_ref().expect("feedback");
    assert_eq!(feedback.note.as_deref(), Some("fixture"));
    assert_eq!((feedback.verdict, feedback.gold.len()), (None, 0));
    let size = store.log().size().expect("size");
    assert_eq!(size.entries, 1);
    assert!(size.bytes > 0, "log_bytes counts the upgraded record");
    check_fixture_contents(store, 5);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format6_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format6.folio");
    assert_eq!(stored_format(&path), 6);
    let store = reader_options().open(&path).expect("open v6");
    // Format 7 only recorded the embedded form: every chunk embeds what it embedded.
    assert_eq!(answers(&store), recorded_answers(6));
    check_fixture_contents(store, 6);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format7_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format7.folio");
    assert_eq!(stored_format(&path), 7);
    let store = reader_options().open(&path).expect("open v7");
    // Format 8 only records where each index keeps its vectors: resident, as before.
    assert_eq!(answers(&store), recorded_answers(7));
    check_fixture_contents(store, 7);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format8_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format8.folio");
    assert_eq!(stored_format(&path), 8);
    // A read-only open does not write, so it cannot add the checksums.
    assert!(matches!(
        reader_options().read_only(true).open(&path),
        Err(OpenError::UpgradeNeeded { found: 8, .. })
    ));
    let store = reader_options().open(&path).expect("open v8");
    // Format 9 only added a checksum to every value: everything reads as before.
    assert_eq!(answers(&store), recorded_answers(8));
    check_fixture_contents(store, 8);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

/// Every index's head, searched lexically for `LEXICAL_QUERIES`: each child holding a query
/// term, with its BM25 score, as the oracle computes it over the head's chunks
/// (`hybrid::bm25_ranking`), so the postings read equal those the texts give.
fn assert_lexical_answers_match_the_oracle(store: &Store) {
    let ids = store.document_ids().expect("ids");
    for index in store.indexes().list().expect("indexes") {
        let chunks: Vec<folio::store::ChunkInfo> = ids
            .iter()
            .flat_map(|id| store.chunks(&index.name, id).expect("chunks"))
            .collect();
        assert!(!chunks.is_empty(), "{}", index.name);
        let live: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        let visible: Vec<(String, &str, u32)> = chunks
            .iter()
            .map(|c| (c.chunk_id.clone(), c.text.as_str(), c.number))
            .collect();
        let target = format!("{}@{}", index.name, index.head);
        for query in LEXICAL_QUERIES {
            let request = SearchRequest::text(query)
                .access(Access::Unrestricted)
                .target(&target)
                .mode(SearchMode::Lexical)
                .k(100)
                .no_dedup();
            let response = store.search(&request).expect("lexical search");
            let mut found: Vec<(String, f32, u32)> = response
                .results
                .iter()
                .flat_map(|hit| hit.children.iter())
                .map(|c| {
                    let number = visible
                        .iter()
                        .find(|v| v.0 == c.chunk_id)
                        .expect("a live child")
                        .2;
                    (c.chunk_id.clone(), c.score, number)
                })
                .collect();
            found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
            let found: Vec<(String, f32)> = found.into_iter().map(|(id, s, _)| (id, s)).collect();
            let expected = crate::hybrid::bm25_ranking(&live, &visible, query);
            assert!(
                !expected.is_empty(),
                "{target} {query:?}: the oracle finds nothing"
            );
            crate::hybrid::assert_same(&found, &expected, &format!("{target} {query:?}"));
        }
    }
}

/// Queries the fixtures' texts answer lexically.
const LEXICAL_QUERIES: [&str; 3] = ["rollback deploy", "vacation days", "lunch refunds"];

#[test]
fn a_format9_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format9.folio");
    assert_eq!(stored_format(&path), 9);
    // A read-only open does not write, so it cannot add the postings.
    assert!(matches!(
        reader_options().read_only(true).open(&path),
        Err(OpenError::UpgradeNeeded { found: 9, .. })
    ));
    let store = reader_options().open(&path).expect("open v9");
    // Format 10 adds each segment's postings, built from the stored texts, and each
    // index's language (`auto`): every answer as before, and lexical answers as BM25 over
    // the texts.
    assert_eq!(answers(&store), recorded_answers(9));
    assert_lexical_answers_match_the_oracle(&store);
    check_fixture_contents(store, 9);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
}

#[test]
fn a_format10_file_is_upgraded_and_answers_as_recorded() {
    let (_dir, path) = copy("format10.folio");
    assert_eq!(stored_format(&path), 10);
    assert!(matches!(
        reader_options().read_only(true).open(&path),
        Err(OpenError::UpgradeNeeded { found: 10, .. })
    ));
    let store = reader_options().open(&path).expect("open v10");
    // Format 11 adds the outbox's two tables, empty: nothing is published, every answer as
    // before.
    assert_eq!(answers(&store), recorded_answers(10));
    assert!(store.outbox().published().expect("marks").is_empty());
    assert!(store
        .outbox()
        .pending(usize::MAX)
        .expect("outbox")
        .is_empty());
    check_fixture_contents(store, 10);
    assert_eq!(stored_format(&path), FORMAT_VERSION);
    // An unpublished index's changes leave no entry.
    let store = reader_options().open(&path).expect("reopen");
    store.set_acl("runbook", ["eng"]).expect("acl");
    assert!(store
        .outbox()
        .pending(usize::MAX)
        .expect("outbox")
        .is_empty());
}

#[test]
fn the_current_format_fixture_reads() {
    let (_dir, path) = copy("format11.folio");
    assert_eq!(stored_format(&path), 11);
    let store = reader_options().open(&path).expect("open v11");
    assert_eq!(answers(&store), recorded_answers(11));
    // Format 11: `default` is published, and moving its alias `prod` left an entry.
    let marks = store.outbox().published().expect("marks");
    assert_eq!(
        marks
            .iter()
            .map(|m| (m.index.as_str(), m.uri.as_str(), m.prefix.as_str()))
            .collect::<Vec<_>>(),
        [("default", "http://127.0.0.1:19530", "folio")]
    );
    let pending = store.outbox().pending(usize::MAX).expect("outbox");
    assert_eq!(
        pending
            .iter()
            .map(|e| (e.seq, e.index.as_deref(), e.change.clone()))
            .collect::<Vec<_>>(),
        [(
            1,
            Some("default"),
            folio::store::Change::Alias {
                alias: "prod".into()
            }
        )]
    );
    assert_lexical_answers_match_the_oracle(&store);
    let faq = store.document("faq").expect("read").expect("stored");
    assert_eq!(faq.metadata, faq_metadata());
    let search = |target: &str, filter: &str| {
        let request = SearchRequest::vector(vec![1.0; 8])
            .access(Access::Unrestricted)
            .target(target)
            .k(100)
            .no_dedup()
            .filter(Filter::parse(filter).expect("filter"));
        let response = store.search(&request).expect("search");
        let ids: std::collections::BTreeSet<String> =
            response.results.into_iter().map(|h| h.doc_id).collect();
        ids.into_iter().collect::<Vec<_>>()
    };
    assert_eq!(
        search("default", "tags contains \"refunds\" and n >= 2"),
        ["faq"]
    );
    assert_eq!(
        search("default", "reviewed < 2024-01-01"),
        Vec::<String>::new()
    );
    assert_eq!(search("default", "not category exists").len(), 3);
    // Version 4 was made before `faq`: no filter finds it there.
    assert_eq!(
        search("default@4", "category = \"billing\""),
        Vec::<String>::new()
    );
    check_fixture_contents(store, 11);
    assert_eq!(stored_format(&path), 11);
}

/// The typed metadata of the format 5 fixture's `faq` document.
fn faq_metadata() -> std::collections::BTreeMap<String, MetadataValue> {
    [
        ("category", MetadataValue::String("billing".into())),
        ("n", MetadataValue::Number(2.5)),
        ("draft", MetadataValue::Bool(false)),
        (
            "reviewed",
            MetadataValue::Date(parse_date("2024-03-01").expect("date")),
        ),
        (
            "tags",
            MetadataValue::List(vec!["refunds".into(), "cards".into()]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// What `regenerate_format9_fixture` (and, for formats 2 to 8, the same function in those
/// builds, without the last batches) wrote.
fn check_fixture_contents(mut store: Store, format: u32) {
    let indexes = store.indexes().list().expect("indexes");
    // Indexes of formats 1 to 6 embed the path as a prefix; the format 7 build gives
    // `default` the new form and every heading level, `small` the old form.
    // (The format 8 build adds `packed`, checked by its names and search below.)
    let forms: Vec<(EmbedForm, usize)> = indexes
        .iter()
        .filter(|i| i.name != "packed" && i.name != "words")
        .map(|i| (i.spec.embed_form, i.spec.heading_depth))
        .collect();
    match format {
        ..7 => assert_eq!(
            forms,
            [(EmbedForm::PathPrefix, 2), (EmbedForm::PathPrefix, 1)]
        ),
        _ => assert_eq!(
            forms,
            [(EmbedForm::Sections, 6), (EmbedForm::PathPrefix, 1)]
        ),
    }
    let names: Vec<(&str, u64, u64)> = indexes
        .iter()
        .map(|i| (i.name.as_str(), i.head, i.serving))
        .collect();
    match format {
        ..4 => assert_eq!(names, [("default", 3, 3), ("small", 2, 1)]),
        4 => assert_eq!(names, [("default", 4, 4), ("small", 3, 1)]),
        5..8 => assert_eq!(names, [("default", 5, 5), ("small", 4, 1)]),
        8..10 => assert_eq!(
            names,
            [("default", 5, 5), ("packed", 1, 1), ("small", 4, 1)]
        ),
        _ => assert_eq!(
            names,
            [
                ("default", 5, 5),
                ("packed", 1, 1),
                ("small", 4, 1),
                ("words", 1, 1)
            ]
        ),
    }
    // Indexes of formats 1 to 9 are analysed in `auto`; the format 10 fixture's `words`
    // in English.
    for index in &indexes {
        let want = match index.name.as_str() {
            "words" => LexicalLanguage::English,
            _ => LexicalLanguage::Auto,
        };
        assert_eq!(index.lexical_language, want, "{}", index.name);
    }
    // Formats 1 to 7 upgrade to resident vectors; the format 8 fixture's `packed` is
    // compressed, with the default re-score width.
    for index in &indexes {
        let want = match index.name.as_str() {
            "packed" => folio::store::VectorStorage::compressed(),
            _ => folio::store::VectorStorage::Resident,
        };
        assert_eq!(index.vectors, want, "{}", index.name);
    }
    let versions = store.versions("default").list().expect("versions");
    assert_eq!(versions[1].tags, ["first"]);
    assert_eq!(versions[2].aliases, ["prod", "split"]);
    assert!(versions[3].change.starts_with("compact 2 segments"));
    assert_eq!(versions[3].segments, 1);
    let aliases = store.aliases().list().expect("aliases");
    assert_eq!(aliases[1].name, "split");
    assert_eq!(aliases[1].routes.len(), 2);
    let log = store.log().entries().expect("log");
    assert_eq!(log.len(), 1);
    // Logged before format 10, or by the fixture's dense search: dense, no reranker.
    assert_eq!(log[0].request.mode, folio::review::LoggedMode::Dense);
    assert_eq!(log[0].request.reranker, None);
    let feedback = log[0].request.feedback.as_ref().expect("feedback");
    assert_eq!(feedback.rating, Some(Rating::Up));
    if format >= 6 {
        assert_eq!(feedback.verdict, Some(Verdict::Correct));
        assert_eq!(
            log[0].request.outcome.session.as_deref(),
            Some("fixture-session")
        );
        assert_eq!(feedback.gold[0].doc_id, "handbook");
    }
    let ids = store.document_ids().expect("ids");
    match format {
        ..4 => assert_eq!(ids, ["handbook", "runbook"]),
        4 => assert_eq!(ids, ["handbook", "lunch", "runbook"]),
        _ => assert_eq!(ids, ["faq", "handbook", "lunch", "runbook"]),
    }
    let packed = if format >= 8 { &["packed"][..] } else { &[] };
    for &target in ["default@1", "default@first", "prod", "default", "small"]
        .iter()
        .chain(packed)
    {
        let (_, score) = self_match(&store, target);
        assert!((score - 1.0).abs() < 1e-4, "{target}: {score}");
    }
    let report = store.check_integrity().expect("check");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

#[test]
fn other_format_versions_are_refused_by_name() {
    let (_dir, path) = copy("format4.folio");
    {
        let db = redb::Database::open(&path).expect("redb open");
        let txn = db.begin_write().expect("write");
        txn.open_table(META)
            .expect("meta")
            .insert("format_version", 99u32.to_le_bytes().as_slice())
            .expect("insert");
        txn.commit().expect("commit");
    }
    let refused = reader_options().open(&path);
    let Err(e) = refused else {
        panic!("a format 99 file was opened")
    };
    assert!(matches!(e, OpenError::UnsupportedFormat { found: 99, .. }));
    let message = e.to_string();
    assert!(
        message.contains("format version 99") && message.contains("versions 1 to 11"),
        "{message}"
    );
    // Nothing was written to the refused file.
    assert_eq!(stored_format(&path), 99);

    // A redb file without a table holds no store (its creation stopped before folio's
    // tables); one with tables of its own is not a store.
    let plain = path.with_file_name("plain.redb");
    drop(redb::Database::create(&plain).expect("plain redb"));
    assert!(matches!(
        reader_options().open(&plain),
        Err(OpenError::NotFound(_))
    ));
    {
        let db = redb::Database::create(&plain).expect("plain redb");
        let txn = db.begin_write().expect("write");
        let other: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("other");
        txn.open_table(other)
            .expect("table")
            .insert(1, 2)
            .expect("insert");
        txn.commit().expect("commit");
    }
    assert!(matches!(
        reader_options().open(&plain),
        Err(OpenError::NotAStore { .. })
    ));
}

/// An upgrade interrupted by a failed write, sync or resize (the Nth, for every N until
/// the open succeeds) leaves a file that opens, as the old format or as the new one, and
/// answers exactly as the fixture did.
#[test]
fn an_interrupted_upgrade_leaves_the_old_or_the_new_file() {
    let mut summary = Vec::new();
    for format in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] {
        let name = format!("format{format}.folio");
        let (_dir, work) = copy(&name);
        let expected = {
            let store = reader_options().open(&work).expect("open");
            live_answers(&recorded_answers(format), &store)
        };
        let (mut failures, mut upgrade_errors, mut left_new) = (0, 0, 0);
        for n in 0.. {
            std::fs::copy(fixture(&name), &work).expect("copy");
            let backend = TestBackend::open(&work);
            let (budget, failed) = (backend.budget.clone(), backend.failed.clone());
            budget.store(n, Ordering::SeqCst);
            let opened = reader_options().open_with_backend(&work, backend);
            let hit = failed.load(Ordering::SeqCst);
            match opened {
                Ok(store) => {
                    assert_eq!(hit, 0, "format {format}: a fault was swallowed");
                    assert_eq!(answers(&store), expected);
                    drop(store);
                    assert_eq!(stored_format(&work), FORMAT_VERSION);
                    break;
                }
                Err(e) => {
                    assert_ne!(hit, 0, "format {format}: open failed without a fault: {e}");
                    if matches!(e, OpenError::Upgrade { .. }) {
                        upgrade_errors += 1;
                    }
                }
            }
            failures += 1;
            let found = stored_format(&work);
            assert!(
                found == format || found == FORMAT_VERSION,
                "format {format}, fault at call {n}: format {found}"
            );
            if found == FORMAT_VERSION {
                left_new += 1;
            }
            let mut reopened = reader_options()
                .open(&work)
                .unwrap_or_else(|e| panic!("format {format}, fault at call {n}: reopen: {e}"));
            assert_eq!(
                answers(&reopened),
                expected,
                "format {format}, fault at call {n}"
            );
            let report = reopened.check_integrity().expect("check");
            assert!(report.is_consistent(), "{:?}", report.problems);
            drop(reopened);
            assert_eq!(stored_format(&work), FORMAT_VERSION);
        }
        assert!(
            upgrade_errors > 0,
            "format {format}: no fault hit the upgrade"
        );
        summary.push(format!(
            "format {format}: {failures} faults, {left_new} left the upgraded file"
        ));
    }
    println!("{}", summary.join(", "));
}

/// Rewrites `tests/fixtures/format11.folio` (then run `record_fixture_answers`); run it when
/// the format changes (and bump `FORMAT_VERSION`, keeping the old fixture, its answers and
/// a test that upgrades or refuses it). The format 2 and 3 builds wrote `format2.folio`
/// and `format3.folio` with the same steps up to the feedback, the format 4 build
/// `format4.folio` up to the revocation, the format 5 build `format5.folio` up to the
/// typed metadata, the format 6 build `format6.folio` up to the annotation (its `small`
/// index, like every index then, in `EmbedForm::PathPrefix`), the format 7 build
/// `format7.folio` up to the compressed index, the format 8 build `format8.folio` up to the
/// compressed index (format 9 added no step: only checksums), the format 9 build
/// `format9.folio` likewise, the format 10 build `format10.folio` up to the `words` index.
#[test]
#[ignore = "writes the fixture"]
fn regenerate_format11_fixture() {
    let path = fixture("format11.folio");
    let _ = std::fs::remove_file(&path);
    let options = Store::builder()
        .create(true)
        .embedder(Arc::new(HashEmbedder::new(8).expect("embedder")))
        .graph(GraphParams {
            min_graph_size: u32::MAX,
            ..GraphParams::default()
        })
        .merge(folio::store::MergePolicy::never())
        .log_requests(true);
    let store = options.clone().open(&path).expect("create");
    let mut batch = store.batch();
    batch.upsert(
        Document::new(
            "runbook",
            SourceFormat::Markdown,
            "# Deploys\n\n## Rollback\n\nRun `release rollback` to undo a bad deploy.\n",
        )
        .with_acl(["eng"]),
    );
    batch.upsert(Document::new(
        "handbook",
        SourceFormat::Markdown,
        "# Handbook\n\n## Vacation\n\nEveryone gets 25 days of paid vacation.\n",
    ));
    batch.upsert(Document::new(
        "lunch",
        SourceFormat::Text,
        "Lunch is at noon.",
    ));
    batch.commit().expect("v1");
    let spec = ChunkSpec {
        child: ChildStrategy::Structure {
            target: 30,
            overlap: 0,
        },
        parent: ParentStrategy::Child,
        heading_depth: 1,
        // Format 7: an index may be created in the form older indexes have.
        embed_form: EmbedForm::PathPrefix,
    };
    store
        .indexes()
        .create("small", config_like_default(&store, spec))
        .expect("small");
    let mut batch = store.batch();
    batch.upsert(Document::new(
        "handbook",
        SourceFormat::Markdown,
        "# Handbook\n\n## Vacation\n\nEveryone gets 30 days of paid vacation.\n",
    ));
    batch.delete("lunch");
    batch.commit().expect("v2");
    store
        .indexes()
        .compact("default")
        .expect("compact")
        .expect("merged");
    store.versions("default").tag(1, "first").expect("tag");
    store
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("prod");
    store
        .aliases()
        .set("split", &[route("default", 1, 50), route("default", 2, 50)])
        .expect("split");
    store.rollback("small", 1).expect("pin");
    let response = store
        .search(&SearchRequest::text("vacation days").target("prod"))
        .expect("search");
    store
        .log()
        .feedback(
            response.request_id.expect("logged"),
            Some(Rating::Up),
            Some("fixture".into()),
        )
        .expect("feedback");
    // Format 4: a revocation and a deleted document upserted again.
    let mut batch = store.batch();
    batch.set_acl("runbook", ["ops"]);
    batch.upsert(Document::new(
        "lunch",
        SourceFormat::Text,
        "Lunch is at one now.",
    ));
    batch.commit().expect("v4");
    // Format 5: typed metadata.
    let mut faq = Document::new(
        "faq",
        SourceFormat::Markdown,
        "# Refunds\n\nCard refunds take five days.\n",
    );
    faq.metadata = faq_metadata();
    let mut batch = store.batch();
    batch.upsert(faq);
    batch.commit().expect("v5");
    // Format 6: what a review attaches to a logged request.
    let mut annotation = folio::store::Annotation::default();
    annotation.session = Some("fixture-session".into());
    annotation.verdict = Some(Verdict::Correct);
    annotation.gold = Some(vec![folio::store::GoldEvidence {
        doc_id: "handbook".into(),
        start_byte: 0,
        end_byte: 10,
    }]);
    store
        .log()
        .annotate(response.request_id.expect("logged"), &annotation)
        .expect("annotate");
    // Format 8: a compressed index (a graph over its one segment, rows left in the file).
    let packed = folio::store::IndexConfig {
        graph: GraphParams {
            min_graph_size: 1,
            ..GraphParams::default()
        },
        vectors: folio::store::VectorStorage::compressed(),
        ..config_like_default(&store, ChunkSpec::default())
    };
    store.indexes().create("packed", packed).expect("packed");
    // Format 10: an index analysed in a language of its own.
    let words = folio::store::IndexConfig {
        lexical: LexicalLanguage::English,
        ..config_like_default(&store, ChunkSpec::default())
    };
    store.indexes().create("words", words).expect("words");
    // Format 11: `default` published, then its alias set again (the same version): an
    // outbox entry, no answer changed.
    store
        .outbox()
        .mark_published("default", "http://127.0.0.1:19530", "folio")
        .expect("mark");
    store
        .aliases()
        .set("prod", &[route("default", 2, 100)])
        .expect("prod again");
    // Reopened without the request log, whose flusher holds the file (weakly) while open.
    drop(store);
    let mut store = options.log_requests(false).open(&path).expect("reopen");
    store.compact_file().expect("compact the file");
}
