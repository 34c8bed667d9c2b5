//! `Graph::decode` on arbitrary bytes, with arbitrary vectors, must return `Err` or a
//! graph that is safe to search over those vectors and re-encodes to the same bytes.
//!
//! The vectors are dummies of the shape the blob's header claims (when it is small
//! enough), so decoding reaches the length, list and code checks; the first input byte
//! sometimes bends that shape, so the refusal of mismatched vectors is exercised too.

#![no_main]

use folio::index::{search, Graph, GraphDecodeError, Metric, VectorSet};
use libfuzzer_sys::fuzz_target;
use roaring::RoaringBitmap;

/// Skip inputs whose dummy vectors would need more floats than this.
const MAX_FLOATS: usize = 1 << 20;

/// The `u32` LE at `at`, if the input is that long (the header layout of `Graph::encode`).
fn word(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fuzz_target!(|data: &[u8]| {
    let metric = match word(data, 8) {
        Some(1) => Metric::Dot,
        Some(2) => Metric::L2,
        _ => Metric::Cosine,
    };
    let mut dim = word(data, 12).unwrap_or(1).max(1) as usize;
    let mut n = word(data, 16).unwrap_or(0) as usize;
    // Bend the shape on some inputs: the decoder must refuse vectors that do not fit.
    let bend = data.last().copied().unwrap_or(0) % 8;
    match bend {
        1 => n = n.saturating_add(1),
        2 => n = n.saturating_sub(1),
        3 => dim = dim.saturating_add(1),
        _ => {}
    }
    if n.saturating_mul(dim) > MAX_FLOATS {
        return;
    }
    let floats: Vec<f32> = (0..n * dim).map(|i| (i % 13) as f32 - 6.0).collect();
    let Ok(vectors) = VectorSet::new(&floats, dim, metric) else {
        return;
    };
    let graph = match Graph::decode(data, vectors) {
        Ok(graph) => graph,
        Err(GraphDecodeError::Vectors(_)) => {
            // Only a bent shape can be refused: the header's own shape always fits.
            assert!(matches!(bend, 1..=3));
            return;
        }
        Err(_) => return,
    };
    assert_eq!((graph.len(), graph.dim(), graph.metric()), (n, dim, metric));
    // Byte-wise: NaN quantiser parameters make `Graph: PartialEq` false on equal graphs.
    let bytes = graph.encode();
    assert_eq!(
        Graph::decode(&bytes, vectors).map(|g| g.encode()).as_ref(),
        Ok(&bytes)
    );
    let query = vec![0.5; dim];
    let visible_sets: [RoaringBitmap; 3] = [
        (0..n as u32).collect(),
        (0..n as u32).step_by(3).collect(),
        (0..n as u32).step_by(50).collect(),
    ];
    for visible in &visible_sets {
        for k in [1, 10] {
            let (hits, _) = search(vectors, Some(&graph), 0, &query, k, Some(16), visible);
            assert_eq!(hits.len(), k.min(visible.len() as usize));
            assert!(hits.iter().all(|h| visible.contains(h.id)));
        }
    }
});
