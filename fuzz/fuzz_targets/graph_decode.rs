//! `Graph::decode` on arbitrary bytes must return `Err` or a graph that is safe to search
//! and re-encodes to the same bytes.

#![no_main]

use folio::index::{search, Graph, VectorSet};
use libfuzzer_sys::fuzz_target;
use roaring::RoaringBitmap;

/// Skip searches whose dummy vectors would need more floats than this.
const MAX_FLOATS: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(graph) = Graph::decode(data) else {
        return;
    };
    // Byte-wise: NaN quantiser parameters make `Graph: PartialEq` false on equal graphs.
    let bytes = graph.encode();
    assert_eq!(
        Graph::decode(&bytes).map(|g| g.encode()).as_ref(),
        Ok(&bytes)
    );
    let (n, dim) = (graph.len(), graph.dim());
    if n.saturating_mul(dim) > MAX_FLOATS {
        return;
    }
    let floats: Vec<f32> = (0..n * dim).map(|i| (i % 13) as f32 - 6.0).collect();
    let Ok(vectors) = VectorSet::new(&floats, dim, graph.metric()) else {
        return;
    };
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
