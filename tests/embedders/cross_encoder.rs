//! The in-process cross-encoders (`CrossEncoder`, feature `models`) against an independent
//! numpy reference: `scripts/fixtures/cross_encoder_reference.py` writes tiny random BERT and
//! XLM-RoBERTa sequence-classification folders from a fixed seed, its own WordPiece token ids
//! for a few (query, text) pairs and their logits computed in float64 from the architectures'
//! definitions. The script runs at test time with the Python of `target/test-models/venv`
//! (numpy, and onnx for the ONNX graph, pinned and installed by `scripts/ci/test_models.sh`);
//! these tests FAIL when it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use folio::embed::{CrossEncoder, EmbedError, Reranker};
use serde_json::Value;

/// f32 against the float64 reference, over two small layers: rounding alone separates them.
const TOLERANCE: f32 = 1e-4;

/// The fixture's folder, written once per test process.
pub(crate) fn reference_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = root.join("target/test-models/venv/bin/python3");
        assert!(
            python.is_file(),
            "no Python at {}: run scripts/ci/test_models.sh",
            python.display()
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new(&python)
            .arg(root.join("scripts/fixtures/cross_encoder_reference.py"))
            .arg("--out")
            .arg(dir.path())
            .arg("--onnx")
            .status()
            .expect("run the reference script");
        assert!(
            status.success(),
            "scripts/fixtures/cross_encoder_reference.py failed ({status}): its numpy and onnx \
             come from scripts/ci/test_models.sh"
        );
        dir
    })
    .path()
}

fn reference() -> Value {
    let text = std::fs::read_to_string(reference_dir().join("reference.json")).expect("read");
    serde_json::from_str(&text).expect("parse")
}

/// The reference's pairs, grouped by query in the order given.
fn pairs(reference: &Value) -> Vec<(String, String)> {
    reference["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect()
}

/// Scores every pair one call per pair, then all texts of one query in one call (batched
/// together, sorted by length), and compares both with `model`'s reference logits.
pub(crate) fn check_logits(encoder: &dyn Reranker, model: &str) {
    let reference = reference();
    let want: Vec<f32> = reference[model]["logits"]
        .as_array()
        .expect("logits")
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    let pairs = pairs(&reference);
    for ((query, text), want) in pairs.iter().zip(&want) {
        let got = encoder.score(query, &[text]).expect("score")[0];
        assert!(
            (got - want).abs() < TOLERANCE,
            "{model}: ({query:?}, {text:?}): {got} against {want}"
        );
    }
    // One query over every text: batches mix lengths and pad, and the order comes back.
    let texts: Vec<&str> = pairs.iter().map(|(_, t)| t.as_str()).collect();
    let query = &pairs[0].0;
    let batched = encoder.score(query, &texts).expect("score");
    for (i, text) in texts.iter().enumerate() {
        let alone = encoder.score(query, &[text]).expect("score")[0];
        assert!(
            (batched[i] - alone).abs() < TOLERANCE,
            "{model}: text {i} batched {} alone {alone}",
            batched[i]
        );
    }
    // Different texts, different scores: the scores are not one constant.
    assert!(batched.iter().any(|s| (s - batched[0]).abs() > 0.01));
}

#[test]
fn bert_logits_equal_the_numpy_reference() {
    let encoder = CrossEncoder::load(&reference_dir().join("bert")).expect("load");
    assert_eq!(encoder.name(), "bert:bert");
    // The tokenizer's own limit, below the 64 positions.
    assert_eq!(encoder.max_input_tokens(), 24);
    check_logits(&encoder, "bert");
}

#[test]
fn xlm_roberta_logits_equal_the_numpy_reference() {
    let encoder = CrossEncoder::load(&reference_dir().join("xlmr")).expect("load");
    // 26 positions, counted from padding_idx + 1 = 2.
    assert_eq!(encoder.max_input_tokens(), 24);
    check_logits(&encoder, "xlmr");
}

#[test]
fn a_query_longer_than_the_model_reads_is_cut_too() {
    let encoder = CrossEncoder::load(&reference_dir().join("bert")).expect("load");
    let query = "the quick brown fox ".repeat(20);
    let scores = encoder
        .score(&query, &["the cat sat on the mat", "rain"])
        .expect("score");
    assert_eq!(scores.len(), 2);
    assert!(scores.iter().all(|s| s.is_finite()), "{scores:?}");
    assert!(encoder.score("cat", &[]).expect("no texts").is_empty());
}

/// A copy of the BERT folder with `config.json` edited by `edit`.
fn edited_copy(edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let source = reference_dir().join("bert");
    let dir = tempfile::tempdir().expect("temp dir");
    for file in ["tokenizer.json", "model.safetensors"] {
        std::fs::copy(source.join(file), dir.path().join(file)).expect("copy");
    }
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(source.join("config.json")).unwrap())
            .unwrap();
    edit(&mut config);
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    dir
}

#[test]
fn heads_with_more_than_one_label_and_other_families_are_refused() {
    let two_labels = edited_copy(|c| {
        c["id2label"] = serde_json::json!({"0": "no", "1": "yes"});
    });
    let err = CrossEncoder::load(two_labels.path())
        .err()
        .expect("refused");
    assert!(
        matches!(&err, EmbedError::Model { reason, .. } if reason.contains("2 labels")),
        "{err}"
    );
    let other = edited_copy(|c| c["model_type"] = "distilbert".into());
    let err = CrossEncoder::load(other.path()).err().expect("refused");
    assert!(
        matches!(&err, EmbedError::Model { reason, .. } if reason.contains("distilbert")),
        "{err}"
    );
    let missing = CrossEncoder::load(&reference_dir().join("nothing")).err();
    assert!(
        matches!(missing, Some(EmbedError::Model { .. })),
        "{missing:?}"
    );
}

/// The same BERT exported to ONNX by the reference script, run by onnxruntime. Called by
/// `onnx_embedder.rs`'s test once onnxruntime is loaded (once per process, in order).
#[cfg(feature = "onnx")]
pub(crate) fn onnx_logits_equal_the_numpy_reference() {
    let dir = reference_dir().join("bert");
    let encoder = CrossEncoder::load_onnx(&dir.join("model.onnx"), &dir).expect("load");
    assert_eq!(encoder.name(), "onnx:bert");
    check_logits(&encoder, "bert");
}

/// `--rerank bert:DIR` builds the same cross-encoder, and a search reorders its units by
/// the model's logits, which its hits carry.
#[test]
fn the_bert_spec_reranks_a_search_by_the_models_logits() {
    use folio::embed::RerankerSpec;
    use folio::query::{Rerank, SearchRequest};
    use folio_testkit::versions::{doc, small_options, temp_store};

    let dir = reference_dir().join("bert");
    let spec: RerankerSpec = format!("bert:{}", dir.display()).parse().expect("spec");
    let reranker = spec.build().expect("build");
    let direct = CrossEncoder::load(&dir).expect("load");
    let texts = ["the cat sat on the mat", "rain falls on the plain", "a cat"];
    assert_eq!(
        reranker.score("cat", &texts).expect("score"),
        direct.score("cat", &texts).expect("score")
    );

    let (_dir, store) = temp_store(small_options());
    let mut batch = store.batch();
    for (i, text) in texts.iter().enumerate() {
        batch.upsert(doc(&format!("d{i}"), text));
    }
    batch.commit().expect("commit");
    let response = store
        .search(
            &SearchRequest::text("cat")
                .k(3)
                .rerank(Rerank::new(reranker)),
        )
        .expect("search");
    let logits: Vec<f32> = response
        .results
        .iter()
        .map(|hit| direct.score("cat", &[&hit.text]).expect("score")[0])
        .collect();
    let carried: Vec<Option<f32>> = response.results.iter().map(|h| h.scores.rerank).collect();
    assert_eq!(response.results.len(), 3);
    assert!(logits.windows(2).all(|w| w[0] >= w[1]), "{logits:?}");
    for (carried, logit) in carried.iter().zip(&logits) {
        assert!((carried.expect("a rerank score") - logit).abs() < TOLERANCE);
    }
    assert_eq!(response.reranker.as_deref(), Some("bert:bert"));
}
