//! The source code reader (tree-sitter): a Rust module and a Python module the tests carry
//! (`tests/data/code/`), and small JavaScript, TypeScript and Go files. One chunk per
//! top-level item, named by its section path (`impl Store > fn search`); an item longer than
//! a child is split at its inner items, and one of those only between statements; no item is
//! cut while it fits; the chunks cover the source; the embedded text carries the path, the
//! imports the chunk names and the declarations it is inside. The items and statements are
//! found here with tree-sitter directly, not through folio's reading.

use folio::chunk::{
    chunk_document, ChildStrategy, ChunkSpec, Chunked, EmbedTexts, ParentStrategy, SourceFormat,
    Span,
};
use folio_testkit::chunks::{check, check_any_format};
use proptest::prelude::*;
use tree_sitter::{Language, Node, Parser};

const STORE_RS: &str = include_str!("../data/code/store.rs");
const BILLING_PY: &str = include_str!("../data/code/billing.py");

fn spec(target: usize) -> ChunkSpec {
    ChunkSpec {
        child: ChildStrategy::Structure { target, overlap: 0 },
        parent: ParentStrategy::Child,
        heading_depth: 2,
        ..ChunkSpec::default()
    }
}

/// Chunks `text` and checks the whole chunking contract (coverage exactly once included).
fn chunked(text: &str, format: SourceFormat, target: usize) -> Chunked {
    let spec = spec(target);
    let out = chunk_document(text, format, &spec);
    check(text, format, &spec, &out).unwrap_or_else(|e| panic!("{format:?} {target}: {e}"));
    out
}

/// The section paths of the children, joined by ` > `, consecutive repeats once.
fn paths(out: &Chunked) -> Vec<String> {
    let mut got: Vec<String> = out
        .children
        .iter()
        .map(|c| c.section_path.join(" > "))
        .collect();
    got.dedup();
    got
}

fn language(format: SourceFormat) -> Language {
    match format {
        SourceFormat::Rust => tree_sitter_rust::LANGUAGE.into(),
        SourceFormat::Python => tree_sitter_python::LANGUAGE.into(),
        SourceFormat::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        SourceFormat::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        SourceFormat::Go => tree_sitter_go::LANGUAGE.into(),
        other => panic!("no grammar for {other:?}"),
    }
}

/// Every node of `text` of one of `kinds`, at any depth.
fn nodes(text: &str, format: SourceFormat, kinds: &[&str]) -> Vec<(Span, Vec<Span>)> {
    let mut parser = Parser::new();
    parser.set_language(&language(format)).unwrap();
    let tree = parser.parse(text, None).unwrap();
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if kinds.contains(&node.kind()) {
            out.push((span(node), body_statements(node)));
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    out.sort_by_key(|(s, _)| s.start);
    out
}

fn span(node: Node<'_>) -> Span {
    Span {
        start: node.start_byte(),
        end: node.end_byte(),
    }
}

/// The statements of a function's body (and the comments among them).
fn body_statements(node: Node<'_>) -> Vec<Span> {
    let Some(body) = node.child_by_field_name("body") else {
        return Vec::new();
    };
    let mut cursor = body.walk();
    let statements = body.named_children(&mut cursor).map(span).collect();
    statements
}

fn chars(text: &str, span: Span) -> usize {
    text[span.start..span.end].chars().count()
}

/// No item that fits a child is cut: each lies inside one child.
fn items_whole(text: &str, out: &Chunked, items: &[(Span, Vec<Span>)], target: usize) {
    for (item, _) in items.iter().filter(|(s, _)| chars(text, *s) <= target) {
        let whole = out
            .children
            .iter()
            .any(|c| c.span.start <= item.start && item.end <= c.span.end);
        assert!(
            whole,
            "{target}: item cut although it fits: {:?}",
            &text[item.start..item.end]
        );
    }
}

/// A function longer than a child is cut only where one of its body's statements starts.
fn cut_between_statements(text: &str, out: &Chunked, functions: &[(Span, Vec<Span>)]) {
    for (function, statements) in functions {
        for c in &out.children {
            if function.start < c.span.start && c.span.start < function.end {
                // Comments among the statements are the body's children too.
                assert!(
                    statements.iter().any(|s| s.start == c.span.start),
                    "cut mid-statement at {}: {:?}",
                    c.span.start,
                    &text[c.span.start..c.span.end.min(c.span.start + 60)]
                );
            }
        }
    }
}

const RUST_ITEMS: &[&str] = &[
    "function_item",
    "struct_item",
    "enum_item",
    "impl_item",
    "trait_item",
    "mod_item",
];

#[test]
fn rust_one_chunk_per_item_and_methods_when_too_long() {
    let whole = chunked(STORE_RS, SourceFormat::Rust, 3000);
    assert_eq!(
        paths(&whole),
        [
            "",
            "struct Doc",
            "struct Hit",
            "enum Scoring",
            "struct Store",
            "impl Store",
            "impl fmt::Display for Store",
            "trait Searcher",
            "mod tests",
        ]
    );
    // One chunk per item: the loose head (module docs, imports, a constant) is one too.
    assert_eq!(whole.children.len(), 9);
    let impl_chunk = &whole.children[5];
    assert!(STORE_RS[impl_chunk.span.start..].starts_with("impl Store {"));

    let out = chunked(STORE_RS, SourceFormat::Rust, 600);
    assert_eq!(
        paths(&out),
        [
            "",
            "struct Doc",
            "struct Hit",
            "enum Scoring",
            "struct Store",
            "impl Store > fn new",
            "impl Store > fn upsert",
            "impl Store > fn remove",
            "impl Store > fn search",
            "impl Store > fn readable",
            "impl Store > fn len",
            "impl fmt::Display for Store",
            "trait Searcher",
            "mod tests",
        ]
    );
    // The impl's declaration goes with its first method, its closing brace with the last.
    let first = out
        .children
        .iter()
        .find(|c| c.section_path.last().is_some_and(|t| t == "fn new"))
        .unwrap();
    assert!(STORE_RS[first.span.start..].starts_with("impl Store {\n    /// An empty store"));
    let last = out
        .children
        .iter()
        .find(|c| c.section_path.last().is_some_and(|t| t == "fn len"))
        .unwrap();
    assert!(STORE_RS[..last.span.end].ends_with("self.docs.len()\n    }\n}"));
    // Doc comments and attributes stay with their item.
    let doc = out
        .children
        .iter()
        .find(|c| c.section_path == ["struct Doc"])
        .unwrap();
    assert!(STORE_RS[doc.span.start..].starts_with("/// One stored document.\n#[derive"));

    for target in [200, 600, 1000, 3000] {
        let out = chunked(STORE_RS, SourceFormat::Rust, target);
        items_whole(
            STORE_RS,
            &out,
            &nodes(STORE_RS, SourceFormat::Rust, RUST_ITEMS),
            target,
        );
    }
    // `search` (1,215 characters) is cut between its statements only.
    let functions = nodes(STORE_RS, SourceFormat::Rust, &["function_item"]);
    cut_between_statements(STORE_RS, &out, &functions);
    let search = out
        .children
        .iter()
        .filter(|c| c.section_path.last().is_some_and(|t| t == "fn search"))
        .count();
    assert!(search >= 2);
}

#[test]
fn python_classes_split_at_methods() {
    let out = chunked(BILLING_PY, SourceFormat::Python, 600);
    assert_eq!(
        paths(&out),
        [
            "",
            "class LineItem",
            "class Invoice > def add",
            "class Invoice > def net",
            "class Invoice > def vat",
            "class Invoice > def gross",
            "class Invoice > def render",
            "def monthly_run",
            "",
        ]
    );
    // The decorated class starts at its decorator, the docstring and fields go with the
    // first method.
    let add = out
        .children
        .iter()
        .find(|c| c.section_path.last().is_some_and(|t| t == "def add"))
        .unwrap();
    assert!(BILLING_PY[add.span.start..].starts_with("@dataclass\nclass Invoice:"));
    let kinds = ["function_definition", "class_definition"];
    for target in [150, 400, 600, 1500] {
        let out = chunked(BILLING_PY, SourceFormat::Python, target);
        items_whole(
            BILLING_PY,
            &out,
            &nodes(BILLING_PY, SourceFormat::Python, &kinds),
            target,
        );
    }
    let functions = nodes(BILLING_PY, SourceFormat::Python, &["function_definition"]);
    cut_between_statements(BILLING_PY, &out, &functions);
    let whole = chunked(BILLING_PY, SourceFormat::Python, 1500);
    assert_eq!(
        paths(&whole),
        ["", "class LineItem", "class Invoice", "def monthly_run", ""]
    );
}

#[test]
fn embedded_text_has_the_path_the_imports_used_and_the_declarations_around() {
    let out = chunked(STORE_RS, SourceFormat::Rust, 600);
    let embed = EmbedTexts::new(STORE_RS, SourceFormat::Rust).with_path("src/store.rs");
    let search: Vec<_> = out
        .children
        .iter()
        .filter(|c| c.section_path.last().is_some_and(|t| t == "fn search"))
        .collect();
    let first = embed.get(&search[0].section_path, search[0].span, 2);
    let shown = &STORE_RS[search[0].span.start..search[0].span.end];
    assert!(
        shown.starts_with("    /// The best `k` documents") || shown.starts_with("/// The best")
    );
    assert_eq!(
        first,
        format!(
            "src/store.rs > impl Store > fn search\n\
             use std::collections::{{BTreeMap, HashMap}};\n\
             impl Store\n\n{shown}"
        )
    );
    // A later piece of the method is told the method's signature too, and the imports
    // it uses (only those).
    let later = embed.get(&search[1].section_path, search[1].span, 2);
    assert!(
        later.starts_with(
            "src/store.rs > impl Store > fn search\n\
             use crate::text::{normalize, tokens};\n\
             impl Store\n\
             pub fn search(&self, query: &str, principal: &str, k: usize) -> Vec<Hit>\n\n"
        ),
        "{later}"
    );
    // A field named `text` does not bring in `use crate::text::…`: only imported names count.
    let doc = out
        .children
        .iter()
        .find(|c| c.section_path == ["struct Doc"])
        .unwrap();
    assert!(embed
        .get(&doc.section_path, doc.span, 2)
        .starts_with("src/store.rs > struct Doc\n\n/// One stored document."));
    // Without a path, the section path alone heads it; the shown text never has a header.
    let bare = EmbedTexts::new(STORE_RS, SourceFormat::Rust);
    assert!(bare
        .get(&search[0].section_path, search[0].span, 1)
        .starts_with("impl Store\nuse std::collections"));
    let py = chunked(BILLING_PY, SourceFormat::Python, 600);
    let embed = EmbedTexts::new(BILLING_PY, SourceFormat::Python).with_path("billing.py");
    let vat = py
        .children
        .iter()
        .find(|c| c.section_path.last().is_some_and(|t| t == "def vat"))
        .unwrap();
    let text = embed.get(&vat.section_path, vat.span, 2);
    assert!(
        text.starts_with(
            "billing.py > class Invoice > def vat\n\
             from decimal import Decimal, ROUND_HALF_UP\n\
             @dataclass class Invoice:\n\n"
        ),
        "{text}"
    );
}

const APP_JS: &str = r#"import { readFile } from "node:fs/promises";
import path from "node:path";

// Where templates live.
const ROOT = path.resolve("templates");

/** Loads a template by name. */
export async function load(name) {
  const file = path.join(ROOT, `${name}.html`);
  return readFile(file, "utf8");
}

export class Renderer {
  constructor(cache) {
    this.cache = cache;
  }

  async render(name, values) {
    const template = this.cache.get(name) ?? (await load(name));
    return template.replace(/{{(\w+)}}/g, (_, key) => values[key] ?? "");
  }
}

export const escape = (s) => s.replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`);
"#;

const API_TS: &str = r#"import type { Request } from "./http";

export interface Hit {
  id: string;
  score: number;
}

export type Filter = (hit: Hit) => boolean;

export enum Order {
  Score,
  Id,
}

export class Client {
  constructor(private base: string) {}

  async search(query: string, k = 10): Promise<Hit[]> {
    const res = await fetch(`${this.base}/search?q=${encodeURIComponent(query)}&k=${k}`);
    return (await res.json()) as Hit[];
  }
}

namespace Internal {
  export function sign(req: Request): string {
    return req.url;
  }
}
"#;

const SERVER_GO: &str = r#"// Package server answers search requests over HTTP.
package server

import (
	"encoding/json"
	"net/http"
)

// Server holds the index it searches.
type Server struct {
	index Index
}

// Index is what a server searches.
type Index interface {
	Search(query string, k int) []string
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hits := s.index.Search(r.URL.Query().Get("q"), 10)
	json.NewEncoder(w).Encode(hits)
}

func New(index Index) *Server {
	return &Server{index: index}
}
"#;

#[test]
fn javascript_typescript_and_go_items() {
    let cases: [(SourceFormat, &str, &[&str]); 3] = [
        (
            SourceFormat::JavaScript,
            APP_JS,
            &["", "function load", "class Renderer", "const escape"],
        ),
        (
            SourceFormat::TypeScript,
            API_TS,
            &[
                "",
                "interface Hit",
                "type Filter",
                "enum Order",
                "class Client",
                "namespace Internal",
            ],
        ),
        (
            SourceFormat::Go,
            SERVER_GO,
            &[
                "",
                "type Server",
                "type Index",
                "func (s *Server) ServeHTTP",
                "func New",
            ],
        ),
    ];
    for (format, text, want) in cases {
        let out = chunked(text, format, 1000);
        assert_eq!(paths(&out), want, "{format:?}");
        assert_eq!(
            out.children.len(),
            want.len(),
            "{format:?}: one chunk per item"
        );
        check_any_format(text, format).unwrap();
    }
    // Too long for one child: the class is split at its methods.
    let out = chunked(API_TS, SourceFormat::TypeScript, 150);
    let client: Vec<String> = paths(&out)
        .into_iter()
        .filter(|p| p.starts_with("class Client"))
        .collect();
    assert_eq!(
        client,
        ["class Client > constructor", "class Client > search"]
    );
    let go = chunked(SERVER_GO, SourceFormat::Go, 1000);
    let embed = EmbedTexts::new(SERVER_GO, SourceFormat::Go).with_path("server/server.go");
    let serve = go
        .children
        .iter()
        .find(|c| c.section_path == ["func (s *Server) ServeHTTP"])
        .unwrap();
    let text = embed.get(&serve.section_path, serve.span, 2);
    assert!(text.starts_with("server/server.go > func (s *Server) ServeHTTP\nimport ( \"encoding/json\" \"net/http\" )\n\n// ServeHTTP"), "{text}");
}

const CONF_JS: &str = r#"const fs = require("fs");
const { join } = require("node:path");
var yaml = require("js-yaml").default, YAML_OPTS = require("./opts");
require("./polyfill");
const cache = new Map();

function load(name) {
  return cache.get(name) ?? yaml.load(fs.readFileSync(join("conf", name), "utf8"));
}

function lazy() {
  const extra = require("./extra");
  return extra.run();
}
"#;

#[test]
fn commonjs_requires_are_imports_in_the_embedded_text() {
    use folio::chunk::tree::BlockKind;
    for format in [SourceFormat::JavaScript, SourceFormat::TypeScript] {
        let tree = folio::chunk::readers::code::read(CONF_JS, format).unwrap();
        let imports: Vec<&str> = tree
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Import)
            .map(|b| &CONF_JS[b.span.start..b.span.end])
            .collect();
        // Every top-level `require`, alone or declared; not a declaration of another value.
        assert_eq!(
            imports,
            [
                "const fs = require(\"fs\");",
                "const { join } = require(\"node:path\");",
                "var yaml = require(\"js-yaml\").default, YAML_OPTS = require(\"./opts\");",
                "require(\"./polyfill\");",
            ],
            "{format:?}"
        );
        let out = chunked(CONF_JS, format, 1000);
        assert_eq!(
            paths(&out),
            ["", "function load", "function lazy"],
            "{format:?}"
        );
        let embed = EmbedTexts::new(CONF_JS, format).with_path("conf.js");
        let header = |title: &str| {
            let c = out
                .children
                .iter()
                .find(|c| c.section_path == [title])
                .unwrap();
            let text = embed.get(&c.section_path, c.span, 2);
            let shown = &CONF_JS[c.span.start..c.span.end];
            text.strip_suffix(shown).unwrap().to_string()
        };
        // The requires `load` names head its text; `cache`, a plain constant, does not.
        assert_eq!(
            header("function load"),
            "conf.js > function load\n\
             const fs = require(\"fs\");\n\
             const { join } = require(\"node:path\");\n\
             var yaml = require(\"js-yaml\").default, YAML_OPTS = require(\"./opts\");\n\n",
            "{format:?}"
        );
        assert_eq!(header("function lazy"), "conf.js > function lazy\n\n");
    }
}

#[test]
fn a_statement_longer_than_a_child_is_cut_at_lines() {
    let rows: String = (0..40)
        .map(|i| format!("        ({i}, \"row {i}\"),\n"))
        .collect();
    let text = format!(
        "fn table() -> Vec<(u32, &'static str)> {{\n    let x = 1;\n    vec![\n{rows}    ]\n}}\n"
    );
    let out = chunked(&text, SourceFormat::Rust, 200);
    assert!(out.children.len() > 3);
    for c in &out.children {
        let shown = &text[c.span.start..c.span.end];
        // Every piece starts at a line's first non-blank character.
        let before = text[..c.span.start].rsplit('\n').next().unwrap_or("");
        assert!(before.trim().is_empty(), "{shown:?}");
        assert_eq!(c.section_path, ["fn table"]);
    }
}

#[test]
fn an_item_inside_a_long_statement_is_cut_from_it_before_it_is_cut_itself() {
    let arms: String = (0..12)
        .map(|i| {
            format!("        {i} => {{\n            let v = {i};\n            v * 2\n        }}\n")
        })
        .collect();
    let text = format!(
        "fn outer(x: u32) -> u32 {{\n    match x {{\n{arms}        _ => {{\n            fn helper(y: u32) -> u32 {{\n                let z = y + 1;\n                z * z\n            }}\n            helper(x)\n        }}\n    }}\n}}\n"
    );
    let functions = nodes(&text, SourceFormat::Rust, &["function_item"]);
    for target in [120, 200, 300] {
        let out = chunked(&text, SourceFormat::Rust, target);
        items_whole(&text, &out, &functions, target);
    }
}

/// Code-like fragments in each language, glued at random, to stress the reader.
fn fragments() -> impl Strategy<Value = (SourceFormat, String)> {
    let rust = prop::collection::vec(
        prop_oneof![
            Just("use a::b;\n"),
            Just("/// doc\n#[derive(Debug)]\nstruct S { a: u32 }\n"),
            Just("impl S {\n    fn f(&self) -> u32 {\n        let x = 1;\n        x + 2\n    }\n\n    fn g() {}\n}\n"),
            Just("fn h() {\n    match x { 1 => a(), _ => { b(); c() } }\n}\n"),
            Just("mod m {\n    fn i() {}\n}\n"),
            Just("// loose\n"),
            Just("}\n"),
            Just("fn broken( {\n"),
            Just("\n\n"),
            Just("é北😀 "),
        ],
        0..24,
    )
    .prop_map(|v| (SourceFormat::Rust, v.concat()));
    let python = prop::collection::vec(
        prop_oneof![
            Just("import os\n"),
            Just(
                "class A:\n    \"\"\"Doc.\"\"\"\n    x = 1\n\n    def f(self):\n        return 1\n"
            ),
            Just("@dec\ndef g(a, b):\n    if a:\n        return b\n    return a\n"),
            Just("    # indented comment\n"),
            Just("x = [\n  1,\n  2,\n]\n"),
            Just("def broken(:\n"),
            Just("\n\n"),
            Just("\t"),
        ],
        0..24,
    )
    .prop_map(|v| (SourceFormat::Python, v.concat()));
    let others = (
        prop_oneof![
            Just(SourceFormat::JavaScript),
            Just(SourceFormat::TypeScript),
            Just(SourceFormat::Tsx),
            Just(SourceFormat::Go)
        ],
        prop::collection::vec(
            prop_oneof![
                Just(APP_JS),
                Just(API_TS),
                Just(SERVER_GO),
                Just("{"),
                Just("}\n"),
                Just("/* c */")
            ],
            0..6,
        ),
    )
        .prop_map(|(f, v)| (f, v.concat()));
    prop_oneof![rust, python, others]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_code_keeps_the_contract((format, text) in fragments(), target in 1..700usize) {
        let spec = spec(target);
        let out = chunk_document(&text, format, &spec);
        check(&text, format, &spec, &out).map_err(TestCaseError::fail)?;
        check_any_format(&text, format).map_err(TestCaseError::fail)?;
    }
}
