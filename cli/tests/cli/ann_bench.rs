//! `folio bench ann`: the kit's file readers on good and damaged files, and the whole
//! benchmark on a tiny generated dataset with exact ground truth (library and command).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::process::Command;

use folio::store::{NoProgress, VectorStorage};
use folio_eval::ann::{
    read_fvecs, read_ivecs, read_u32, run, AnnConfig, AnnError, Dataset, FileError,
};
use serde_json::Value;

const N: usize = 2_000;
const DIM: usize = 16;
const QUERIES: usize = 60;
const GT_K: usize = 20;
const CLUSTERS: usize = 20;

/// A deterministic value in [0, 1) for `key`: std's SipHash with its fixed keys, stable
/// within a build, which is all a fixture needs.
fn unit(key: (u64, u64)) -> f32 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() >> 40) as f32 / (1u64 << 24) as f32
}

fn vecs_bytes(rows: &[Vec<u32>]) -> Vec<u8> {
    rows.iter()
        .flat_map(|row| std::iter::once(row.len() as u32).chain(row.iter().copied()))
        .flat_map(u32::to_le_bytes)
        .collect()
}

fn write_fvecs(path: &Path, rows: &[Vec<f32>]) {
    let bits: Vec<Vec<u32>> = rows
        .iter()
        .map(|r| r.iter().map(|x| x.to_bits()).collect())
        .collect();
    std::fs::write(path, vecs_bytes(&bits)).expect("write fvecs");
}

fn write_ivecs(path: &Path, rows: &[Vec<i32>]) {
    let bits: Vec<Vec<u32>> = rows
        .iter()
        .map(|r| r.iter().map(|&x| x as u32).collect())
        .collect();
    std::fs::write(path, vecs_bytes(&bits)).expect("write ivecs");
}

fn write_u32(path: &Path, ids: &[u32]) {
    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
    std::fs::write(path, bytes).expect("write u32");
}

#[test]
fn readers_read_the_kits_layout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let f = dir.path().join("a.fvecs");
    write_fvecs(&f, &[vec![1.0, -2.5, 3.0], vec![0.0, 0.5, 7.0]]);
    let m = read_fvecs(&f).expect("fvecs");
    assert_eq!((m.rows(), m.dim()), (2, 3));
    assert_eq!(m.row(1), &[0.0, 0.5, 7.0]);

    let i = dir.path().join("a.ivecs");
    write_ivecs(&i, &[vec![4, -1], vec![7, 9]]);
    assert_eq!(read_ivecs(&i).expect("ivecs").as_slice(), &[4, -1, 7, 9]);

    let u = dir.path().join("a.u32");
    write_u32(&u, &[3, 5, 8]);
    assert_eq!(read_u32(&u).expect("u32"), vec![3, 5, 8]);
    std::fs::write(&u, b"").expect("empty");
    assert_eq!(read_u32(&u).expect("empty u32"), Vec::<u32>::new());
}

#[test]
fn damaged_files_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bad.fvecs");
    let good = vecs_bytes(&[vec![1, 2, 3], vec![4, 5, 6]]);
    let negative_dim = vecs_bytes(&[vec![u32::MAX]]);
    let mut second_row_lies = good.clone();
    second_row_lies[16] = 2;
    let cases: [(&str, &[u8]); 6] = [
        ("empty", &[]),
        ("ragged word", &good[..good.len() - 3]),
        ("truncated row", &good[..good.len() - 4]),
        ("zero dimension", &[0, 0, 0, 0]),
        ("negative dimension", &negative_dim[4..]),
        ("row header differs", &second_row_lies),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, bytes).expect("write");
        let fvecs = read_fvecs(&path);
        let ivecs = read_ivecs(&path);
        assert!(
            matches!(fvecs, Err(FileError::Format { .. })),
            "{what}: {fvecs:?}"
        );
        assert!(
            matches!(ivecs, Err(FileError::Format { .. })),
            "{what}: {ivecs:?}"
        );
    }
    std::fs::write(&path, [1, 2, 3, 4, 5]).expect("write");
    assert!(matches!(read_u32(&path), Err(FileError::Format { .. })));
    let missing = dir.path().join("missing.u32");
    assert!(matches!(read_u32(&missing), Err(FileError::Io { .. })));
}

/// A tiny dataset in the kit's layout: points around random centres, random and
/// cluster-correlated filters, exact L2 ground truth per filter.
fn write_dataset(dir: &Path) {
    let point = |i: usize| -> (usize, Vec<f32>) {
        let c = (unit((1, i as u64)) * CLUSTERS as f32) as usize % CLUSTERS;
        let row = (0..DIM)
            .map(|j| {
                let centre = unit((2, (c * DIM + j) as u64)) * 8.0;
                centre + unit((3, (i * DIM + j) as u64)) - 0.5
            })
            .collect();
        (c, row)
    };
    let (labels, base): (Vec<usize>, Vec<Vec<f32>>) = (0..N).map(point).unzip();
    let queries: Vec<Vec<f32>> = (N..N + QUERIES).map(|i| point(i).1).collect();
    let filters: Vec<(String, Vec<u32>)> = vec![
        ("random_0.5".into(), random_ids(4, 0.5)),
        ("random_0.1".into(), random_ids(5, 0.1)),
        ("correlated_0.1".into(), cluster_ids(&labels, &[3, 11])),
        (
            "correlated_0.01".into(),
            cluster_ids(&labels, &[5])[..20].to_vec(),
        ),
    ];
    std::fs::create_dir_all(dir.join("filters")).expect("mkdir");
    std::fs::create_dir_all(dir.join("gt")).expect("mkdir");
    write_fvecs(&dir.join("base.fvecs"), &base);
    write_fvecs(&dir.join("query.fvecs"), &queries);
    let all: Vec<u32> = (0..N as u32).collect();
    write_ivecs(&dir.join("gt/none.ivecs"), &truth(&base, &queries, &all));
    let mut meta_filters = vec![serde_json::json!({"name": "none", "size": N})];
    for (name, ids) in &filters {
        write_u32(&dir.join(format!("filters/{name}.u32")), ids);
        write_ivecs(
            &dir.join(format!("gt/{name}.ivecs")),
            &truth(&base, &queries, ids),
        );
        meta_filters.push(serde_json::json!({"name": name, "size": ids.len()}));
    }
    let meta = serde_json::json!({
        "name": "tiny-16", "metric": "l2", "n": N, "dim": DIM, "queries": QUERIES,
        "filters": meta_filters,
    });
    std::fs::write(dir.join("meta.json"), meta.to_string()).expect("meta");
}

fn random_ids(salt: u64, fraction: f32) -> Vec<u32> {
    (0..N as u32)
        .filter(|&i| unit((salt, u64::from(i))) < fraction)
        .collect()
}

fn cluster_ids(labels: &[usize], clusters: &[usize]) -> Vec<u32> {
    (0..N as u32)
        .filter(|&i| clusters.contains(&labels[i as usize]))
        .collect()
}

/// Per query, the `GT_K` nearest of `ids` (squared L2), padded with -1.
fn truth(base: &[Vec<f32>], queries: &[Vec<f32>], ids: &[u32]) -> Vec<Vec<i32>> {
    queries
        .iter()
        .map(|q| {
            let mut scored: Vec<(f32, u32)> = ids
                .iter()
                .map(|&i| {
                    let d = base[i as usize]
                        .iter()
                        .zip(q)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum();
                    (d, i)
                })
                .collect();
            scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut row: Vec<i32> = scored.iter().take(GT_K).map(|&(_, i)| i as i32).collect();
            row.resize(GT_K, -1);
            row
        })
        .collect()
}

fn tiny_config(data: &Path) -> AnnConfig {
    AnnConfig {
        efs: vec![16, 64],
        ef_construction: 64,
        // One build thread: a parallel build inserts in a scheduling-dependent order, so
        // the graph (and its recall on 2,000 points) would vary from run to run.
        build_threads: 1,
        min_queries: QUERIES,
        ..AnnConfig::new(data)
    }
}

#[test]
fn bench_reaches_recall_on_every_filter_and_never_comes_up_short() {
    reaches_recall_on_every_filter(VectorStorage::Resident);
}

/// The same with the f32 vectors left in the file: walks on the 8-bit codes, the best
/// candidates re-scored on rows read back, exact scans reading the visible rows.
#[test]
fn compressed_bench_reaches_recall_on_every_filter_and_never_comes_up_short() {
    reaches_recall_on_every_filter(VectorStorage::compressed());
}

fn reaches_recall_on_every_filter(vectors: VectorStorage) {
    let dir = tempfile::tempdir().expect("temp dir");
    write_dataset(dir.path());
    let mut seen = 0;
    let config = AnnConfig {
        vectors,
        ..tiny_config(dir.path())
    };
    let result = run(&config, &NoProgress, &mut |_| seen += 1).expect("bench");
    assert_eq!(seen, result.searches.len());

    let build = result.build.as_ref().expect("a build record");
    assert_eq!(build.n, N);
    assert!(build.index_bytes > (N * DIM * 4) as u64);
    for filter in [
        "none",
        "random_0.5",
        "random_0.1",
        "correlated_0.1",
        "correlated_0.01",
    ] {
        let points: Vec<_> = result
            .searches
            .iter()
            .filter(|s| s.filter == filter)
            .collect();
        let best = points.iter().map(|p| p.recall).fold(0.0, f64::max);
        assert!(best >= 0.95, "{filter}: best recall {best}");
        for p in points {
            assert_eq!(p.short_frac, 0.0, "{filter} ef {:?}", p.ef);
            assert_eq!(p.mean_returned, 10.0);
            assert_eq!(p.n_queries, QUERIES);
            assert_eq!(p.paths.values().sum::<usize>(), QUERIES);
        }
    }

    let json: Value =
        serde_json::from_str(&result.to_json().expect("json").to_string()).expect("parses");
    check_records(&json);
    let markdown = result.markdown();
    assert!(markdown.contains("## Best single-thread QPS at recall@10 >= 0.95"));
    assert!(markdown.contains("| folio |"));
}

/// The records `ann_peers.py --merge` reads, with the kit's fields.
fn check_records(json: &Value) {
    let records = json["records"].as_array().expect("records");
    let build: Vec<&Value> = records.iter().filter(|r| r["type"] == "build").collect();
    assert_eq!(build.len(), 1);
    for field in ["threads", "seconds", "n", "index_bytes"] {
        assert!(build[0][field].is_number(), "build {field}: {}", build[0]);
    }
    let searches: Vec<&Value> = records.iter().filter(|r| r["type"] == "search").collect();
    assert!(!searches.is_empty());
    for r in records {
        assert_eq!(r["peer"], "folio");
    }
    for r in searches {
        assert!(r["filter"].is_string());
        for field in [
            "ef",
            "recall",
            "qps",
            "n_queries",
            "short_frac",
            "mean_returned",
        ] {
            assert!(r[field].is_number(), "search {field}: {r}");
        }
    }
    assert_eq!(json["meta"]["k"], 10);
}

#[test]
fn command_prints_the_kits_tables_and_writes_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("tiny");
    write_dataset(&data);
    let json = dir.path().join("folio.json");
    let store = dir.path().join("ann.folio");
    let args = |extra: &[&str]| {
        let mut args: Vec<String> = ["bench", "ann", "--data"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(data.display().to_string());
        args.extend(["--store".into(), store.display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        Command::new(env!("CARGO_BIN_EXE_folio"))
            .args(args)
            .output()
            .expect("run folio")
    };
    let out = args(&["--ef", "64", "--efc", "64", "--filters", "none,random_0.1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("| peer | none (2000) | random_0.1 ("),
        "{text}"
    );

    // Searching the kept store again, with the records written out.
    let json_arg = json.display().to_string();
    let out = args(&[
        "--reuse-store",
        "--ef",
        "64",
        "--filters",
        "random_0.1",
        "--json",
        &json_arg,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json file")).expect("parses");
    let records = written["records"].as_array().expect("records");
    assert!(records
        .iter()
        .all(|r| r["type"] == "search" && r["filter"] == "random_0.1"));

    // Building into an existing store is refused, not overwritten.
    let out = args(&["--ef", "64"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
}

#[test]
fn dataset_problems_are_typed_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_dataset(dir.path());
    let unknown = Dataset::load(dir.path(), Some(&["random_0.7".to_string()]), None);
    assert!(matches!(unknown, Err(AnnError::UnknownFilter { .. })));

    write_ivecs(&dir.path().join("gt/random_0.1.ivecs"), &[vec![1; GT_K]]);
    let short_truth = Dataset::load(dir.path(), None, None);
    assert!(
        matches!(short_truth, Err(AnnError::Dataset(_))),
        "{short_truth:?}"
    );

    write_u32(&dir.path().join("filters/random_0.5.u32"), &[1, N as u32]);
    let out_of_range = Dataset::load(dir.path(), Some(&["random_0.5".to_string()]), None);
    assert!(
        matches!(out_of_range, Err(AnnError::Dataset(_))),
        "{out_of_range:?}"
    );

    let config = AnnConfig {
        k: GT_K + 1,
        ..tiny_config(dir.path())
    };
    let too_deep = run(
        &AnnConfig {
            filters: Some(vec!["none".into()]),
            ..config
        },
        &NoProgress,
        &mut |_| {},
    );
    assert!(
        matches!(too_deep, Err(AnnError::Dataset(_))),
        "{too_deep:?}"
    );
}
