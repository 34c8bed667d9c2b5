//! Grouping children into reading units (issue 29, item 3): searches per second for `k` 10
//! and 20 parents over documents of 8 to 16 children in one parent each, each document on
//! one theme, so that a unit holds about 12 children, several of them among a query's
//! best, and the first gathering (`max(4k, 20)` children) holds fewer than `k` parents:
//! the search has to gather more. Two stores: 300 documents (about 3,600
//! children, below the graph threshold: exact scans) and 1,000 (about 12,000 children,
//! an HNSW graph). Run on a commit and on another with the same file to compare them
//! (`docs/benchmarks/grouping.md`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use folio::chunk::{ChildPiece, Chunked, ParentPiece, SourceFormat, Span};
use folio::document::Document;
use folio::query::{Expand, SearchRequest};
use folio::store::Store;

/// 64 words: 32 themes of 2.
const WORDS: &[&str] = &[
    "deploy",
    "rollback",
    "release",
    "canary",
    "budget",
    "invoice",
    "refund",
    "salary",
    "hotel",
    "travel",
    "flight",
    "visa",
    "kernel",
    "driver",
    "patch",
    "module",
    "laptop",
    "printer",
    "badge",
    "monitor",
    "incident",
    "outage",
    "pager",
    "postmortem",
    "cluster",
    "node",
    "shard",
    "replica",
    "backup",
    "snapshot",
    "restore",
    "archive",
    "office",
    "desk",
    "parking",
    "kitchen",
    "network",
    "latency",
    "router",
    "firewall",
    "storage",
    "quota",
    "volume",
    "disk",
    "ticket",
    "queue",
    "escalation",
    "triage",
    "review",
    "approval",
    "manager",
    "policy",
    "contract",
    "vendor",
    "license",
    "audit",
    "vacation",
    "holiday",
    "leave",
    "benefit",
    "report",
    "metric",
    "dashboard",
    "alert",
];

/// A small deterministic generator (64-bit LCG), so both commits index the same store.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

/// Document `i`: 8 to 16 sentences, one child each, all in one parent. A document is on
/// one theme (two words), some wholly, others in passing: each of its sentences holds as
/// many theme words as the document's density (1 to 6) says, among as many other words as
/// its filler (2 to 5) says. So a document's children score alike for a query, and a
/// query's best children gather in the few documents dense in its theme (as in a real
/// corpus), many per parent.
fn document(i: usize, rng: &mut Lcg) -> (Document, Chunked) {
    let theme = rng.next(WORDS.len() / 2) * 2;
    let density = 1 + rng.next(6);
    let filler = 2 + rng.next(4);
    let children = 8 + rng.next(9);
    let mut text = String::new();
    let mut spans = Vec::new();
    for _ in 0..children {
        if !text.is_empty() {
            text.push(' ');
        }
        let start = text.len();
        let mut words: Vec<&str> = (0..filler).map(|_| WORDS[rng.next(WORDS.len())]).collect();
        for _ in 0..density {
            let at = rng.next(words.len() + 1);
            words.insert(at, WORDS[theme + rng.next(2)]);
        }
        text.push_str(&words.join(" "));
        text.push('.');
        spans.push(Span {
            start,
            end: text.len(),
        });
    }
    let chunked = Chunked {
        parents: vec![ParentPiece {
            span: Span {
                start: 0,
                end: text.len(),
            },
            section_path: Vec::new(),
        }],
        children: spans
            .into_iter()
            .map(|span| ChildPiece {
                span,
                parent: 0,
                section_path: Vec::new(),
                oversized: false,
            })
            .collect(),
    };
    (
        Document::new(format!("doc{i}"), SourceFormat::Text, text),
        chunked,
    )
}

fn store(docs: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("s.folio"))
        .expect("create store");
    let mut rng = Lcg(7);
    let mut batch = store.batch();
    for i in 0..docs {
        let (doc, chunked) = document(i, &mut rng);
        batch.upsert_chunked(doc, chunked);
    }
    batch.commit().expect("commit");
    (dir, store)
}

/// The two words of a theme.
fn queries() -> Vec<String> {
    let mut rng = Lcg(11);
    (0..32)
        .map(|_| {
            let theme = rng.next(WORDS.len() / 2) * 2;
            format!("{} {}", WORDS[theme], WORDS[theme + 1])
        })
        .collect()
}

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn grouping(c: &mut Criterion) {
    for (label, docs) in [("300_docs", 300), ("1000_docs", 1_000)] {
        let (_dir, store) = store(docs);
        let mut group = c.benchmark_group(format!("grouping/{label}"));
        group.throughput(Throughput::Elements(1));
        group.sample_size(30);
        for k in [10, 20] {
            // With near-duplicate removal (the default) and without: the removal compares
            // each unit's text with the accepted ones', which costs as much as the rest.
            for dedup in [true, false] {
                let requests: Vec<SearchRequest> = queries()
                    .into_iter()
                    .map(|q| {
                        let request = SearchRequest::text(q).k(k).expand(Expand::Parent);
                        if dedup {
                            request
                        } else {
                            request.no_dedup()
                        }
                    })
                    .collect();
                let name = format!("k{k}{}", if dedup { "" } else { "_no_dedup" });
                // What the searches gather and answer (a digest of the units' ids and
                // scores, to compare two commits' answers).
                let (mut gathered, mut units, mut digest) = (0, 0, Fnv::default());
                for request in &requests {
                    let response = store.search(request).expect("search");
                    gathered += response.stats.children_gathered;
                    units += response.results.len();
                    for hit in &response.results {
                        digest.add(hit.parent_id.as_bytes());
                        digest.add(&hit.score.to_le_bytes());
                    }
                }
                eprintln!(
                    "grouping/{label}/{name}: {:.1} children gathered, {:.1} units a search, \
                     answers {:016x}",
                    gathered as f64 / requests.len() as f64,
                    units as f64 / requests.len() as f64,
                    digest.0
                );
                let mut next = requests.iter().cycle();
                group.bench_function(name, |b| {
                    b.iter(|| store.search(black_box(next.next().unwrap())).unwrap())
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, grouping);
criterion_main!(benches);
