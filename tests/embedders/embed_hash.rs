//! Properties of the built-in hashing embedder through its public API.

use folio::embed::{Embedder, HashEmbedder};
use proptest::prelude::*;

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any text gives a finite unit vector, bit-identical alone and inside a batch.
    #[test]
    fn any_text_gives_the_same_unit_vector_in_any_batch(
        texts in prop::collection::vec("\\PC{0,80}", 1..6),
    ) {
        let e = HashEmbedder::new(64).expect("64 is a valid dimension");
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = e.embed(&refs).expect("hash embedding cannot fail");
        for (text, row) in refs.iter().zip(batch.chunks(64)) {
            prop_assert!(row.iter().all(|x| x.is_finite()));
            prop_assert!((norm(row) - 1.0).abs() < 1e-4);
            prop_assert_eq!(e.embed(&[text]).expect("hash embedding cannot fail"), row.to_vec());
        }
    }
}

#[test]
fn an_empty_batch_is_empty() {
    assert!(HashEmbedder::default()
        .embed(&[])
        .expect("hash embedding cannot fail")
        .is_empty());
}

#[test]
fn the_query_finds_its_passage_among_distractors() {
    let e = HashEmbedder::default();
    let passages = [
        "Full-time employees get 28 days of paid vacation per calendar year.",
        "Roll back to the previous release with nwctl rollback.",
        "The hotel limit per night is 240 EUR in tier 1 cities.",
        "梵語是印歐語系的一種古老語言，研究梵語的發展可以考察吠陀文獻。",
    ];
    let queries = [
        "vacation days per year",
        "how do I roll back a deploy",
        "hotel limit per night",
        "梵語的發展",
    ];
    let p = e.embed(&passages).expect("hash embedding cannot fail");
    let q = e.embed(&queries).expect("hash embedding cannot fail");
    let dim = e.dimension();
    for (i, qv) in q.chunks(dim).enumerate() {
        let scores: Vec<f32> = p
            .chunks(dim)
            .map(|pv| pv.iter().zip(qv).map(|(a, b)| a * b).sum())
            .collect();
        let best = (0..scores.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        assert_eq!(best, Some(i), "{}: {scores:?}", queries[i]);
    }
}
