//! The "Defaults" tables in the rustdoc of `StoreBuilder` and `SearchRequest` say what the
//! constants hold, and the builders start from those constants.

use std::collections::BTreeMap;

use folio::chunk::{
    ChildStrategy, ChunkSpec, EmbedForm, ParentStrategy, DEFAULT_CHILD_OVERLAP,
    DEFAULT_CHILD_TARGET, DEFAULT_HEADING_DEPTH, DEFAULT_SECTION_MAX,
};
use folio::embed::{default_embedder, Embedder, Truncation, DEFAULT_DIMENSION, DEFAULT_TRUNCATION};
use folio::index::{HnswParams, DEFAULT_EF_CONSTRUCTION, DEFAULT_M};
use folio::query::{
    Expand, Fusion, Hybrid, SearchMode, SearchRequest, CHILDREN_PER_UNIT, DEFAULT_DEDUP_THRESHOLD,
    DEFAULT_DENSE_DEPTH, DEFAULT_DENSE_WEIGHT, DEFAULT_EXPAND, DEFAULT_K, DEFAULT_LEXICAL_DEPTH,
    DEFAULT_MODE, DEFAULT_RRF_K, MIN_CHILDREN,
};
use folio::store::{
    GraphParams, MergePolicy, DEFAULT_MAX_DEAD_FRACTION, DEFAULT_MAX_SEGMENTS,
    DEFAULT_MIN_GRAPH_SIZE, DEFAULT_RESCORE, DEFAULT_WAIT,
};

/// The rows of the table under `# Defaults` in the doc comments of `source`: constant name
/// to the value the table gives.
fn documented(source: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    let mut in_section = false;
    for line in source.lines() {
        let Some(doc) = line.trim_start().strip_prefix("///") else {
            in_section = false;
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with('#') {
            in_section = doc == "# Defaults";
            continue;
        }
        if !in_section || !doc.starts_with('|') || doc.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = doc.trim_matches('|').split('|').map(str::trim).collect();
        let [_, value, constant] = cells[..] else {
            panic!("a Defaults row has three cells: {doc}");
        };
        // "[`NAME`]" or "[`NAME`](path)"
        let Some(name) = constant
            .strip_prefix("[`")
            .and_then(|rest| rest.split_once("`]"))
            .map(|(name, _)| name)
        else {
            continue; // the header row
        };
        rows.insert(name.to_string(), value.trim_matches('`').to_string());
    }
    rows
}

fn table(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect()
}

#[test]
fn the_store_defaults_table_equals_the_constants() {
    let constants = table(&[
        ("DEFAULT_DIMENSION", DEFAULT_DIMENSION.to_string()),
        ("DEFAULT_CHILD_TARGET", DEFAULT_CHILD_TARGET.to_string()),
        ("DEFAULT_CHILD_OVERLAP", DEFAULT_CHILD_OVERLAP.to_string()),
        ("DEFAULT_SECTION_MAX", DEFAULT_SECTION_MAX.to_string()),
        ("DEFAULT_HEADING_DEPTH", DEFAULT_HEADING_DEPTH.to_string()),
        ("DEFAULT_M", DEFAULT_M.to_string()),
        (
            "DEFAULT_EF_CONSTRUCTION",
            DEFAULT_EF_CONSTRUCTION.to_string(),
        ),
        ("DEFAULT_MIN_GRAPH_SIZE", DEFAULT_MIN_GRAPH_SIZE.to_string()),
        ("DEFAULT_RESCORE", DEFAULT_RESCORE.to_string()),
        ("DEFAULT_MAX_SEGMENTS", DEFAULT_MAX_SEGMENTS.to_string()),
        (
            "DEFAULT_MAX_DEAD_FRACTION",
            DEFAULT_MAX_DEAD_FRACTION.to_string(),
        ),
        ("DEFAULT_TRUNCATION", format!("{DEFAULT_TRUNCATION:?}")),
        ("DEFAULT_WAIT", DEFAULT_WAIT.as_secs_f64().to_string()),
    ]);
    assert_eq!(
        documented(include_str!("../../src/storage/options.rs")),
        constants
    );
}

#[test]
fn the_search_defaults_table_equals_the_constants() {
    let constants = table(&[
        ("DEFAULT_K", DEFAULT_K.to_string()),
        ("CHILDREN_PER_UNIT", CHILDREN_PER_UNIT.to_string()),
        ("MIN_CHILDREN", MIN_CHILDREN.to_string()),
        ("DEFAULT_EXPAND", format!("{DEFAULT_EXPAND:?}")),
        (
            "DEFAULT_DEDUP_THRESHOLD",
            DEFAULT_DEDUP_THRESHOLD.to_string(),
        ),
        ("DEFAULT_MODE", format!("{DEFAULT_MODE:?}")),
        ("DEFAULT_RRF_K", DEFAULT_RRF_K.to_string()),
        ("DEFAULT_DENSE_WEIGHT", DEFAULT_DENSE_WEIGHT.to_string()),
        ("DEFAULT_DENSE_DEPTH", DEFAULT_DENSE_DEPTH.to_string()),
        ("DEFAULT_LEXICAL_DEPTH", DEFAULT_LEXICAL_DEPTH.to_string()),
    ]);
    assert_eq!(
        documented(include_str!("../../src/query/mod.rs")),
        constants
    );
}

#[test]
fn the_builders_start_from_the_constants() {
    assert_eq!(
        ChunkSpec::default(),
        ChunkSpec {
            child: ChildStrategy::Structure {
                target: DEFAULT_CHILD_TARGET,
                overlap: DEFAULT_CHILD_OVERLAP,
            },
            parent: ParentStrategy::Section {
                max: DEFAULT_SECTION_MAX,
            },
            heading_depth: DEFAULT_HEADING_DEPTH,
            embed_form: EmbedForm::Sections,
        }
    );
    let graph = GraphParams::default();
    assert_eq!(
        (graph.m, graph.ef_construction, graph.min_graph_size),
        (DEFAULT_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_MIN_GRAPH_SIZE)
    );
    let hnsw = HnswParams::default();
    assert_eq!(
        (hnsw.m as u32, hnsw.ef_construction as u32),
        (DEFAULT_M, DEFAULT_EF_CONSTRUCTION)
    );
    let merge = MergePolicy::default();
    assert_eq!(
        (merge.max_segments, merge.max_dead_fraction),
        (DEFAULT_MAX_SEGMENTS, DEFAULT_MAX_DEAD_FRACTION)
    );
    assert_eq!(default_embedder().dimension(), DEFAULT_DIMENSION);
    assert_eq!(Truncation::default(), DEFAULT_TRUNCATION);
    assert_eq!(DEFAULT_TRUNCATION, Truncation::Split);
    let request = SearchRequest::text("q");
    assert_eq!(request.k, DEFAULT_K);
    assert_eq!(request.expand, DEFAULT_EXPAND);
    assert_eq!(request.expand, Expand::Parent);
    assert_eq!(request.dedup, Some(DEFAULT_DEDUP_THRESHOLD));
    assert_eq!(request.children, None);
    assert_eq!(request.mode, DEFAULT_MODE);
    assert_eq!(DEFAULT_MODE, SearchMode::Dense);
    let hybrid = Hybrid::default();
    assert_eq!(
        hybrid.fusion,
        Fusion::Weighted {
            dense_weight: DEFAULT_DENSE_WEIGHT
        }
    );
    assert_eq!(
        (hybrid.dense_depth, hybrid.lexical_depth),
        (DEFAULT_DENSE_DEPTH, DEFAULT_LEXICAL_DEPTH)
    );
}

/// A store made by the default builder records the default chunking and graph.
#[test]
fn a_default_store_records_the_defaults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = folio::Store::builder()
        .create(true)
        .open(dir.path().join("d.folio"))
        .expect("create");
    let info = store
        .indexes()
        .list()
        .expect("indexes")
        .into_iter()
        .find(|i| i.name == "default")
        .expect("default index");
    assert_eq!(info.spec, ChunkSpec::default());
    assert_eq!(info.graph, GraphParams::default());
    assert_eq!(info.embedder.dimension as usize, DEFAULT_DIMENSION);
}
