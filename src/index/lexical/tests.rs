//! BM25 search against a brute-force oracle that scores every visible child from its
//! analysed text with the definitions of the folder's documentation.

use std::collections::BTreeSet;

use proptest::prelude::*;
use roaring::RoaringBitmap;

use super::*;
use crate::index::Neighbor;

/// Few words, so terms repeat: stop words, stems of one another, a Han compound.
const VOCABULARY: [&str; 12] = [
    "the",
    "run",
    "running",
    "runner",
    "apple",
    "apples",
    "banana",
    "cherry",
    "date",
    "of",
    "北京大学",
    "学习",
];

/// A corpus: segments of (child number, text).
type Corpus = Vec<Vec<(u32, String)>>;

fn built(corpus: &Corpus, analyzer: &Analyzer) -> Vec<LexicalSegment> {
    corpus
        .iter()
        .map(|children| {
            let texts = children.iter().map(|(child, text)| (*child, text.as_str()));
            LexicalSegment::build(texts, analyzer).unwrap()
        })
        .collect()
}

/// BM25 of every visible child holding a query term, straight from the texts, sorted.
fn oracle(
    corpus: &Corpus,
    analyzer: &Analyzer,
    query: &str,
    visible: &RoaringBitmap,
    average_length: f64,
) -> Vec<Neighbor> {
    let query: BTreeSet<String> = analyzer.terms(query).into_iter().collect();
    let seen: Vec<(u32, Vec<String>)> = corpus
        .iter()
        .flatten()
        .filter(|(child, _)| visible.contains(*child))
        .map(|(child, text)| (*child, analyzer.terms(text)))
        .collect();
    let n = seen.len() as f64;
    let mut hits: Vec<Neighbor> = seen
        .iter()
        .filter(|(_, terms)| terms.iter().any(|t| query.contains(t)))
        .map(|(child, terms)| {
            let mut score = 0.0f64;
            for term in &query {
                let tf = terms.iter().filter(|t| *t == term).count();
                if tf == 0 {
                    continue;
                }
                let df = seen.iter().filter(|(_, ts)| ts.contains(term)).count() as f64;
                let idf = ((n - df + 0.5) / (df + 0.5)).ln_1p();
                let tf = tf as f64;
                let norm = 1.0 - B + B * terms.len() as f64 / average_length;
                score += idf * (tf * (K1 + 1.0)) / (tf + K1 * norm);
            }
            Neighbor {
                id: *child,
                score: score as f32,
            }
        })
        .collect();
    hits.sort_by(Neighbor::rank);
    hits
}

/// A corpus of 1 to 4 segments of up to 30 children each, child numbers ascending with
/// gaps (so a segment's children are not always contiguous, and now and then spread so
/// wide that positions are found by rank), texts of up to 10 words.
fn corpus() -> impl Strategy<Value = Corpus> {
    corpus_sized(1..4, 0..30)
}

/// As [`corpus`], with `segments` segments of `children` children each.
fn corpus_sized(
    segments: std::ops::Range<usize>,
    children: std::ops::Range<usize>,
) -> impl Strategy<Value = Corpus> {
    let text = prop::collection::vec(prop::sample::select(&VOCABULARY[..]), 0..10)
        .prop_map(|words| words.join(" "));
    let gap = prop_oneof![8 => 1u32..4, 1 => 70_000u32..200_000];
    let child = (gap, text);
    prop::collection::vec(prop::collection::vec(child, children), segments).prop_map(|segments| {
        let mut next = 0u32;
        segments
            .into_iter()
            .map(|children| {
                children
                    .into_iter()
                    .map(|(gap, text)| {
                        next += gap;
                        (next, text)
                    })
                    .collect()
            })
            .collect()
    })
}

/// The children of `corpus` picked by `mask`, or none, or every one (and a number no
/// segment holds).
fn visible_set(corpus: &Corpus, mask: &[bool], shape: u8) -> RoaringBitmap {
    let all = corpus.iter().flatten().map(|(child, _)| *child);
    match shape {
        0 => RoaringBitmap::new(),
        1 => all.chain([u32::MAX]).collect(),
        _ => all
            .zip(mask.iter().cycle())
            .filter_map(|(child, &keep)| keep.then_some(child))
            .collect(),
    }
}

fn language() -> impl Strategy<Value = LexicalLanguage> {
    prop::sample::select(vec![
        LexicalLanguage::English,
        LexicalLanguage::Plain,
        LexicalLanguage::Auto,
    ])
}

/// Searches `corpus` as the properties draw it and compares with the oracle: the same
/// children in the same order, scores within rounding, only visible ones.
fn check_against_oracle(
    corpus: &Corpus,
    language: LexicalLanguage,
    mask: &[bool],
    live_mask: &[bool],
    shape: u8,
    query: &[&str],
    k: usize,
) -> Result<(), TestCaseError> {
    let analyzer = Analyzer::new(language);
    let segments = built(corpus, &analyzer);
    let segments: Vec<&LexicalSegment> = segments.iter().collect();
    let visible = visible_set(corpus, mask, shape);
    // The version's live children: visible ones and some the caller cannot see.
    let live = &visible | &visible_set(corpus, live_mask, 2);
    let stats = CorpusStats::of_live(&segments, &live);
    let lengths: Vec<usize> = corpus
        .iter()
        .flatten()
        .filter(|(child, _)| live.contains(*child))
        .map(|(_, text)| analyzer.terms(text).len())
        .collect();
    let expected_average = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
    if expected_average > 0.0 {
        prop_assert_eq!(stats.average_length(), expected_average);
    }
    let query = query.join(" ");
    let found = search(&segments, &query, &analyzer, &visible, &stats, k);
    let all = oracle(corpus, &analyzer, &query, &visible, stats.average_length());
    prop_assert_eq!(found.len(), k.min(all.len()));
    for (hit, want) in found.iter().zip(&all) {
        prop_assert_eq!(hit.id, want.id, "found {:?}, oracle {:?}", found, all);
        let tolerance = 1e-5 * want.score.abs();
        prop_assert!((hit.score - want.score).abs() <= tolerance);
        prop_assert!(visible.contains(hit.id));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn search_is_the_oracles_top_k(
        corpus in corpus(),
        language in language(),
        mask in prop::collection::vec(any::<bool>(), 1..20),
        live_mask in prop::collection::vec(any::<bool>(), 1..20),
        shape in 0u8..5,
        query in prop::collection::vec(prop::sample::select(&VOCABULARY[..]), 0..5),
        // Small k fills the top list early, so MaxScore skips and probes.
        k in prop_oneof![1usize..4, 0usize..40],
    ) {
        check_against_oracle(&corpus, language, &mask, &live_mask, shape, &query, k)?;
    }

    /// Children the caller cannot see change no score: the same search over segments
    /// built from the visible children alone gives the same hits, bit for bit.
    #[test]
    fn hidden_children_do_not_move_scores(
        corpus in corpus(),
        mask in prop::collection::vec(any::<bool>(), 1..20),
        query in prop::collection::vec(prop::sample::select(&VOCABULARY[..]), 1..5),
    ) {
        let analyzer = Analyzer::new(LexicalLanguage::English);
        let visible = visible_set(&corpus, &mask, 2);
        let seen: Corpus = corpus
            .iter()
            .map(|children| {
                children.iter().filter(|(c, _)| visible.contains(*c)).cloned().collect()
            })
            .collect();
        let stats = CorpusStats::new(3.5);
        let query = query.join(" ");
        let mut results = [&corpus, &seen].map(|corpus| {
            let segments = built(corpus, &analyzer);
            let segments: Vec<&LexicalSegment> = segments.iter().collect();
            search(&segments, &query, &analyzer, &visible, &stats, 50)
        });
        let [whole, alone] = &mut results;
        prop_assert_eq!(whole, alone);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Segments of hundreds of children: a frequent term's postings span several blocks,
    /// so the walk jumps blocks whose bounds cannot enter and seeks across them.
    #[test]
    fn search_across_blocks_is_the_oracles_top_k(
        corpus in corpus_sized(1..3, 150..400),
        mask in prop::collection::vec(any::<bool>(), 1..20),
        live_mask in prop::collection::vec(any::<bool>(), 1..20),
        shape in 0u8..5,
        query in prop::collection::vec(prop::sample::select(&VOCABULARY[..]), 1..4),
        k in 1usize..12,
    ) {
        check_against_oracle(&corpus, LexicalLanguage::English, &mask, &live_mask, shape, &query, k)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Segments read in place from their flat layout equal the decoded ones and answer
    /// every query exactly as they do, whatever the visible set: one search over either
    /// form.
    #[test]
    fn mapped_postings_answer_as_owned_ones(
        corpus in prop_oneof![3 => corpus(), 1 => corpus_sized(1..3, 100..300)],
        language in language(),
        mask in prop::collection::vec(any::<bool>(), 1..20),
        shape in 0u8..5,
        queries in prop::collection::vec(
            prop::collection::vec(prop::sample::select(&VOCABULARY[..]), 1..5),
            1..6,
        ),
        k in prop_oneof![1usize..4, 0usize..40],
    ) {
        let analyzer = Analyzer::new(language);
        let owned = built(&corpus, &analyzer);
        let mapped: Vec<LexicalSegment> = owned
            .iter()
            .map(|segment| LexicalSegment::from_flat_bytes(&segment.to_flat_bytes()).unwrap())
            .collect();
        prop_assert!(mapped.iter().all(LexicalSegment::is_mapped));
        prop_assert!(!owned.iter().any(LexicalSegment::is_mapped));
        prop_assert_eq!(&mapped, &owned);
        let owned: Vec<&LexicalSegment> = owned.iter().collect();
        let mapped: Vec<&LexicalSegment> = mapped.iter().collect();
        let visible = visible_set(&corpus, &mask, shape);
        let stats = CorpusStats::of_live(&mapped, &visible);
        prop_assert_eq!(stats, CorpusStats::of_live(&owned, &visible));
        for query in queries {
            let query = query.join(" ");
            let want = search(&owned, &query, &analyzer, &visible, &stats, k);
            let got = search(&mapped, &query, &analyzer, &visible, &stats, k);
            prop_assert_eq!(got, want);
        }
    }
}

#[test]
fn duplicate_children_are_refused() {
    let analyzer = Analyzer::new(LexicalLanguage::Plain);
    let built = LexicalSegment::build([(4, "a"), (2, "b"), (4, "c")], &analyzer);
    assert_eq!(built, Err(LexicalBuildError::DuplicateChild(4)));
}

#[test]
fn a_term_repeated_in_the_query_counts_once() {
    let analyzer = Analyzer::new(LexicalLanguage::Plain);
    let texts = [
        (0, "apple banana"),
        (1, "banana banana cherry"),
        (2, "cherry"),
    ];
    let segment = LexicalSegment::build(texts, &analyzer).unwrap();
    let visible: RoaringBitmap = (0..3).collect();
    let stats = CorpusStats::of_live(&[&segment], &visible);
    let once = search(&[&segment], "banana", &analyzer, &visible, &stats, 10);
    let twice = search(
        &[&segment],
        "banana BANANA",
        &analyzer,
        &visible,
        &stats,
        10,
    );
    assert_eq!(once.len(), 2);
    assert_eq!(once, twice);
}

#[test]
fn degenerate_statistics_keep_scores_finite() {
    for average in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(CorpusStats::new(average).average_length(), 1.0);
    }
    let analyzer = Analyzer::new(LexicalLanguage::Plain);
    let segment = LexicalSegment::build([(7, "apple apple"), (8, "")], &analyzer).unwrap();
    let visible: RoaringBitmap = [7, 8].into_iter().collect();
    // No live child: the mean length falls back to 1.
    let stats = CorpusStats::of_live(&[&segment], &RoaringBitmap::new());
    let hits = search(&[&segment], "apple", &analyzer, &visible, &stats, 5);
    assert_eq!(hits.len(), 1);
    assert!(hits[0].score.is_finite() && hits[0].score > 0.0);
}
