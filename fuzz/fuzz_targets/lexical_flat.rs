//! `LexicalSegment::from_flat_bytes` (the checks a mapped shared postings file passes) on
//! arbitrary bytes must return `Err` or a segment that is safe to search: every hit
//! visible, best first, scores finite and positive, at most `k` of them, and the search
//! ends. What it accepts lays out to bytes accepted as the same segment, and encodes to
//! the store's postings layout.
//! The queries use words a seed corpus of valid layouts would hold, so searches over what
//! is accepted score real postings.

#![no_main]

use folio::index::lexical::search;
use folio::index::{Analyzer, CorpusStats, LexicalLanguage, LexicalSegment, Neighbor};
use libfuzzer_sys::fuzz_target;
use roaring::RoaringBitmap;

const QUERIES: [&str; 3] = ["apple", "run banana cherry", "北京大学 apple date"];

fuzz_target!(|data: &[u8]| {
    let Ok(segment) = LexicalSegment::from_flat_bytes(data) else {
        return;
    };
    let again = segment.to_flat_bytes();
    let reread = LexicalSegment::from_flat_bytes(&again).map(|s| s.to_flat_bytes());
    assert!(reread.is_ok_and(|bytes| bytes == again));
    let _ = segment.to_bytes();
    let analyzer = Analyzer::new(LexicalLanguage::Auto);
    let all = segment.children().clone();
    let some: RoaringBitmap = all.iter().step_by(2).collect();
    let stats = CorpusStats::of_live(&[&segment], &all);
    for visible in [&all, &some] {
        for query in QUERIES {
            for k in [1, 5, 1000] {
                let hits = search(&[&segment], query, &analyzer, visible, &stats, k);
                assert!(hits.len() <= k);
                assert!(hits.iter().all(|h| visible.contains(h.id)));
                assert!(hits.iter().all(|h| h.score.is_finite() && h.score > 0.0));
                assert!(hits.windows(2).all(|w| Neighbor::beats(&w[0], &w[1])));
            }
        }
    }
});
