//! Filters pushed down: 4,000 one-child documents, each of three principals seeing 40 (hidden
//! rows outnumber visible ones 100 to 1), published as an exact FLAT collection. For every
//! filter, remote answers are the local exact ones, filled to min(k, visible); a filter
//! Milvus evaluates exactly takes one Milvus search and no row hidden by folio, one it
//! cannot is reported and topped up. Then deletes not synced (the live mask: still one
//! search), and a grant not synced (a short answer, marked with its reason, until `sync`).

use crate::common;
use crate::remote::{flat, shape};

use folio::filter::{parse_date, Filter, MetadataValue};
use folio::store::NoProgress;
use folio::{Document, SearchRequest, SourceFormat, Store};
use folio_milvus::{Remote, ShortReason};

const DOCS: usize = 4_000;
const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
const DAY_MS: i64 = 86_400_000;
const WORDS: [&str; 16] = [
    "invoices",
    "refunds",
    "travel",
    "hotels",
    "passwords",
    "badges",
    "backups",
    "servers",
    "audits",
    "budgets",
    "laptops",
    "printers",
    "contracts",
    "vendors",
    "salary",
    "pension",
];

/// Document `i`: seen by `PRINCIPALS[i % 100]` when that is one of them, else by `staff`;
/// its metadata varies with `i / 100`, so each principal's 40 documents cover every value.
fn document(i: usize) -> Document {
    let j = i / 100;
    let acl = match PRINCIPALS.get(i % 100) {
        Some(p) => vec![*p],
        None => vec!["staff"],
    };
    // Words of their own per document, so no two answers tie on score.
    let mut seed = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let words: Vec<&str> = (0..12)
        .map(|_| {
            seed ^= seed >> 29;
            seed = seed.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            seed ^= seed >> 32;
            WORDS[(seed % WORDS.len() as u64) as usize]
        })
        .collect();
    let text = format!(
        "Note {i} for the {} team: {}.\n",
        ["red", "blue", "green"][j % 3],
        words.join(" ")
    );
    let mut doc = Document::new(format!("doc-{i}"), SourceFormat::Markdown, text)
        .with_acl(acl)
        .with_metadata(
            "team",
            MetadataValue::String(["red", "blue", "green"][j % 3].into()),
        )
        .with_metadata("n", MetadataValue::Number((j % 25) as f64))
        .with_metadata("flag", MetadataValue::Bool(j.is_multiple_of(4)))
        .with_metadata(
            "tags",
            MetadataValue::List(if j.is_multiple_of(5) {
                vec!["faq".into()]
            } else {
                vec!["howto".into(), "x".into()]
            }),
        )
        .with_metadata(
            "due",
            MetadataValue::Date(parse_date("2024-01-01").unwrap() + j as i64 * DAY_MS),
        );
    if j.is_multiple_of(2) {
        doc = doc.with_metadata("reviewed", MetadataValue::Bool(true));
    }
    doc.title = format!("Note {i}");
    doc
}

/// Filters, and whether Milvus evaluates each exactly (else folio checks part of it).
const FILTERS: [(&str, bool); 11] = [
    (r#"team = "red""#, true),
    (r#"team != "red""#, true),
    ("n >= 5 and n < 20", true),
    (r#"team in ["red", "blue"] or flag = true"#, true),
    (r#"not team = "green" and tags = "faq""#, true),
    ("reviewed exists", true),
    ("not reviewed exists", true),
    (r#"due = "2024-01-05""#, true),
    (
        r#"doc_id in ["doc-100", "doc-201", "doc-302"] or title ^= "Note 5""#,
        true,
    ),
    ("due >= 2024-01-20", false),
    ("not due < 2024-01-10 and flag = false", false),
];

#[test]
fn filtered_remote_answers_are_the_local_ones_filled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.folio");
    let store = Store::builder().create(true).open(&path).unwrap();
    let mut batch = store.batch();
    for i in 0..DOCS {
        batch.upsert(document(i));
    }
    let v1 = batch.commit().unwrap().versions["default"];
    let server = common::LiteServer::start();
    let remote = Remote::connect(&server.uri()).unwrap();
    remote
        .publish(&store, &format!("default@{v1}"), &flat(), &NoProgress)
        .unwrap();

    let query = "invoices and refunds for the red team";
    for (text, exact) in FILTERS {
        let filter: Filter = text.parse().unwrap();
        for principal in PRINCIPALS {
            let request = |k| {
                SearchRequest::text(query)
                    .as_principals([principal])
                    .filter(filter.clone())
                    .k(k)
                    .no_dedup()
            };
            let matching = store.search(&request(DOCS)).unwrap().results.len();
            assert!(
                (1..=40).contains(&matching),
                "{text} as {principal}: {matching}"
            );
            for k in [5, 100] {
                let local = store.search(&request(k)).unwrap();
                let (through, calls) = remote.search(&store, &request(k), "folio").unwrap();
                let case = format!("{text} as {principal} at k={k}: {calls:?}");
                assert_eq!(shape(&through), shape(&local), "{case}");
                assert_eq!(through.results.len(), k.min(matching), "{case}");
                assert_eq!(calls.short, None, "{case}");
                assert_eq!(calls.local_filter.is_empty(), exact, "{case}");
                if exact {
                    // Milvus filled top-k from the rows folio shows: nothing to top up.
                    assert_eq!((calls.searches, calls.hidden), (1, 0), "{case}");
                }
            }
        }
    }

    // The command pushes `--where` down, and names what folio checked alone.
    let printed = cli(
        &path,
        &server.uri(),
        "alice",
        &["--where", "due >= 2024-01-20 and team = \"red\""],
    );
    assert!(
        printed.contains(
            "filter checked by folio alone (not pushed to Milvus): metadata.\"due\" >= 2024-01-20"
        ),
        "{printed}"
    );
    assert!(!printed.contains("short"), "{printed}");
    let printed = cli(
        &path,
        &server.uri(),
        "alice",
        &["--where", "team = \"red\"", "--json"],
    );
    let json: serde_json::Value = serde_json::from_str(&printed).unwrap();
    assert!(json.get("filter_checked_locally").is_none(), "{json}");
    assert!(
        json["results"].as_array().is_some_and(|r| !r.is_empty()),
        "{json}"
    );

    // Deletes not synced: v2 is served by v1's collection, whose rows of the deleted
    // documents the expression excludes, so they cost no top-up.
    let mut batch = store.batch();
    for i in [0, 100, 200, 300, 400, 500] {
        batch.delete(&format!("doc-{i}"));
    }
    let v2 = batch.commit().unwrap().versions["default"];
    assert!(v2 > v1);
    // Every unit alice may see asked for: without the mask, rows of the deleted ones would
    // come back and be hidden by folio.
    let request = SearchRequest::text(query)
        .as_principals(["alice"])
        .k(40)
        .no_dedup();
    let local = store.search(&request).unwrap();
    let (through, calls) = remote.search(&store, &request, "folio").unwrap();
    assert_eq!(shape(&through), shape(&local));
    assert_eq!(through.version, v2);
    assert_eq!(through.results.len(), 34);
    assert_eq!(
        (calls.masked, calls.searches, calls.hidden),
        (6, 1, 0),
        "{calls:?}"
    );

    // A grant not synced: the store shows dave two documents, Milvus none yet.
    let mut batch = store.batch();
    batch.set_acl("doc-3", ["dave"]);
    batch.set_acl("doc-4", ["dave"]);
    batch.commit().unwrap();
    let request = SearchRequest::text(query)
        .as_principals(["dave"])
        .k(5)
        .no_dedup();
    let (through, calls) = remote.search(&store, &request, "folio").unwrap();
    assert!(through.results.is_empty());
    let short = calls.short.expect("the answer is marked short");
    assert_eq!(
        (short.reason, short.found, short.visible),
        (ShortReason::NotSynced, 0, 2)
    );
    assert!(short.to_string().contains("folio milvus sync"), "{short}");
    let printed = cli(&path, &server.uri(), "dave", &[]);
    assert!(printed.contains("short: 0 of"), "{printed}");
    let json: serde_json::Value =
        serde_json::from_str(&cli(&path, &server.uri(), "dave", &["--json"])).unwrap();
    assert_eq!(json["short"]["reason"], "not_synced", "{json}");

    remote.sync(&store, "folio", 512).unwrap();
    let local = store.search(&request).unwrap();
    let (through, calls) = remote.search(&store, &request, "folio").unwrap();
    assert_eq!(shape(&through), shape(&local));
    assert_eq!(through.results.len(), 2);
    assert_eq!(calls.short, None);
    let json: serde_json::Value =
        serde_json::from_str(&cli(&path, &server.uri(), "dave", &["--json"])).unwrap();
    assert!(json.get("short").is_none(), "{json}");
    assert_eq!(json["results"].as_array().map(Vec::len), Some(2));
}

/// `folio-milvus search` as `principal`, with `extra` arguments.
fn cli(store: &std::path::Path, uri: &str, principal: &str, extra: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_folio-milvus"))
        .arg("search")
        .arg(store)
        .args([
            "invoices and refunds for the red team",
            "--as",
            principal,
            "--milvus",
            uri,
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}
