//! folio's lexical (BM25) leg beside tantivy on one corpus, and hybrid search beside dense
//! alone: the figures of `docs/benchmarks/lexical.md`.
//!
//! ```text
//! folio-lexical-peers corpus REGISTRY_SRC OUT     # OUT/corpus.jsonl, OUT/queries.jsonl
//! folio-lexical-peers run OUT WORK MODEL_DIR      # the tables (WORK: indexes, emptied)
//! folio-lexical-peers core OUT WORK               # folio's core beside tantivy only
//! ```

mod corpus;
mod mine;
mod peer;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio::embed::{BertEmbedder, Embedder, HashEmbedder, Truncation};
use folio::index::lexical::{search, Analyzer, CorpusStats, LexicalLanguage, LexicalSegment};
use folio::query::{Hybrid, SearchMode, SearchRequest, StageTimes};
use folio::store::{Access, Store};
use roaring::RoaringBitmap;

use corpus::{Chunk, Query, SplitMix64};

type Failure = Box<dyn std::error::Error>;

/// Results per query.
const K: usize = 10;
/// The principal every chunk is shared with, and those of 10% and 1% of the chunks.
const LEVELS: [(&str, &str); 3] = [("100%", "all"), ("10%", "p10"), ("1%", "p1")];
/// Seeds the draw of each chunk's ACL.
const ACL_SEED: u64 = 0xAC1;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [command, root, out] if command == "corpus" => {
            let (files, chunks, queries) = corpus::make(Path::new(root), Path::new(out))?;
            println!("{files} files, {chunks} chunks, {queries} queries");
            Ok(())
        }
        [command, out, work, model] if command == "run" => {
            bench(Path::new(out), Path::new(work), Some(Path::new(model)))
        }
        [command, out, work] if command == "core" => bench(Path::new(out), Path::new(work), None),
        _ => Err("usage: folio-lexical-peers corpus REGISTRY_SRC OUT | run OUT WORK MODEL_DIR | core OUT WORK".into()),
    }
}

/// Each chunk's ACL: every chunk is shared with `all`; one in ten (drawn) with `p10`,
/// and one in a hundred (among those) with `p1`.
fn acls(count: usize) -> Vec<Vec<&'static str>> {
    let mut random = SplitMix64(ACL_SEED);
    (0..count)
        .map(|_| {
            let bucket = random.below(100);
            let mut acl = vec!["all"];
            if bucket < 10 {
                acl.push("p10");
            }
            if bucket == 0 {
                acl.push("p1");
            }
            acl
        })
        .collect()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The `q` quantile of `samples` (sorted here), nearest rank.
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    let at = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples.get(at).copied().unwrap_or_default()
}

/// Passes over the queries measured per search path (after one pass to warm caches); the
/// median pass is reported.
const PASSES: usize = 7;

/// A search path's queries per second and its answers, one per query.
type Measured<T> = (f64, Vec<T>);

/// One pass of `search` over every query: its queries per second and answers.
fn pass<T>(
    queries: &[Query],
    search: &mut impl FnMut(&str) -> Result<T, Failure>,
) -> Result<Measured<T>, Failure> {
    let started = Instant::now();
    let answers = queries
        .iter()
        .map(|query| search(&query.query))
        .collect::<Result<Vec<T>, Failure>>()?;
    Ok((
        queries.len() as f64 / started.elapsed().as_secs_f64(),
        answers,
    ))
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Queries per second of `search` (the median of [`PASSES`] passes) and its answers.
fn timed<T>(
    queries: &[Query],
    mut search: impl FnMut(&str) -> Result<T, Failure>,
) -> Result<Measured<T>, Failure> {
    let (_, answers) = pass(queries, &mut search)?;
    let rates = (0..PASSES)
        .map(|_| pass(queries, &mut search).map(|(rate, _)| rate))
        .collect::<Result<Vec<f64>, Failure>>()?;
    Ok((median(rates), answers))
}

/// As [`timed`] for two search paths, their passes alternating (the first path
/// alternating too), so the load of a shared machine falls on both alike.
fn duel<A, B>(
    queries: &[Query],
    mut first: impl FnMut(&str) -> Result<A, Failure>,
    mut second: impl FnMut(&str) -> Result<B, Failure>,
) -> Result<(Measured<A>, Measured<B>), Failure> {
    let (_, first_answers) = pass(queries, &mut first)?;
    let (_, second_answers) = pass(queries, &mut second)?;
    let (mut first_rates, mut second_rates) = (Vec::new(), Vec::new());
    for round in 0..PASSES {
        if round % 2 == 0 {
            first_rates.push(pass(queries, &mut first)?.0);
            second_rates.push(pass(queries, &mut second)?.0);
        } else {
            second_rates.push(pass(queries, &mut second)?.0);
            first_rates.push(pass(queries, &mut first)?.0);
        }
    }
    Ok((
        (median(first_rates), first_answers),
        (median(second_rates), second_answers),
    ))
}

/// Mean share of tantivy's top 10 that folio's top 10 holds, over queries tantivy answers.
fn overlap(folio: &[Vec<u32>], tantivy: &[Vec<u32>]) -> (f64, usize) {
    let shares: Vec<f64> = folio
        .iter()
        .zip(tantivy)
        .filter(|(_, theirs)| !theirs.is_empty())
        .map(|(ours, theirs)| {
            let shared = theirs.iter().filter(|id| ours.contains(id)).count();
            shared as f64 / theirs.len() as f64
        })
        .collect();
    (
        shares.iter().sum::<f64>() / shares.len().max(1) as f64,
        shares.len(),
    )
}

/// The tables; without `model`, only folio's core beside tantivy.
fn bench(out: &Path, work: &Path, model: Option<&Path>) -> Result<(), Failure> {
    let chunks: Vec<Chunk> = corpus::read_lines(&out.join("corpus.jsonl"))?;
    let queries: Vec<Query> = corpus::read_lines(&out.join("queries.jsonl"))?;
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work.join("tantivy"))?;
    let acls = acls(chunks.len());
    println!(
        "corpus: {} chunks, {} queries\n",
        chunks.len(),
        queries.len()
    );

    // folio's core: one segment of every chunk (child number = chunk id).
    let analyzer = Analyzer::new(LexicalLanguage::Auto);
    let started = Instant::now();
    let segment = LexicalSegment::build(chunks.iter().map(|c| (c.id, c.text.as_str())), &analyzer)?;
    let folio_build = started.elapsed();
    let started = Instant::now();
    let folio_bytes = segment.to_bytes();
    let folio_encode = started.elapsed();
    let started = Instant::now();
    let decoded = LexicalSegment::from_bytes(&folio_bytes)?;
    let folio_decode = started.elapsed();
    if decoded != segment {
        return Err("the segment's bytes do not decode to it".into());
    }
    let stats = CorpusStats::of_live(&[&segment], segment.children());
    let visible_sets: BTreeMap<&str, RoaringBitmap> = LEVELS
        .iter()
        .map(|&(_, principal)| {
            let set = chunks
                .iter()
                .zip(&acls)
                .filter(|(_, acl)| acl.contains(&principal))
                .map(|(c, _)| c.id)
                .collect();
            (principal, set)
        })
        .collect();

    let peer = peer::Peer::build(&work.join("tantivy"), &chunks, &acls)?;
    if peer.segments() != 1 {
        return Err(format!("tantivy wrote {} segments, not one", peer.segments()).into());
    }
    println!("| build (one thread) | seconds | bytes |");
    println!("|---|---:|---:|");
    println!(
        "| folio `LexicalSegment::build` | {:.2} | {} |",
        folio_build.as_secs_f64(),
        folio_bytes.len()
    );
    println!(
        "| folio `to_bytes` / `from_bytes` | {:.3} / {:.3} | |",
        folio_encode.as_secs_f64(),
        folio_decode.as_secs_f64()
    );
    println!(
        "| tantivy (index and commit) | {:.2} | {} |\n",
        peer.build.as_secs_f64(),
        peer.bytes
    );

    println!("| visible | tantivy QPS | folio core QPS | top-10 overlap with tantivy |");
    println!("|---|---:|---:|---:|");
    let mut core_answers = Vec::new();
    for (label, principal) in LEVELS {
        let visible = &visible_sets[principal];
        let filter = (principal != "all").then_some(principal);
        let searcher = peer.searcher();
        let mut tantivy_analyzer = peer.analyzer();
        let ((tantivy_qps, theirs), (core_qps, ours)) = duel(
            &queries,
            |q| {
                let query = peer.query(&mut tantivy_analyzer, q, filter);
                Ok(peer.top10(&searcher, query.as_ref())?)
            },
            |q| {
                let hits = search(&[&segment], q, &analyzer, visible, &stats, K);
                Ok(hits.into_iter().map(|hit| hit.id).collect::<Vec<u32>>())
            },
        )?;
        let (shared, answered) = overlap(&ours, &theirs);
        println!(
            "| {label} ({} chunks) | {tantivy_qps:.0} | {core_qps:.0} | {shared:.3} ({answered} queries) |",
            visible.len(),
        );
        core_answers.push(ours);
    }
    let Some(model) = model else { return Ok(()) };

    // The store: each chunk a one-chunk document with its ACL; vectors given (the hash
    // embedder's, 384 dimensions), queries embedded by MiniLM.
    let minilm: Arc<dyn Embedder> = Arc::new(BertEmbedder::load(model)?);
    let cache = Arc::new(mine::QueryCache::new(minilm.clone()));
    let stand_in = HashEmbedder::new(minilm.dimension())?;
    let path = work.join("folio.folio");
    let store = Store::builder()
        .create(true)
        .embedder(cache.clone())
        .truncation(Truncation::Warn)
        .open(&path)?;
    let started = Instant::now();
    let mut batch = store.batch();
    for (slice, slice_acls) in chunks.chunks(4096).zip(acls.chunks(4096)) {
        let texts: Vec<&str> = slice.iter().map(|c| c.text.as_str()).collect();
        let rows = stand_in.embed(&texts)?;
        for ((chunk, acl), row) in slice
            .iter()
            .zip(slice_acls)
            .zip(rows.chunks(minilm.dimension()))
        {
            let (doc, chunked) = mine::document(chunk.id, &chunk.text, acl);
            let vectors = BTreeMap::from([("default".to_string(), row.to_vec())]);
            batch.upsert_prepared(doc, Some(chunked), vectors);
        }
    }
    batch.commit()?;
    let ingest = started.elapsed();
    let lexical = |query: &str, principal: &str| {
        SearchRequest::text(query)
            .mode(SearchMode::Lexical)
            .as_principals([principal])
            .k(K)
    };
    let started = Instant::now();
    store.search(&lexical("warm", "all"))?;
    let postings_through_store = started.elapsed();
    println!(
        "store: ingest {:.1} s (stand-in vectors given, graph and postings included), {} bytes; first lexical search {:.2} s (the writing handle keeps the postings it stored)\n",
        ingest.as_secs_f64(),
        mine::file_bytes(&path),
        postings_through_store.as_secs_f64()
    );

    println!("| visible | folio `Snapshot::search_lexical` QPS | folio `Store::search` lexical QPS | `Store::search` top 10 = core's |");
    println!("|---|---:|---:|---:|");
    for ((label, principal), ours) in LEVELS.into_iter().zip(&core_answers) {
        let snapshot = store.snapshot()?;
        let (_, view) = snapshot.resolve("default")?;
        let store_visible =
            snapshot.visible(&view, &Access::Principals(vec![principal.to_string()]))?;
        let (snapshot_qps, _) = timed(&queries, |q| {
            Ok(snapshot.search_lexical(&view, q, &store_visible, K)?)
        })?;
        drop(snapshot);
        let (store_qps, through_store) = timed(&queries, |q| {
            let mut request = lexical(q, principal);
            request.dedup = None;
            let response = store.search(&request)?;
            Ok(response
                .results
                .iter()
                .filter_map(|hit| mine::chunk_of(&hit.doc_id))
                .collect::<Vec<u32>>())
        })?;
        let same = ours
            .iter()
            .zip(&through_store)
            .filter(|(a, b)| a == b)
            .count();
        println!(
            "| {label} | {snapshot_qps:.0} | {store_qps:.0} | {same}/{} |",
            queries.len()
        );
    }

    // Hybrid beside dense through `Store::search`, as the principal seeing everything.
    let texts: Vec<String> = queries.iter().map(|q| q.query.clone()).collect();
    cache.fill(&texts)?;
    println!("\n| query vector | mode | p50 ms | p95 ms | / dense (p50, p95) |");
    println!("|---|---|---:|---:|---:|");
    let mut breakdowns = Vec::new();
    for (given, label) in [
        (false, "embedded by MiniLM per query"),
        (true, "given (embedded beforehand)"),
    ] {
        cache.serve_cached.store(given, Ordering::Relaxed);
        let modes = modes_named();
        let request = |q: &str, mode: SearchMode| {
            SearchRequest::text(q)
                .mode(mode)
                .as_principals(["all"])
                .k(K)
        };
        for query in queries.iter().take(50) {
            for (_, mode) in modes {
                store.search(&request(&query.query, mode))?;
            }
        }
        // Each query in every mode, one after the other (the first mode rotating), so the
        // load of a shared machine falls on all alike.
        let mut latencies = modes.map(|_| Vec::new());
        let mut stages = modes.map(|_| Vec::new());
        for (at, query) in queries.iter().enumerate() {
            for turn in 0..modes.len() {
                let which = (at + turn) % modes.len();
                let started = Instant::now();
                let response = store.search(&request(&query.query, modes[which].1))?;
                latencies[which].push(started.elapsed());
                stages[which].push(response.stats.stage_micros);
            }
        }
        let quantiles = latencies
            .map(|mut samples| (quantile(&mut samples, 0.5), quantile(&mut samples, 0.95)));
        let dense = quantiles[0];
        for ((name, _), (p50, p95)) in modes.iter().zip(quantiles) {
            let ratio = if *name == "dense" {
                String::new()
            } else {
                format!(
                    "{:.2}x, {:.2}x",
                    p50.as_secs_f64() / dense.0.as_secs_f64(),
                    p95.as_secs_f64() / dense.1.as_secs_f64()
                )
            };
            println!(
                "| {label} | {name} | {:.2} | {:.2} | {ratio} |",
                millis(p50),
                millis(p95)
            );
        }
        breakdowns.push((label, stages));
    }
    // Where the time went: each stage's median over the 1,000 queries.
    println!("\n| query vector | mode | embed | dense | lexical | fuse | assemble (µs, p50) |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (label, stages) in breakdowns {
        for ((name, _), times) in modes_named().into_iter().zip(stages) {
            let p50 = |of: fn(&StageTimes) -> u64| {
                let mut values: Vec<u64> = times.iter().map(of).collect();
                values.sort_unstable();
                values[values.len() / 2]
            };
            println!(
                "| {label} | {name} | {} | {} | {} | {} | {} |",
                p50(|t| t.embed),
                p50(|t| t.dense),
                p50(|t| t.lexical),
                p50(|t| t.fuse),
                p50(|t| t.assemble)
            );
        }
    }
    Ok(())
}

/// The two modes the hybrid table compares, named.
fn modes_named() -> [(&'static str, SearchMode); 3] {
    // The depth the default had before it was measured here.
    let deep = Hybrid {
        dense_depth: 100,
        lexical_depth: 100,
        ..Hybrid::default()
    };
    [
        ("dense", SearchMode::Dense),
        ("hybrid (default)", SearchMode::Hybrid(Hybrid::default())),
        ("hybrid, legs 100 deep", SearchMode::Hybrid(deep)),
    ]
}
