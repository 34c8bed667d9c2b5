//! What folio-milvus relies on, checked against the server: milvus-sdk-rust 3.0.3 talking to
//! milvus-lite 3.2.2 on 127.0.0.1. Collections with VARCHAR primary keys, ARRAY and JSON
//! fields and collection properties; upsert by primary key (no duplicate rows), flush, delete
//! by primary key; exact (FLAT) cosine search filtered by `array_contains_any`; aliases
//! created, moved and searched through; BM25 full-text and hybrid search, which folio does not
//! use yet (probed so a change is seen). milvus-lite 3.2.2 parses no filter templates (nor the
//! SDK's delete by ids, which sends one), so values go in filters as quoted literals.

use crate::common;

use folio_milvus::expr::string_list;
use milvus::v2::prelude::*;
use serde_json::json;

const DIM: u32 = 4;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn schema() -> CollectionSchema {
    CollectionSchema::new()
        .enable_dynamic_field(false)
        .add_field(
            FieldSchema::new()
                .name("id")
                .data_type(DataType::VarChar)
                .primary_key(true)
                .max_length(64),
        )
        .add_field(
            FieldSchema::new()
                .name("vector")
                .data_type(DataType::FloatVector)
                .dimension(DIM),
        )
        .add_field(
            FieldSchema::new()
                .name("acl")
                .data_type(DataType::Array)
                .element_type(DataType::VarChar)
                .max_capacity(16)
                .max_length(64),
        )
        .add_field(FieldSchema::new().name("public").data_type(DataType::Bool))
        .add_field(
            FieldSchema::new()
                .name("metadata")
                .data_type(DataType::Json),
        )
}

fn row(id: &str, vector: [f32; 4], acl: &[&str]) -> serde_json::Value {
    json!({"id": id, "vector": vector, "acl": acl, "public": acl.is_empty(), "metadata": {"k": id}})
}

async fn create(client: &ClientV2, name: &str) {
    client
        .create_collection(
            CreateCollectionRequest::builder()
                .collection_name(name)
                .schema(schema())
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    client
        .create_index(
            CreateIndexRequest::builder()
                .collection_name(name)
                .index_param(
                    IndexParam::new()
                        .field_name("vector")
                        .index_type(IndexType::Flat)
                        .metric_type(MetricType::Cosine),
                )
                // `sync` polls with AllocTimestamp, which milvus-lite does not serve; loading
                // the collection waits for the index anyway.
                .sync(false)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    client
        .load_collection(
            LoadCollectionRequest::builder()
                .collection_name(name)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
}

async fn upsert(client: &ClientV2, name: &str, rows: Vec<serde_json::Value>) {
    client
        .upsert(
            UpsertRequest::builder()
                .insert(
                    InsertRequest::builder()
                        .collection_name(name)
                        .rows(rows)
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
}

async fn count(client: &ClientV2, name: &str) -> i64 {
    let response = client
        .query(
            QueryRequest::builder()
                .collection_name(name)
                .output_fields(["count(*)"])
                .consistency_level(ConsistencyLevel::Strong)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    let row = response.results().rows().unwrap().next().unwrap();
    row.get_i64("count(*)").unwrap()
}

/// Ids and scores of an exact search as `principals` (public rows always match).
async fn search(client: &ClientV2, name: &str, principals: &[&str]) -> Vec<(String, f32)> {
    let response = client
        .search(
            SearchRequest::builder()
                .collection_name(name)
                .vector_field("vector")
                .vectors(SearchVectors::Float(vec![vec![1.0, 0.0, 0.0, 0.0]]))
                .filter(format!(
                    "public or array_contains_any(acl, {})",
                    string_list(principals.iter().copied())
                ))
                .output_fields(["id"])
                .limit(10)
                .consistency_level(ConsistencyLevel::Strong)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    let result = &response.results().get_results()[0];
    let Ids::VarChar(ids) = result.get_ids() else {
        panic!("string ids expected");
    };
    ids.iter()
        .cloned()
        .zip(result.get_scores().iter().copied())
        .collect()
}

fn ids(hits: &[(String, f32)]) -> Vec<&str> {
    hits.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn the_client_and_the_server_do_what_publish_and_search_need() {
    let server = common::LiteServer::start();
    runtime().block_on(async {
        let client = ClientV2::new(&ConnectConfig::new().uri(server.uri()))
            .await
            .unwrap();
        create(&client, "v1").await;
        upsert(
            &client,
            "v1",
            vec![
                row("a#c0", [1.0, 0.0, 0.0, 0.0], &["alice"]),
                row("b#c0", [1.0, 1.0, 0.0, 0.0], &[]),
                row("c#c0", [1.0, 0.0, 1.0, 1.0], &["bob", "carol"]),
                row("e#c0", [0.0, 0.0, 0.0, 1.0], &["x\"] or true or [\"\\"]),
            ],
        )
        .await;
        // A rerun of the same batch, and a changed ACL, overwrite by primary key.
        upsert(
            &client,
            "v1",
            vec![
                row("a#c0", [1.0, 0.0, 0.0, 0.0], &["alice"]),
                row("c#c0", [1.0, 0.0, 1.0, 1.0], &["carol"]),
            ],
        )
        .await;
        client
            .flush(
                FlushRequest::builder()
                    .collection_names(["v1"])
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(count(&client, "v1").await, 4);

        // Exact cosine scores, best first; public rows and the caller's rows only.
        let alice = search(&client, "v1", &["alice"]).await;
        assert_eq!(ids(&alice), ["a#c0", "b#c0"]);
        assert!((alice[0].1 - 1.0).abs() < 1e-5 && (alice[1].1 - 0.5f32.sqrt()).abs() < 1e-5);
        assert_eq!(ids(&search(&client, "v1", &["bob"]).await), ["b#c0"]);
        assert_eq!(
            ids(&search(&client, "v1", &["bob", "carol"]).await),
            ["b#c0", "c#c0"]
        );
        // A principal that would break an unquoted filter string is only a value.
        assert_eq!(
            ids(&search(&client, "v1", &["x\"] or true or [\""]).await),
            ["b#c0"]
        );
        assert_eq!(
            ids(&search(&client, "v1", &["x\"] or true or [\"\\"]).await),
            ["b#c0", "e#c0"]
        );

        client
            .delete(
                DeleteRequest::builder()
                    .collection_name("v1")
                    // `ids` sends a filter template: milvus-lite needs the literal.
                    .filter(format!("id in {}", string_list(["b#c0"])))
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(ids(&search(&client, "v1", &["alice"]).await), ["a#c0"]);

        // Collection properties: where a publish marks itself complete.
        client
            .alter_collection_properties(
                AlterCollectionPropertiesRequest::builder()
                    .collection_name("v1")
                    .property("folio.complete", "3")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        let described = client
            .describe_collection(
                DescribeCollectionRequest::builder()
                    .collection_name("v1")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(
            described
                .description()
                .get_properties()
                .get("folio.complete")
                .map(String::as_str),
            Some("3")
        );

        // An alias is searched like its collection, and moves in one call.
        create(&client, "v2").await;
        upsert(&client, "v2", vec![row("d#c0", [1.0, 0.0, 0.0, 0.0], &[])]).await;
        client
            .create_alias(
                CreateAliasRequest::builder()
                    .collection_name("v1")
                    .alias("prod")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(ids(&search(&client, "prod", &["alice"]).await), ["a#c0"]);
        client
            .alter_alias(
                AlterAliasRequest::builder()
                    .collection_name("v2")
                    .alias("prod")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(ids(&search(&client, "prod", &["alice"]).await), ["d#c0"]);
    });
}

/// `group_by_field` is served (one row per group, best first), though folio does not use it
/// (docs/milvus.md, "Filters pushed down, answers filled" says why).
#[test]
fn group_by_field_probe() {
    let server = common::LiteServer::start();
    runtime().block_on(async {
        let client = ClientV2::new(&ConnectConfig::new().uri(server.uri()))
            .await
            .unwrap();
        create(&client, "g").await;
        upsert(
            &client,
            "g",
            vec![
                row("a#c0", [1.0, 0.0, 0.0, 0.0], &[]),
                row("a#c1", [1.0, 0.1, 0.0, 0.0], &[]),
                row("b#c0", [1.0, 1.0, 0.0, 0.0], &["bob"]),
                row("c#c0", [0.0, 0.0, 0.0, 1.0], &["carol"]),
            ],
        )
        .await;
        let response = client
            .search(
                SearchRequest::builder()
                    .collection_name("g")
                    .vector_field("vector")
                    .vectors(SearchVectors::Float(vec![vec![1.0, 0.0, 0.0, 0.0]]))
                    .output_fields(["id", "public"])
                    .group_by_field("public")
                    .limit(10)
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()
                    .unwrap(),
            )
            .await;
        let response = response.unwrap();
        let result = &response.results().get_results()[0];
        let Ids::VarChar(ids) = result.get_ids() else {
            panic!("string ids expected");
        };
        // One row per value of the field, the best of each group first: a#c1 (public, like
        // a#c0 but further) and c#c0 (not public, like b#c0) are left out.
        assert_eq!(ids, &["a#c0", "b#c0"]);
    });
}

/// Full-text search and hybrid search are served, through the client's own types: a BM25
/// `Function` from an analyzed VARCHAR field into a SPARSE_FLOAT_VECTOR field, a
/// SPARSE_INVERTED_INDEX with metric BM25, the sparse field searched with raw text, and
/// `hybrid_search` of a dense and a lexical leg fused by RRF. folio does not publish a lexical
/// leg yet (docs/milvus.md, "Hybrid on Milvus" says what it would take).
#[test]
fn bm25_and_hybrid_probe() {
    let server = common::LiteServer::start();
    runtime().block_on(async {
        let client = ClientV2::new(&ConnectConfig::new().uri(server.uri()))
            .await
            .unwrap();
        let schema = CollectionSchema::new()
            .enable_dynamic_field(false)
            .add_field(
                FieldSchema::new()
                    .name("id")
                    .data_type(DataType::VarChar)
                    .primary_key(true)
                    .max_length(64),
            )
            .add_field(
                FieldSchema::new()
                    .name("vector")
                    .data_type(DataType::FloatVector)
                    .dimension(DIM),
            )
            .add_field(
                FieldSchema::new()
                    .name("text")
                    .data_type(DataType::VarChar)
                    .max_length(512)
                    .enable_analyzer(true),
            )
            .add_field(
                FieldSchema::new()
                    .name("sparse")
                    .data_type(DataType::SparseFloatVector),
            )
            .add_function(
                Function::new()
                    .name("text_bm25")
                    .function_type(FunctionType::Bm25)
                    .input_fields(["text"])
                    .output_fields(["sparse"]),
            );
        client
            .create_collection(
                CreateCollectionRequest::builder()
                    .collection_name("h")
                    .schema(schema)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        for index in [
            IndexParam::new()
                .field_name("vector")
                .index_type(IndexType::Flat)
                .metric_type(MetricType::Cosine),
            IndexParam::new()
                .field_name("sparse")
                .index_type(IndexType::SparseInvertedIndex)
                .metric_type(MetricType::Bm25),
        ] {
            client
                .create_index(
                    CreateIndexRequest::builder()
                        .collection_name("h")
                        .index_param(index)
                        .sync(false)
                        .build()
                        .unwrap(),
                )
                .await
                .unwrap();
        }
        client
            .load_collection(
                LoadCollectionRequest::builder()
                    .collection_name("h")
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        // The sparse field is generated by the server from `text`; rows carry only the text.
        upsert(
            &client,
            "h",
            vec![
                json!({"id": "a", "vector": [1.0, 0.0, 0.0, 0.0], "text": "apple banana"}),
                json!({"id": "b", "vector": [0.9, 0.1, 0.0, 0.0], "text": "cherry grape"}),
                json!({"id": "c", "vector": [0.0, 0.0, 0.0, 1.0], "text": "apple pie with apple"}),
            ],
        )
        .await;

        let lexical = |limit| {
            SubSearchRequest::builder()
                .vector_field("sparse")
                .vectors(SearchVectors::EmbeddedText(vec!["apple".into()]))
                .metric_type(MetricType::Bm25)
                .limit(limit)
                .build()
                .unwrap()
        };
        let ids_of = |response: &SearchResponse| {
            let Ids::VarChar(ids) = response.results().get_results()[0].get_ids().clone() else {
                panic!("string ids expected");
            };
            ids
        };

        let response = client
            .search(
                SearchRequest::builder()
                    .collection_name("h")
                    .vector_field("sparse")
                    .vectors(SearchVectors::EmbeddedText(vec!["apple".into()]))
                    .metric_type(MetricType::Bm25)
                    .limit(10)
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        // Only the rows whose text holds the term ("b" has none), ranked by BM25: "c" holds
        // it twice in a longer text. milvus-lite scores with k1 1.5 (folio and Milvus use
        // 1.2), b 0.75, and answers the score negated (its distance), where Milvus answers it
        // positive.
        assert_eq!(ids_of(&response), ["c", "a"]);
        let bm25 = |frequency: f32, length: f32, k1: f32| {
            let idf = (1.0f32 + (3.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
            let norm = 1.0 - 0.75 + 0.75 * length / (8.0 / 3.0);
            idf * frequency * (k1 + 1.0) / (frequency + k1 * norm)
        };
        let scores = response.results().get_results()[0].get_scores();
        let expected = [-bm25(2.0, 4.0, 1.5), -bm25(1.0, 2.0, 1.5)];
        assert!(
            scores
                .iter()
                .zip(expected)
                .all(|(s, e)| (s - e).abs() < 1e-4),
            "{scores:?} against {expected:?}"
        );

        let dense = SubSearchRequest::builder()
            .vector_field("vector")
            .vectors(SearchVectors::Float(vec![vec![1.0, 0.0, 0.0, 0.0]]))
            .metric_type(MetricType::Cosine)
            .limit(10)
            .build()
            .unwrap();
        let response = client
            .hybrid_search(
                HybridSearchRequest::builder()
                    .collection_name("h")
                    .sub_requests(vec![dense, lexical(10)])
                    .rerank(RRFRerank::new().k(60))
                    .limit(10)
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()
                    .unwrap(),
            )
            .await
            .unwrap();
        // Dense ranks a, b, c; lexical c, a. RRF with k 60: a 1/61 + 1/62, c 1/63 + 1/61,
        // b 1/62.
        assert_eq!(ids_of(&response), ["a", "c", "b"]);
    });
}
