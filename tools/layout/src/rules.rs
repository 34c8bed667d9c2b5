//! The import rule of ARCHITECTURE.md, checked: no circle between the children of any
//! folder, imports down the layers in each crate's `src/`, external crates only where the
//! block allows them, one file for a type's inherent `impl`, and the file list equal to the
//! tree.

use std::collections::{BTreeMap, BTreeSet};

use crate::doc::{self, Rules};
use crate::files::Files;
use crate::modules::{self, Place};
use crate::resolve::{self, Import};
use crate::workspace::Package;

/// The document holding the rule, from the repository root.
pub const DOC: &str = "ARCHITECTURE.md";

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Where (`path:line`).
    pub place: Place,
    /// What.
    pub message: String,
}

impl Finding {
    fn new(file: &str, line: usize, message: String) -> Finding {
        Finding {
            place: Place {
                file: file.to_string(),
                line,
            },
            message,
        }
    }
}

/// The imports between two children of a folder, by folder (`src/store/`) then edge.
pub type Edges = BTreeMap<String, BTreeMap<(String, String), Vec<Import>>>;

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Violations: the check fails when there is one.
    pub errors: Vec<Finding>,
    /// Paths not resolved, files no crate root reaches.
    pub warnings: Vec<Finding>,
    /// Every edge, for `--list`.
    pub edges: Edges,
}

/// Checks every crate of the `layers` block.
pub fn check(files: &Files, packages: &[Package]) -> Report {
    let mut report = Report::default();
    let Some(text) = files.get(DOC) else {
        report
            .errors
            .push(Finding::new(DOC, 1, "not found".to_string()));
        return report;
    };
    let layers = doc::layers(text);
    for (line, message) in &layers.problems {
        report
            .errors
            .push(Finding::new(DOC, *line, message.clone()));
    }
    let listed = doc::listed(text);
    for package in packages {
        match layers.crates.get(&package.name) {
            Some(rules) => check_crate(files, package, rules, &listed, &mut report),
            None => report.errors.push(Finding::new(
                DOC,
                1,
                format!(
                    "crate `{}` ({}/) has no `[{}]` lines in the layers block",
                    package.name,
                    package.src(),
                    package.name
                ),
            )),
        }
    }
    for (name, rules) in &layers.crates {
        if !packages.iter().any(|p| &p.name == name) {
            report.errors.push(Finding::new(
                DOC,
                rules.line,
                format!("`[{name}]` is not a package of the workspace"),
            ));
        }
    }
    report.errors.sort();
    report.errors.dedup();
    report.warnings.sort();
    report
}

/// Every rule on one crate of the block.
fn check_crate(
    files: &Files,
    package: &Package,
    rules: &Rules,
    listed: &[(String, usize)],
    report: &mut Report,
) {
    let src = package.src();
    let watched: Vec<String> = rules.only.iter().map(|(name, _)| name.clone()).collect();
    let tree = modules::load(files, &src, &package.lib_name, &watched);
    for (place, message) in &tree.problems {
        report.errors.push(Finding {
            place: place.clone(),
            message: message.clone(),
        });
    }
    let found = resolve::imports(&tree);
    for (place, text) in &found.unresolved {
        report.warnings.push(Finding {
            place: place.clone(),
            message: format!("warning: unresolved `{text}`"),
        });
    }
    let reached: BTreeSet<&str> = tree.modules.iter().map(|m| m.file.as_str()).collect();
    for file in files.rust_files(&src) {
        if !reached.contains(file.as_str()) {
            report.warnings.push(Finding::new(
                &file,
                1,
                "warning: no `mod` declaration reaches this file".to_string(),
            ));
        }
    }

    let mut edges = Edges::new();
    for import in found.imports {
        if let Some((folder, a, b)) = edge(&src, &import.from.file, &import.to) {
            edges
                .entry(folder)
                .or_default()
                .entry((a, b))
                .or_default()
                .push(import);
        }
    }
    for imports in edges.values_mut().flat_map(|e| e.values_mut()) {
        imports.sort_by(|x, y| x.from.cmp(&y.from));
    }
    for (folder, folder_edges) in &edges {
        circles(folder, folder_edges, &mut report.errors);
    }
    layer_order(
        &src,
        files,
        rules,
        edges.get(&format!("{src}/")),
        &mut report.errors,
    );
    confined(&src, rules, &found.external, &mut report.errors);
    one_impl_file(rules, &tree.impls, &mut report.errors);
    file_list(&src, files, listed, &mut report.errors);
    report.edges.extend(edges);
}

/// Rule 3: a crate named by a `NAME-only:` line is used only in the places it names.
fn confined(
    src: &str,
    rules: &Rules,
    external: &[(Place, String, String)],
    out: &mut Vec<Finding>,
) {
    for (place, name, text) in external {
        let Some((_, places)) = rules.only.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let rel = place
            .file
            .strip_prefix(&format!("{src}/"))
            .unwrap_or(&place.file);
        if !places.iter().any(|p| {
            if p.ends_with('/') {
                rel.starts_with(p.as_str())
            } else {
                rel == p
            }
        }) {
            let allowed = if places.is_empty() {
                "nowhere in this crate".to_string()
            } else {
                places.join(" ")
            };
            out.push(Finding {
                place: place.clone(),
                message: format!("`{name}` used outside its places ({allowed}): `{text}`"),
            });
        }
    }
}

/// Rule 4: a type named by a `one-impl:` line has its inherent `impl`s in one file.
fn one_impl_file(rules: &Rules, impls: &[(String, Place)], out: &mut Vec<Finding>) {
    for ty in &rules.one_impl {
        let mut first: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, place) in impls {
            if name == ty {
                let line = first.entry(&place.file).or_insert(place.line);
                *line = (*line).min(place.line);
            }
        }
        if first.len() > 1 {
            for (file, line) in &first {
                out.push(Finding::new(
                    file,
                    *line,
                    format!("inherent `impl {ty}` in {} files, one allowed", first.len()),
                ));
            }
        }
    }
}

/// The folder (from the repository root, ending in `/`) deepest holding both files, and
/// the children of it holding each (`x.rs`, or `x/`); `None` when one child holds both.
pub fn edge(src: &str, from: &str, to: &str) -> Option<(String, String, String)> {
    let prefix = format!("{src}/");
    let a: Vec<&str> = from.strip_prefix(&prefix)?.split('/').collect();
    let b: Vec<&str> = to.strip_prefix(&prefix)?.split('/').collect();
    let mut k = 0;
    while k + 1 < a.len() && k + 1 < b.len() && a[k] == b[k] {
        k += 1;
    }
    let child = |parts: &[&str]| {
        if k + 1 < parts.len() {
            format!("{}/", parts[k])
        } else {
            parts[k].to_string()
        }
    };
    let (ca, cb) = (child(&a), child(&b));
    if ca == cb {
        return None;
    }
    let folder = if k == 0 {
        prefix
    } else {
        format!("{prefix}{}/", a[..k].join("/"))
    };
    Some((folder, ca, cb))
}

/// Rule 1: the edges between a folder's children form no circle. Each set of children tied
/// by circles is reported once with its members, then each of its edges with one import and
/// the shortest circle through it.
fn circles(folder: &str, edges: &BTreeMap<(String, String), Vec<Import>>, out: &mut Vec<Finding>) {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    // The shortest path from `from` to `to` (both included), if any.
    let path = |from: &str, to: &str| -> Option<Vec<String>> {
        let mut back: BTreeMap<&str, &str> = BTreeMap::new();
        let mut todo = std::collections::VecDeque::from([from]);
        while let Some(node) = todo.pop_front() {
            if node == to {
                let mut out = vec![to.to_string()];
                let mut at = to;
                while at != from {
                    at = back[at];
                    out.push(at.to_string());
                }
                out.reverse();
                return Some(out);
            }
            for &n in next.get(node).into_iter().flatten() {
                if n != from && !back.contains_key(n) {
                    back.insert(n, node);
                    todo.push_back(n);
                }
            }
        }
        None
    };
    let mut groups: Vec<BTreeSet<&str>> = Vec::new();
    for (a, b) in edges.keys() {
        if path(b, a).is_none() || groups.iter().any(|g| g.contains(a.as_str())) {
            continue;
        }
        let tied = |m: &str| m == a || (path(a, m).is_some() && path(m, a).is_some());
        groups.push(next.keys().copied().filter(|m| tied(m)).collect());
    }
    for group in groups {
        let inside = edges
            .iter()
            .find(|((a, b), _)| group.contains(a.as_str()) && group.contains(b.as_str()));
        if let Some((_, imports)) = inside {
            let names: Vec<&str> = group.into_iter().collect();
            out.push(Finding {
                place: imports[0].from.clone(),
                message: format!(
                    "circle in {folder}: {} children tied: {}",
                    names.len(),
                    names.join(" ")
                ),
            });
        }
    }
    for ((a, b), imports) in edges {
        if let Some(cycle) = path(b, a) {
            out.push(Finding {
                place: imports[0].from.clone(),
                message: format!(
                    "circle in {folder}: {a} -> {}, by `{}`{}",
                    cycle.join(" -> "),
                    imports[0].text,
                    more(imports.len())
                ),
            });
        }
    }
}

fn more(count: usize) -> String {
    match count {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    }
}

/// Rule 2: in `src/`, every entry is in a layer and imports go down the layers.
fn layer_order(
    src: &str,
    files: &Files,
    rules: &Rules,
    edges: Option<&BTreeMap<(String, String), Vec<Import>>>,
    out: &mut Vec<Finding>,
) {
    let prefix = format!("{src}/");
    let entries: BTreeSet<String> = files
        .rust_files(src)
        .iter()
        .filter_map(|f| f.strip_prefix(&prefix))
        .map(|rel| match rel.split_once('/') {
            Some((folder, _)) => format!("{folder}/"),
            None => rel.to_string(),
        })
        .collect();
    for entry in &entries {
        if rules.layer_of(entry).is_none() {
            out.push(Finding::new(
                DOC,
                rules.line,
                format!("`{entry}` ({prefix}) is not placed in a layer"),
            ));
        }
    }
    for (entry, line) in &rules.lines {
        if !entries.contains(entry) {
            out.push(Finding::new(
                DOC,
                *line,
                format!("`{entry}` is in a layer but not in {prefix}"),
            ));
        }
    }
    for ((a, b), imports) in edges.into_iter().flatten() {
        let (Some(la), Some(lb)) = (rules.layer_of(a), rules.layer_of(b)) else {
            continue;
        };
        let kind = if la > lb {
            "upward import"
        } else if la == lb && !rules.allowed.iter().any(|(x, y)| x == a && y == b) {
            "import inside one layer"
        } else {
            continue;
        };
        let first = &imports[0];
        out.push(Finding {
            place: first.from.clone(),
            message: format!(
                "{kind} in {prefix}: {a} (layer {}) -> {b} (layer {}) by `{}`{}",
                la + 1,
                lb + 1,
                first.text,
                more(imports.len())
            ),
        });
    }
}

/// ARCHITECTURE.md lists every folder and `.rs` file under `src`, and nothing else there.
fn file_list(src: &str, files: &Files, listed: &[(String, usize)], out: &mut Vec<Finding>) {
    let prefix = format!("{src}/");
    let mut tree: BTreeSet<String> = files.rust_files(src).into_iter().collect();
    tree.extend(files.rust_folders(src));
    let mut named = BTreeSet::new();
    for (path, line) in listed {
        if !path.starts_with(&prefix) || path == &prefix {
            continue;
        }
        named.insert(path.as_str());
        if (path.ends_with(".rs") || path.ends_with('/')) && !tree.contains(path) {
            out.push(Finding::new(
                DOC,
                *line,
                format!("`{path}` is listed but not in the tree"),
            ));
        }
    }
    for path in &tree {
        if !named.contains(path.as_str()) {
            out.push(Finding::new(
                path,
                1,
                format!("in the tree but not listed in {DOC}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace;

    /// A workspace of one crate `app`, its ARCHITECTURE.md listing every file.
    fn run(block: &str, sources: &[(&str, &str)]) -> Report {
        let mut list = String::from("## `src/`\n");
        let mut folders = BTreeSet::new();
        for (path, _) in sources {
            let rel = path.trim_start_matches("src/");
            list.push_str(&format!("| `{rel}` | x |\n"));
            if let Some((folder, _)) = rel.rsplit_once('/') {
                folders.insert(format!("{folder}/"));
            }
        }
        for folder in folders {
            list.push_str(&format!("| `{folder}` | x |\n"));
        }
        let doc = format!("# Architecture\n\n```layers\n[app]\n{block}\n```\n\n{list}");
        let mut pairs = vec![
            ("Cargo.toml", "[package]\nname = \"app\"\n"),
            (DOC, doc.as_str()),
        ];
        pairs.extend(sources.iter().copied());
        let files = Files::from_pairs(pairs);
        let packages = workspace::packages(&files, &[String::new()]);
        check(&files, &packages)
    }

    fn lines(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .map(|f| format!("{}:{}: {}", f.place.file, f.place.line, f.message))
            .collect()
    }

    #[test]
    fn a_clean_crate_passes() {
        let report = run(
            "lib.rs\nstore/\nchunk/ embed/\nallow: chunk/ -> embed/\nredb-only: store/\none-impl: Store",
            &[
                ("src/lib.rs", "pub mod store;\npub mod chunk;\npub mod embed;\npub use store::Store;"),
                ("src/store/mod.rs", "mod open;\npub use open::Store;\nuse crate::chunk::cut;"),
                ("src/store/open.rs", "use redb::Database;\npub struct Store;\nimpl Store {}"),
                ("src/chunk/mod.rs", "pub fn cut() { crate::embed::go(); }"),
                ("src/embed/mod.rs", "pub fn go() {}\n#[cfg(test)]\nmod tests { use crate::store::Store; }"),
            ],
        );
        assert_eq!(lines(&report.errors), Vec::<String>::new());
        assert!(report.warnings.is_empty());
        let root = &report.edges["src/"];
        assert!(root.contains_key(&("store/".to_string(), "chunk/".to_string())));
        // `pub use store::Store` in lib.rs passes the name through: not an edge.
        assert!(!root.contains_key(&("lib.rs".to_string(), "store/".to_string())));
    }

    /// A path through a facade's re-export (`crate::store::X`, `store.rs` re-exporting
    /// `storage`'s `X`) imports the facade too: a circle when the facade uses the importer.
    #[test]
    fn a_path_through_a_re_export_imports_the_facade() {
        let report = run(
            "lib.rs
store.rs
query.rs
storage.rs",
            &[
                (
                    "src/lib.rs",
                    "mod store;
mod query;
mod storage;",
                ),
                (
                    "src/store.rs",
                    "pub use crate::storage::X;
pub fn s() { crate::query::q(); }",
                ),
                (
                    "src/query.rs",
                    "use crate::store::X;
pub fn q() {}",
                ),
                ("src/storage.rs", "pub struct X;"),
            ],
        );
        assert_eq!(
            lines(&report.errors),
            [
                "src/query.rs:1: circle in src/: 2 children tied: query.rs store.rs",
                "src/query.rs:1: circle in src/: query.rs -> store.rs -> query.rs, by `crate::store::X`",
                "src/query.rs:1: upward import in src/: query.rs (layer 3) -> store.rs (layer 2) by `crate::store::X`",
                "src/store.rs:2: circle in src/: store.rs -> query.rs -> store.rs, by `crate::query::q`",
            ]
        );
    }

    #[test]
    fn circles_in_any_folder() {
        let report = run(
            "lib.rs\nstore/",
            &[
                ("src/lib.rs", "mod store;"),
                (
                    "src/store/mod.rs",
                    "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\npub struct S;",
                ),
                ("src/store/a.rs", "use super::b::B;\npub struct A;"),
                ("src/store/b.rs", "use super::c::C;\npub struct B;"),
                (
                    "src/store/c.rs",
                    "use super::a::A;\nuse super::a::A as Again;\npub struct C;\nuse super::d::D;",
                ),
                (
                    "src/store/d.rs",
                    "pub struct D;\nuse super::S;\nfn f() { super::e::g(); }",
                ),
                ("src/store/e.rs", "pub fn g() {}\nuse super::d::D;"),
            ],
        );
        assert_eq!(
            lines(&report.errors),
            [
                "src/store/a.rs:1: circle in src/store/: 3 children tied: a.rs b.rs c.rs",
                "src/store/a.rs:1: circle in src/store/: a.rs -> b.rs -> c.rs -> a.rs, by `super::b::B`",
                "src/store/b.rs:1: circle in src/store/: b.rs -> c.rs -> a.rs -> b.rs, by `super::c::C`",
                "src/store/c.rs:1: circle in src/store/: c.rs -> a.rs -> b.rs -> c.rs, by `super::a::A` (and 1 more)",
                // `mod d;` in mod.rs is no import, so d.rs may use what mod.rs defines.
                "src/store/d.rs:3: circle in src/store/: 2 children tied: d.rs e.rs",
                "src/store/d.rs:3: circle in src/store/: d.rs -> e.rs -> d.rs, by `super::e::g`",
                "src/store/e.rs:2: circle in src/store/: e.rs -> d.rs -> e.rs, by `super::d::D`",
            ]
        );
    }

    #[test]
    fn layers_go_down() {
        let report = run(
            "lib.rs\nretrieve/\nstore/\nchunk/ embed/ index/\nallow: chunk/ -> index/",
            &[
                (
                    "src/lib.rs",
                    "mod retrieve; mod store; mod chunk; mod embed; mod index; mod extra;",
                ),
                (
                    "src/retrieve/mod.rs",
                    "pub struct SourceError;\nuse crate::store::S;",
                ),
                (
                    "src/store/mod.rs",
                    "pub struct S;\nuse crate::retrieve::SourceError;",
                ),
                (
                    "src/chunk/mod.rs",
                    "use crate::embed::E;\nuse crate::index::I;",
                ),
                ("src/embed/mod.rs", "pub struct E;"),
                ("src/index/mod.rs", "pub struct I;"),
                ("src/extra.rs", "use crate::index::I;"),
            ],
        );
        assert_eq!(
            lines(&report.errors),
            [
                "ARCHITECTURE.md:4: `extra.rs` (src/) is not placed in a layer",
                "src/chunk/mod.rs:1: import inside one layer in src/: chunk/ (layer 4) -> embed/ (layer 4) by `crate::embed::E`",
                "src/retrieve/mod.rs:2: circle in src/: 2 children tied: retrieve/ store/",
                "src/retrieve/mod.rs:2: circle in src/: retrieve/ -> store/ -> retrieve/, by `crate::store::S`",
                "src/store/mod.rs:2: circle in src/: store/ -> retrieve/ -> store/, by `crate::retrieve::SourceError`",
                "src/store/mod.rs:2: upward import in src/: store/ (layer 3) -> retrieve/ (layer 2) by `crate::retrieve::SourceError`",
            ]
        );
    }

    #[test]
    fn confined_crates_and_one_impl_file() {
        let report = run(
            "lib.rs\nstore/ other.rs\nallow: store/ -> other.rs\nredb-only: store/\none-impl: Store",
            &[
                ("src/lib.rs", "mod store;\nmod other;"),
                ("src/store/mod.rs", "use redb::Database;\npub struct Store;\nimpl Store {}\nimpl Drop for Store {}\nmod more;\nuse crate::other::f;"),
                ("src/store/more.rs", "impl super::Store {}\nimpl super::Store {}"),
                ("src/other.rs", "pub fn f() { let _ = redb::Builder::new(); }\n#[cfg(test)]\nfn t() { redb::x(); }\npub use redb::Error;"),
            ],
        );
        assert_eq!(
            lines(&report.errors),
            [
                "src/other.rs:1: `redb` used outside its places (store/): `redb::Builder::new`",
                "src/other.rs:4: `redb` used outside its places (store/): `redb::Error`",
                "src/store/mod.rs:3: inherent `impl Store` in 2 files, one allowed",
                "src/store/more.rs:1: inherent `impl Store` in 2 files, one allowed",
            ]
        );
    }

    #[test]
    fn the_file_list_matches_the_tree() {
        let doc = "```layers\n[app] lib.rs a/\n```\n## `src/`\n| `lib.rs` | x |\n| `a/mod.rs`, `gone.rs` | x |\n| `old/` | x |\n";
        let files = Files::from_pairs([
            ("Cargo.toml", "[package]\nname = \"app\"\n"),
            (DOC, doc),
            ("src/lib.rs", "mod a;"),
            ("src/a/mod.rs", "mod b;"),
            ("src/a/b.rs", ""),
            ("src/stray.rs", ""),
        ]);
        let report = check(&files, &workspace::packages(&files, &[String::new()]));
        assert_eq!(
            lines(&report.errors),
            [
                "ARCHITECTURE.md:2: `stray.rs` (src/) is not placed in a layer",
                "ARCHITECTURE.md:6: `src/gone.rs` is listed but not in the tree",
                "ARCHITECTURE.md:7: `src/old/` is listed but not in the tree",
                "src/a/:1: in the tree but not listed in ARCHITECTURE.md",
                "src/a/b.rs:1: in the tree but not listed in ARCHITECTURE.md",
                "src/stray.rs:1: in the tree but not listed in ARCHITECTURE.md",
            ]
        );
        assert_eq!(
            lines(&report.warnings),
            ["src/stray.rs:1: warning: no `mod` declaration reaches this file"]
        );
    }

    #[test]
    fn crates_and_block_agree() {
        let files = Files::from_pairs([
            ("Cargo.toml", "[workspace]\nmembers = [\"a\", \"b\"]\n"),
            ("a/Cargo.toml", "[package]\nname = \"a\"\n"),
            ("b/Cargo.toml", "[package]\nname = \"b\"\n"),
            (DOC, "```layers\n[a]\n[ghost] lib.rs\n```\n"),
        ]);
        let packages = workspace::packages(
            &files,
            &workspace::members(files.get("Cargo.toml").unwrap()),
        );
        assert_eq!(
            lines(&check(&files, &packages).errors),
            [
                "ARCHITECTURE.md:1: crate `b` (b/src/) has no `[b]` lines in the layers block",
                "ARCHITECTURE.md:3: `[ghost]` is not a package of the workspace",
            ]
        );
    }

    #[test]
    fn edges_between_children() {
        let e = |a, b| edge("src", a, b);
        let some = |f: &str, a: &str, b: &str| Some((f.to_string(), a.to_string(), b.to_string()));
        assert_eq!(
            e("src/store/error.rs", "src/retrieve/source.rs"),
            some("src/", "store/", "retrieve/")
        );
        assert_eq!(
            e("src/store/read.rs", "src/store/state.rs"),
            some("src/store/", "read.rs", "state.rs")
        );
        assert_eq!(
            e("src/eval/ann/build.rs", "src/eval/ann.rs"),
            some("src/eval/", "ann/", "ann.rs")
        );
        assert_eq!(
            e("src/main.rs", "src/cli/mod.rs"),
            some("src/", "main.rs", "cli/")
        );
        assert_eq!(
            e("src/a/x/y.rs", "src/a/x/z/w.rs"),
            some("src/a/x/", "y.rs", "z/")
        );
        assert_eq!(
            edge("python/src", "python/src/lib.rs", "python/src/store.rs"),
            some("python/src/", "lib.rs", "store.rs")
        );
    }
}
