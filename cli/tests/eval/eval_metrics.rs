//! `eval::metrics` on tiny hand-made cases whose right numbers are known.

use folio_eval::metrics::*;

const D: &str = "doc";

fn s(start: usize, end: usize) -> Span<'static> {
    Span::new(D, start, end)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn a_span_cut_by_a_boundary_is_no_hit_and_partial() {
    // Gold 40..60 straddles the boundary between units 0..50 and 50..100.
    let gold = [s(40, 60)];
    let ranked = [s(0, 50), s(100, 150)];
    assert!(!hit_at(&ranked, &gold, 5));
    assert_eq!(reciprocal_rank(&ranked, &gold, 10), 0.0);
    assert_eq!(completeness_at(&ranked, &gold, 5), Completeness::Partial);
    assert_eq!(boundary_split_rate(&[s(0, 50), s(50, 100)], &gold), 1.0);
    // Both halves retrieved: no single unit holds it, but the union does.
    let both = [s(0, 50), s(50, 100)];
    assert!(!hit_at(&both, &gold, 5));
    assert_eq!(completeness_at(&both, &gold, 5), Completeness::Full);
    assert!(!every_span_hit_at(&both, &gold, 5));
}

#[test]
fn a_hit_in_second_place_scores_half() {
    let gold = [s(10, 20)];
    let ranked = [s(100, 200), s(0, 50), s(5, 25)];
    assert_eq!(first_hit(&ranked, &gold, 10), Some(1));
    assert!(!hit_at(&ranked, &gold, 1));
    assert!(hit_at(&ranked, &gold, 2));
    assert_eq!(reciprocal_rank(&ranked, &gold, 10), 0.5);
    // Beyond the cut-off the hit does not count.
    assert_eq!(reciprocal_rank(&ranked, &gold, 1), 0.0);
}

#[test]
fn every_span_hit_needs_each_span_whole_in_some_unit() {
    let gold = [s(10, 20), s(300, 320)];
    let ranked = [s(0, 50), s(100, 200), s(290, 330)];
    assert!(!every_span_hit_at(&ranked, &gold, 2));
    assert!(every_span_hit_at(&ranked, &gold, 3));
    assert!(!every_span_hit_at(&ranked, &[], 3));
}

#[test]
fn units_of_another_document_never_hit() {
    let gold = [s(10, 20)];
    let ranked = [Span::new("other", 0, 100)];
    assert!(!hit_at(&ranked, &gold, 5));
    assert_eq!(completeness_at(&ranked, &gold, 5), Completeness::Noise);
    let scores = chroma_scores(&ranked, &gold, 5);
    assert_eq!(
        (scores.recall, scores.precision, scores.iou),
        (0.0, 0.0, 0.0)
    );
}

#[test]
fn an_empty_result_scores_zero_everywhere() {
    let gold = [s(10, 20)];
    assert!(!hit_at(&[], &gold, 5));
    assert_eq!(reciprocal_rank(&[], &gold, 10), 0.0);
    assert_eq!(completeness_at(&[], &gold, 5), Completeness::Noise);
    let scores = chroma_scores(&[], &gold, 5);
    assert_eq!(
        (scores.recall, scores.precision, scores.iou),
        (0.0, 0.0, 0.0)
    );
    assert_eq!(context_utilisation(&[], &gold, 5, |_| Some("")), Ok(0.0));
    // No gold at all: nothing to complete, nothing split.
    assert_eq!(completeness_at(&[s(0, 10)], &[], 5), Completeness::Noise);
    assert_eq!(boundary_split_rate(&[s(0, 10)], &[]), 0.0);
}

#[test]
fn chroma_precision_counts_overlapping_units_twice() {
    // Gold 0..100; units 0..100 and 50..150 overlap on 50..100.
    let gold = [s(0, 100)];
    let ranked = [s(0, 100), s(50, 150)];
    let scores = chroma_scores(&ranked, &gold, 5);
    assert!(close(scores.recall, 1.0));
    assert!(close(scores.precision, 100.0 / 200.0)); // not 100 / 150
    assert!(close(scores.iou, 100.0 / (200.0 + 0.0)));
}

#[test]
fn chroma_scores_follow_the_reference_formulas() {
    // Two gold spans, 10 + 20 = 30 long; units cover 5 of the first and all of the second,
    // and one unit of another document counts in the precision denominator only.
    let gold = [s(0, 10), s(100, 120)];
    let ranked = [s(5, 50), Span::new("other", 0, 40), s(90, 130), s(0, 5)];
    let scores = chroma_scores(&ranked, &gold, 3);
    let (inter, retrieved, unused) = (5.0 + 20.0, 45.0 + 40.0 + 40.0, 5.0);
    assert!(close(scores.recall, inter / 30.0));
    assert!(close(scores.precision, inter / retrieved));
    assert!(close(scores.iou, inter / (retrieved + unused)));
    // k = 4 adds 0..5: full recall.
    assert!(close(chroma_scores(&ranked, &gold, 4).recall, 1.0));
}

#[test]
fn touching_ranges_join_for_coverage_but_do_not_intersect() {
    let gold = [s(10, 20)];
    // Units end exactly where the gold starts / start where it ends.
    let touching = [s(0, 10), s(20, 30)];
    assert_eq!(completeness_at(&touching, &gold, 5), Completeness::Noise);
    assert_eq!(chroma_scores(&touching, &gold, 5).recall, 0.0);
    // Touching units join: 10..15 + 15..20 holds the gold span whole.
    assert_eq!(
        completeness_at(&[s(10, 15), s(15, 20)], &gold, 5),
        Completeness::Full
    );
    // A gold span equal to a unit, or ending at its end, is inside it.
    assert!(hit_at(&[s(10, 20)], &gold, 1));
    assert_eq!(
        boundary_split_rate(&[s(0, 20), s(20, 40)], &[s(10, 20), s(20, 25)]),
        0.0
    );
}

#[test]
fn precision_omega_counts_touching_chunks_like_the_benchmark() {
    // Chunks tile 0..300 by 100; gold 120..180 lies in the second chunk only.
    let chunks = [s(0, 100), s(100, 200), s(200, 300)];
    let inside = precision_omega(&chunks, &[s(120, 180)]);
    assert_eq!(inside.highlighted_chunks, 1);
    assert!(close(inside.score, 60.0 / 100.0));
    // Gold 100..200 equals the second chunk but touches both neighbours, which the
    // benchmark's intersection test (`max(start) <= min(end)`) counts as highlighted.
    let touching = precision_omega(&chunks, &[s(100, 200)]);
    assert_eq!(touching.highlighted_chunks, 3);
    assert!(close(touching.score, 100.0 / 300.0));
    // Evidence no chunk covers enters the denominator.
    let uncovered = precision_omega(&[s(0, 100)], &[s(50, 150)]);
    assert!(close(uncovered.score, 50.0 / 150.0));
}

#[test]
fn multi_byte_text_in_bytes_and_in_code_points() {
    // "梵語的發展" = 5 Han characters of 3 bytes; "café" has one 2-byte character.
    let text = "梵語的發展。café au lait";
    let offsets = CharOffsets::new(text);
    let gold_bytes = s(0, 15); // 梵語的發展
    let unit_bytes = s(6, 23); // 的發展。café
    assert_eq!(&text[unit_bytes.start..unit_bytes.end], "的發展。café");
    let bytes = chroma_scores(&[unit_bytes], &[gold_bytes], 5);
    assert!(close(bytes.recall, 9.0 / 15.0));
    assert!(close(bytes.precision, 9.0 / 17.0));

    let gold_chars = offsets.to_chars(gold_bytes).unwrap();
    let unit_chars = offsets.to_chars(unit_bytes).unwrap();
    assert_eq!((gold_chars.start, gold_chars.end), (0, 5));
    assert_eq!((unit_chars.start, unit_chars.end), (2, 10));
    let chars = chroma_scores(&[unit_chars], &[gold_chars], 5);
    assert!(close(chars.recall, 3.0 / 5.0));
    assert!(close(chars.precision, 3.0 / 8.0));

    // Offsets inside a character or past the end do not map.
    assert_eq!(offsets.char_index(1), None);
    assert_eq!(offsets.char_index(text.len()), Some(text.chars().count()));
    assert_eq!(offsets.char_index(text.len() + 1), None);
    assert_eq!(CharOffsets::new("plain").char_index(3), Some(3));
}

#[test]
fn context_utilisation_counts_tokens_inside_gold() {
    let text = "Hotels: 180 EUR per night. Taxis are fine.";
    // Gold = "180 EUR per night" (bytes 8..25); unit = the first sentence, 0..26, whose
    // tokens are: Hotels : 180 EUR per night . → 4 of 7 inside the gold span.
    let gold = [s(8, 25)];
    let unit = [s(0, 26)];
    let share = context_utilisation(&unit, &gold, 5, |_| Some(text)).unwrap();
    assert!(close(share, 4.0 / 7.0));
    // The same unit twice counts twice: the share is unchanged, the reader pays twice.
    let twice = context_utilisation(&[s(0, 26), s(0, 26)], &gold, 5, |_| Some(text)).unwrap();
    assert!(close(twice, 4.0 / 7.0));
    // Chinese: one token per character; gold 梵語 of unit 梵語的.
    let zh = "梵語的發展";
    let share = context_utilisation(&[s(0, 9)], &[s(0, 6)], 5, |_| Some(zh)).unwrap();
    assert!(close(share, 2.0 / 3.0));
}

#[test]
fn context_utilisation_reports_bad_input() {
    let gold = [s(0, 3)];
    assert_eq!(
        context_utilisation(&[s(0, 3)], &gold, 5, |_| None),
        Err(MetricError::UnknownDocument("doc".into()))
    );
    let err = context_utilisation(&[s(1, 3)], &gold, 5, |_| Some("梵語")).unwrap_err();
    assert_eq!(
        err,
        MetricError::BadRange {
            doc_id: "doc".into(),
            start: 1,
            end: 3
        }
    );
}

#[test]
fn boundary_split_rate_checks_every_span_against_whole_chunk_lists() {
    let chunks = [s(0, 100), s(100, 200), Span::new("b", 0, 50), s(150, 260)];
    let gold = [
        s(10, 90),              // inside 0..100
        s(90, 110),             // cut at 100
        s(180, 250),            // inside the overlapping 150..260
        Span::new("b", 40, 60), // past the end of b's only chunk
        Span::new("c", 0, 1),   // a document without chunks
    ];
    assert!(close(boundary_split_rate(&chunks, &gold), 3.0 / 5.0));
}

#[test]
fn percentiles_interpolate_between_ranks() {
    let latencies = [5.0, 1.0, 4.0, 2.0, 3.0];
    assert_eq!(percentile(&latencies, 50.0), Some(3.0));
    assert_eq!(percentile(&latencies, 0.0), Some(1.0));
    assert_eq!(percentile(&latencies, 100.0), Some(5.0));
    assert!(close(percentile(&latencies, 95.0).unwrap(), 4.8));
    assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
    assert_eq!(percentile(&[], 50.0), None);
    assert_eq!(percentile(&latencies, 101.0), None);
}
