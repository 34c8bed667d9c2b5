//! Properties of the vector index against the exact oracle: filtered searches never return
//! hidden ids and are always filled, the exact scan equals brute force, recall holds at
//! default settings, and graph blobs round-trip and reject corruption without panicking.

use std::sync::OnceLock;

use folio::index::distance::score;
use folio::index::{
    exact_search, exact_search_all, merge_top_k, search, search_with, Graph, HnswParams, Metric,
    Neighbor, RowError, RowSource, SearchOptions, SearchPath, SegmentIndex, Strategy as Plan,
    VectorSet,
};
use folio_testkit::vectors::{Blobs, Rng};
use proptest::prelude::*;
use roaring::RoaringBitmap;

/// `n` points of dimension `dim` in `clusters` Gaussian blobs; returns data and labels.
fn clustered(seed: u64, n: usize, dim: usize, clusters: usize) -> (Vec<f32>, Vec<usize>) {
    Blobs::new(seed, dim, clusters, 4.0).take(n)
}

/// Brute force: score everything visible, sort, cut.
fn naive(
    vectors: VectorSet<'_>,
    base: u32,
    q: &[f32],
    k: usize,
    visible: &RoaringBitmap,
) -> Vec<Neighbor> {
    let mut all: Vec<Neighbor> = (0..vectors.len() as u32)
        .filter(|&i| visible.contains(base + i))
        .map(|i| Neighbor {
            id: base + i,
            score: score(vectors.metric(), q, vectors.row(i)),
        })
        .collect();
    all.sort_by(Neighbor::rank);
    all.truncate(k);
    all
}

fn recall(got: &[Neighbor], truth: &[Neighbor]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let hits = got
        .iter()
        .filter(|g| truth.iter().any(|t| t.id == g.id))
        .count();
    hits as f64 / truth.len() as f64
}

/// How a test picks the visible ids of a segment `base..base + n`.
#[derive(Debug, Clone)]
enum Visibility {
    Empty,
    All,
    /// A few ids, some outside the segment.
    Tiny(Vec<u32>),
    /// Each id with probability `p`.
    Random {
        p: f64,
        seed: u64,
    },
    /// Whole clusters, in order, until a fraction `p` is visible.
    Clusters {
        p: f64,
    },
}

impl Visibility {
    fn bitmap(&self, base: u32, n: usize, labels: &[usize]) -> RoaringBitmap {
        let ids = base..base + n as u32;
        match self {
            Visibility::Empty => RoaringBitmap::new(),
            Visibility::All => ids.collect(),
            Visibility::Tiny(ids) => ids.iter().map(|&i| base.saturating_sub(2) + i).collect(),
            Visibility::Random { p, seed } => {
                let mut rng = Rng(*seed);
                ids.filter(|_| f64::from(rng.unit()) < *p).collect()
            }
            Visibility::Clusters { p } => {
                let quota = (p * n as f64) as usize;
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&i| labels[i]);
                order
                    .into_iter()
                    .take(quota)
                    .map(|i| base + i as u32)
                    .collect()
            }
        }
    }
}

fn visibility() -> impl Strategy<Value = Visibility> {
    prop_oneof![
        Just(Visibility::Empty),
        Just(Visibility::All),
        prop::collection::vec(0u32..40, 0..5).prop_map(Visibility::Tiny),
        (0.0f64..1.0, any::<u64>()).prop_map(|(p, seed)| Visibility::Random { p, seed }),
        (0.0f64..0.3, any::<u64>()).prop_map(|(p, seed)| Visibility::Random { p, seed }),
        (0.0f64..1.0).prop_map(|p| Visibility::Clusters { p }),
    ]
}

fn metric() -> impl Strategy<Value = Metric> {
    prop_oneof![Just(Metric::Cosine), Just(Metric::Dot), Just(Metric::L2)]
}

fn plan() -> impl Strategy<Value = Plan> {
    prop_oneof![
        Just(Plan::Auto),
        Just(Plan::Exact),
        Just(Plan::Graph),
        Just(Plan::GraphTwoHop)
    ]
}

/// A segment large enough for the planner to use the graph: 3000 points, 24-d, 30
/// clusters, base 10_000, built once.
struct Fixture {
    base: u32,
    dim: usize,
    labels: Vec<usize>,
    segment: SegmentIndex,
    queries: Vec<Vec<f32>>,
}

const FIXTURE_N: usize = 3000;

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (dim, base) = (24, 10_000);
        let (data, labels) = clustered(42, FIXTURE_N, dim, 30);
        let mut segment = SegmentIndex::new(base, dim, Metric::L2, data).unwrap();
        segment.build_graph(HnswParams::default(), &|_| {});
        // Queries near data points: dataset rows plus noise.
        let mut rng = Rng(7);
        let vectors = segment.vectors();
        let queries = (0..100)
            .map(|_| {
                let row = vectors.row((rng.next() % FIXTURE_N as u64) as u32);
                row.iter().map(|x| x + rng.gauss() * 0.5).collect()
            })
            .collect();
        Fixture {
            base,
            dim,
            labels,
            segment,
            queries,
        }
    })
}

/// The fixture's segment without its rows in memory.
fn compressed() -> &'static SegmentIndex {
    static COMPRESSED: OnceLock<SegmentIndex> = OnceLock::new();
    COMPRESSED.get_or_init(|| {
        let segment = fixture().segment.clone().without_rows();
        assert!(!segment.is_resident());
        segment
    })
}

/// Rows as a compressed segment reads them from its store, here from memory.
struct Rows<'a>(VectorSet<'a>);

impl RowSource for Rows<'_> {
    fn read(&self, ids: &[u32], out: &mut Vec<f32>) -> Result<(), RowError> {
        for &id in ids {
            out.extend_from_slice(self.0.row(id));
        }
        Ok(())
    }
}

/// The planner's contract for one search.
fn check_search(
    got: &[Neighbor],
    vectors: VectorSet<'_>,
    base: u32,
    q: &[f32],
    k: usize,
    visible: &RoaringBitmap,
) {
    let in_segment = visible.range_cardinality(base..base + vectors.len() as u32) as usize;
    assert_eq!(got.len(), k.min(in_segment), "results not filled");
    for hit in got {
        assert!(visible.contains(hit.id), "hidden id {} returned", hit.id);
        assert!(
            (base..base + vectors.len() as u32).contains(&hit.id),
            "id {} outside segment",
            hit.id
        );
        let want = score(vectors.metric(), q, vectors.row(hit.id - base));
        assert_eq!(hit.score, want, "score of {} is not its true score", hit.id);
    }
    assert!(
        got.windows(2).all(|w| w[0].beats(&w[1])),
        "results not in rank order"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn exact_scan_equals_brute_force(
        seed in any::<u64>(), n in 0usize..300, dim in 1usize..20, metric in metric(),
        base in 0u32..1000, k in 0usize..40, vis in visibility(),
    ) {
        let (data, labels) = clustered(seed, n, dim, 5);
        let vectors = VectorSet::new(&data, dim, metric).unwrap();
        let visible = vis.bitmap(base, n, &labels);
        let q: Vec<f32> = clustered(seed ^ 1, 1, dim, 5).0;
        prop_assert_eq!(exact_search(vectors, base, &q, k, &visible), naive(vectors, base, &q, k, &visible));
        let all: RoaringBitmap = (base..base + n as u32).collect();
        prop_assert_eq!(exact_search_all(vectors, base, &q, k), naive(vectors, base, &q, k, &all));
    }

    #[test]
    fn small_segments_are_filled_and_never_leak(
        seed in any::<u64>(), n in 1usize..400, dim in 1usize..16, metric in metric(),
        k in 0usize..30, ef in prop::option::of(1usize..100), vis in visibility(), strategy in plan(),
    ) {
        let (data, labels) = clustered(seed, n, dim, 4);
        let mut segment = SegmentIndex::new(500, dim, metric, data).unwrap();
        segment.build_graph(HnswParams { m: 4 + (seed % 13) as usize, ef_construction: 40, seed }, &|_| {});
        let visible = vis.bitmap(500, n, &labels);
        let q = clustered(seed ^ 9, 1, dim, 4).0;
        let options = SearchOptions { k, ef, strategy };
        let (got, report) = search_with(segment.vectors(), segment.graph(), 500, &q, &visible, options);
        let mut q_cmp = q.clone();
        if metric == Metric::Cosine {
            folio::index::distance::normalize(&mut q_cmp);
        }
        check_search(&got, segment.vectors(), 500, &q_cmp, k, &visible);
        prop_assert_eq!(report.visible, visible.range_cardinality(500..500 + n as u32));
    }

    #[test]
    fn code_scans_of_repeated_visible_sets_equal_brute_force(
        sets in prop::collection::vec((0.0f64..0.04, any::<u64>()), 1..4),
        searches in prop::collection::vec((0usize..4, 0usize..100, 1usize..30, plan()), 1..12),
    ) {
        // Small visible sets (under 1/32 of the rows) are scanned on gathered copies of their
        // codes that the segment keeps between searches (and shares between this test's
        // threads), and only the rows that may rank are scored exactly.
        let f = fixture();
        let bitmaps: Vec<RoaringBitmap> = sets
            .iter()
            .map(|&(p, seed)| Visibility::Random { p, seed }.bitmap(f.base, FIXTURE_N, &f.labels))
            .collect();
        for (which, qi, k, strategy) in searches {
            let visible = &bitmaps[which % bitmaps.len()];
            let q = &f.queries[qi];
            let options = SearchOptions { k, ef: None, strategy };
            let (got, report) = f.segment.search_with(q, visible, options).unwrap();
            check_search(&got, f.segment.vectors(), f.base, q, k, visible);
            if report.path == SearchPath::Exact || report.path == SearchPath::GraphTopUp {
                prop_assert_eq!(got, naive(f.segment.vectors(), f.base, q, k, visible));
            }
        }
    }

    /// The fixture as a compressed segment (walks on codes, rows read through a
    /// `RowSource`, only the best `rescore` candidates re-scored): the same contract.
    #[test]
    fn compressed_walks_are_filled_and_never_leak(
        qi in 0usize..100, k in 1usize..40, ef in prop::option::of(1usize..200), vis in visibility(),
        strategy in plan(), rescore in 0usize..80,
    ) {
        let f = fixture();
        let visible = vis.bitmap(f.base, FIXTURE_N, &f.labels);
        let q = &f.queries[qi];
        let options = SearchOptions { k, ef, strategy };
        let rows = Rows(f.segment.vectors());
        let (got, report) = compressed().search_stored(q, &visible, options, rescore, &rows).unwrap();
        check_search(&got, f.segment.vectors(), f.base, q, k, &visible);
        if report.path == SearchPath::Exact || report.path == SearchPath::GraphTopUp {
            prop_assert_eq!(got, naive(f.segment.vectors(), f.base, q, k, &visible));
        }
    }

    #[test]
    fn graph_walks_are_filled_and_never_leak(
        qi in 0usize..100, k in 1usize..40, ef in prop::option::of(1usize..200), vis in visibility(),
        strategy in plan(),
    ) {
        let f = fixture();
        let visible = vis.bitmap(f.base, FIXTURE_N, &f.labels);
        let q = &f.queries[qi];
        let options = SearchOptions { k, ef, strategy };
        let (got, report) = search_with(f.segment.vectors(), f.segment.graph(), f.base, q, &visible, options);
        check_search(&got, f.segment.vectors(), f.base, q, k, &visible);
        if report.path == SearchPath::Exact || report.path == SearchPath::GraphTopUp {
            prop_assert_eq!(got, naive(f.segment.vectors(), f.base, q, k, &visible));
        }
    }

    #[test]
    fn truncated_blobs_are_rejected(cut in 0usize..10_000, seed in any::<u64>()) {
        let (data, graph) = small_graph(seed);
        let vectors = VectorSet::new(&data, 8, Metric::L2).unwrap();
        let blob = graph.encode();
        let cut = cut % blob.len();
        prop_assert!(Graph::decode(&blob[..cut], vectors).is_err());
        let mut longer = blob.clone();
        longer.push(0);
        prop_assert!(Graph::decode(&longer, vectors).is_err());
    }

    #[test]
    fn corrupted_blobs_never_panic(seed in any::<u64>(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let (data, graph) = small_graph(seed);
        let vectors = VectorSet::new(&data, 8, Metric::L2).unwrap();
        let mut blob = graph.encode();
        for (at, byte) in flips {
            let at = at % blob.len();
            blob[at] ^= byte | 1;
        }
        if let Ok(decoded) = Graph::decode(&blob, vectors) {
            search_any(&decoded);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let data = [0.5f32; 8];
        let vectors = VectorSet::new(&data, 8, Metric::L2).unwrap();
        if let Ok(decoded) = Graph::decode(&bytes, vectors) {
            search_any(&decoded);
        }
    }
}

/// A graph over 60 random 8-d points, and the points.
fn small_graph(seed: u64) -> (Vec<f32>, Graph) {
    let (data, _) = clustered(seed, 60, 8, 3);
    let vectors = VectorSet::new(&data, 8, Metric::L2).unwrap();
    let graph = Graph::build(
        vectors,
        HnswParams {
            m: 4,
            ef_construction: 16,
            seed,
        },
        &|_| {},
    );
    (data, graph)
}

/// Searches a decoded graph over dummy vectors of its shape, through every path.
fn search_any(graph: &Graph) {
    let (n, dim) = (graph.len(), graph.dim());
    if n.saturating_mul(dim) > 1 << 20 {
        return;
    }
    let data: Vec<f32> = (0..n * dim).map(|i| (i % 7) as f32).collect();
    let vectors = VectorSet::new(&data, dim, graph.metric()).unwrap();
    let q = vec![1.0; dim];
    for visible in [
        (0..n as u32).collect(),
        (0..n as u32).step_by(7).collect(),
        RoaringBitmap::new(),
    ] {
        let (got, _) = search(vectors, Some(graph), 0, &q, 10, Some(32), &visible);
        assert_eq!(got.len(), 10.min(visible.len() as usize));
    }
}

#[test]
fn recall_at_default_settings() {
    let f = fixture();
    let vectors = f.segment.vectors();
    let filters = [
        Visibility::All,
        Visibility::Random { p: 0.5, seed: 1 },
        Visibility::Random { p: 0.2, seed: 2 },
        Visibility::Random { p: 0.1, seed: 3 },
        Visibility::Random { p: 0.01, seed: 4 },
        Visibility::Clusters { p: 0.5 },
        Visibility::Clusters { p: 0.1 },
    ];
    for vis in filters {
        let visible = vis.bitmap(f.base, FIXTURE_N, &f.labels);
        // Forced two-hop walks are only meant for spread-out sets of a few percent or more.
        let two_hop = matches!(vis, Visibility::Random { p, .. } if p >= 0.1);
        let strategies: &[Plan] = if two_hop {
            &[Plan::Auto, Plan::Graph, Plan::GraphTwoHop]
        } else {
            &[Plan::Auto, Plan::Graph]
        };
        for &strategy in strategies {
            let options = SearchOptions {
                k: 10,
                ef: None,
                strategy,
            };
            let mut total = 0.0;
            for q in &f.queries {
                let (got, _) =
                    search_with(vectors, f.segment.graph(), f.base, q, &visible, options);
                total += recall(&got, &naive(vectors, f.base, q, 10, &visible));
            }
            let avg = total / f.queries.len() as f64;
            assert!(avg >= 0.95, "{vis:?} {strategy:?}: recall {avg:.3}");
        }
    }
}

#[test]
fn paths_follow_the_visible_fraction() {
    let f = fixture();
    let q = &f.queries[0];
    let path = |vis: Visibility, strategy| {
        let visible = vis.bitmap(f.base, FIXTURE_N, &f.labels);
        let options = SearchOptions {
            k: 10,
            ef: Some(16),
            strategy,
        };
        search_with(
            f.segment.vectors(),
            f.segment.graph(),
            f.base,
            q,
            &visible,
            options,
        )
        .1
        .path
    };
    assert_eq!(path(Visibility::All, Plan::Auto), SearchPath::Graph);
    assert_eq!(
        path(Visibility::Random { p: 0.6, seed: 5 }, Plan::Auto),
        SearchPath::Graph
    );
    assert_eq!(
        path(Visibility::Random { p: 0.01, seed: 5 }, Plan::Auto),
        SearchPath::Exact
    );
    assert_eq!(path(Visibility::All, Plan::Exact), SearchPath::Exact);
    assert_eq!(
        path(Visibility::Random { p: 0.3, seed: 5 }, Plan::GraphTwoHop),
        SearchPath::GraphTwoHop
    );
    // Two hops cannot cross a hidden cluster to reach a far visible one: topped up.
    let far = path(Visibility::Clusters { p: 0.02 }, Plan::GraphTwoHop);
    assert!(
        matches!(far, SearchPath::GraphTwoHop | SearchPath::GraphTopUp),
        "{far:?}"
    );
}

#[test]
fn reports_count_the_walk_work() {
    let f = fixture();
    let q = &f.queries[0];
    let report = |vis: Visibility, strategy| {
        let visible = vis.bitmap(f.base, FIXTURE_N, &f.labels);
        let options = SearchOptions {
            k: 10,
            ef: Some(16),
            strategy,
        };
        let vectors = f.segment.vectors();
        search_with(vectors, f.segment.graph(), f.base, q, &visible, options).1
    };
    // A walk re-scores its ef candidates on f32 rows, besides the codes it scored while
    // reading link lists; the scan reads no lists.
    let walk = report(Visibility::All, Plan::Graph);
    assert_eq!(walk.path, SearchPath::Graph);
    assert_eq!(walk.rescored, 16);
    assert!(
        walk.lists >= 1 && walk.distances > walk.rescored,
        "{walk:?}"
    );
    let two_hop = report(Visibility::Random { p: 0.3, seed: 5 }, Plan::GraphTwoHop);
    assert_eq!(two_hop.path, SearchPath::GraphTwoHop);
    assert_eq!(two_hop.rescored, 16);
    assert!(
        two_hop.lists >= 1 && two_hop.distances > two_hop.rescored,
        "{two_hop:?}"
    );
    let scan = report(Visibility::All, Plan::Exact);
    assert_eq!(
        (scan.path, scan.lists, scan.rescored),
        (SearchPath::Exact, 0, 0)
    );
    assert_eq!(scan.distances, FIXTURE_N);
}

#[test]
fn round_trip_gives_identical_results() {
    let f = fixture();
    let graph = f.segment.graph().unwrap();
    let decoded = Graph::decode(&graph.encode(), f.segment.vectors()).unwrap();
    assert_eq!(&decoded, graph);
    let vectors = f.segment.vectors();
    for (i, q) in f.queries.iter().enumerate() {
        let visible = Visibility::Random {
            p: 0.05 + (i % 10) as f64 / 10.0,
            seed: i as u64,
        }
        .bitmap(f.base, FIXTURE_N, &f.labels);
        let a = search(vectors, Some(graph), f.base, q, 10, None, &visible);
        let b = search(vectors, Some(&decoded), f.base, q, 10, None, &visible);
        assert_eq!(a, b);
    }
}

#[test]
fn single_thread_builds_are_deterministic() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (data, _) = clustered(3, 500, 8, 6);
    let vectors = VectorSet::new(&data, 8, Metric::Dot).unwrap();
    let a = pool.install(|| Graph::build(vectors, HnswParams::default(), &|_| {}));
    let b = pool.install(|| Graph::build(vectors, HnswParams::default(), &|_| {}));
    assert_eq!(a.encode(), b.encode());
}

#[test]
fn incremental_insert_matches_search_quality() {
    let f = fixture();
    let vectors = f.segment.vectors();
    let half = VectorSet::new(
        &vectors.as_slice()[..FIXTURE_N / 2 * f.dim],
        f.dim,
        Metric::L2,
    )
    .unwrap();
    let mut graph = Graph::build(half, HnswParams::default(), &|_| {});
    let progress = std::sync::atomic::AtomicUsize::new(0);
    graph
        .insert(vectors, &|done| {
            progress.fetch_max(done, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
    assert_eq!(progress.into_inner(), FIXTURE_N - FIXTURE_N / 2);
    assert_eq!(graph.len(), FIXTURE_N);
    let all: RoaringBitmap = (f.base..f.base + FIXTURE_N as u32).collect();
    let mut total = 0.0;
    for q in &f.queries {
        let (got, _) = search(vectors, Some(&graph), f.base, q, 10, None, &all);
        total += recall(&got, &naive(vectors, f.base, q, 10, &all));
    }
    assert!(total / f.queries.len() as f64 >= 0.95);
}

#[test]
fn merged_segments_equal_one_exact_scan() {
    let (data, _) = clustered(11, 900, 6, 5);
    let whole = VectorSet::new(&data, 6, Metric::L2).unwrap();
    let visible: RoaringBitmap = (0..900).filter(|i| i % 3 != 1).collect();
    let q = clustered(12, 1, 6, 5).0;
    let lists = data.chunks(300 * 6).enumerate().map(|(i, rows)| {
        let part = VectorSet::new(rows, 6, Metric::L2).unwrap();
        exact_search(part, i as u32 * 300, &q, 10, &visible)
    });
    assert_eq!(merge_top_k(lists, 10), naive(whole, 0, &q, 10, &visible));
}
