//! Source code (feature `code`): Rust, Python, JavaScript, TypeScript (and TSX) and Go,
//! parsed by tree-sitter. Top-level items (functions, types, classes, impls, traits,
//! modules) become [`BlockKind::Symbol`] blocks, each a section of its own named like
//! `fn search` or `impl Store`, so each is one chunk while it fits a child; the inner items
//! of a longer one (methods) open sections below it (`impl Store > fn search`). Statements
//! are cut between only when one item alone is longer than a child, and lines only when one
//! statement is. Comments and attributes right above an item or a statement belong to it; a
//! comment at the end of a line to what the line holds; loose top-level statements and
//! imports are chunks of no item. Spans are bytes of the original source.
//!
//! The embedded text of a chunk of code starts with a header: the document's path and
//! section path, the file's imports that the chunk names, and the declarations of the
//! items it is inside whose signature it does not show (see [`header`]).

use std::collections::HashSet;

use tree_sitter::{Language, Node, Parser};

use crate::chunk::layout::trim;
use crate::chunk::spec::SourceFormat;
use crate::chunk::tree::{Block, BlockKind, Prose, Tree};
use crate::chunk::Span;

/// Block nesting followed below a top-level block (deeper code is cut at lines only).
const MAX_NESTING: usize = 12;
/// Syntax nodes descended through between two blocks (long method chains, nested
/// expressions); bounds the recursion on any input.
const MAX_DEPTH: usize = 48;
/// The longest signature put in an embedded text, in characters.
const MAX_SIGNATURE: usize = 240;
/// The most characters of imports put in an embedded text.
const MAX_IMPORTS: usize = 600;

/// What the reader needs to know of one language's grammar.
struct Grammar {
    language: fn() -> Language,
    /// Item kinds and the word their titles start with (empty: the name alone).
    items: &'static [(&'static str, &'static str)],
    /// Nodes that wrap a declaration (`export …`, decorators), with the field holding it
    /// (empty: their only named child).
    wrappers: &'static [(&'static str, &'static str)],
    imports: &'static [&'static str],
    /// Whether `require("m")` statements and declarations are imports too (CommonJS).
    commonjs: bool,
    /// Nodes whose named children are statements or inner items (bodies, blocks, arms).
    bodies: &'static [&'static str],
    /// Comments and attributes, which belong to the code right below them.
    leading: &'static [&'static str],
}

const RUST: Grammar = Grammar {
    language: rust,
    items: &[
        ("function_item", "fn"),
        ("function_signature_item", "fn"),
        ("struct_item", "struct"),
        ("enum_item", "enum"),
        ("union_item", "union"),
        ("trait_item", "trait"),
        ("impl_item", "impl"),
        ("mod_item", "mod"),
        ("macro_definition", "macro_rules!"),
        ("foreign_mod_item", "extern"),
    ],
    wrappers: &[],
    imports: &["use_declaration", "extern_crate_declaration"],
    commonjs: false,
    bodies: &[
        "block",
        "declaration_list",
        "field_declaration_list",
        "enum_variant_list",
        "match_block",
    ],
    leading: &["line_comment", "block_comment", "attribute_item"],
};

const PYTHON: Grammar = Grammar {
    language: python,
    items: &[
        ("function_definition", "def"),
        ("class_definition", "class"),
    ],
    wrappers: &[("decorated_definition", "definition")],
    imports: &[
        "import_statement",
        "import_from_statement",
        "future_import_statement",
    ],
    commonjs: false,
    bodies: &["block"],
    leading: &["comment"],
};

/// JavaScript's items (TypeScript has these and more).
const JS_ITEMS: [(&str, &str); 5] = [
    ("function_declaration", "function"),
    ("generator_function_declaration", "function*"),
    ("class_declaration", "class"),
    ("method_definition", ""),
    // `const f = () => …` and the like (see `declared_function`).
    ("lexical_declaration", ""),
];
const JS_BODIES: [&str; 3] = ["statement_block", "class_body", "switch_body"];

const JAVASCRIPT: Grammar = Grammar {
    language: javascript,
    items: &JS_ITEMS,
    wrappers: &[("export_statement", "declaration")],
    imports: &["import_statement"],
    commonjs: true,
    bodies: &JS_BODIES,
    leading: &["comment"],
};

const TS_ITEMS: [(&str, &str); 14] = [
    JS_ITEMS[0],
    JS_ITEMS[1],
    JS_ITEMS[2],
    JS_ITEMS[3],
    JS_ITEMS[4],
    ("abstract_class_declaration", "abstract class"),
    ("interface_declaration", "interface"),
    ("type_alias_declaration", "type"),
    ("enum_declaration", "enum"),
    ("internal_module", "namespace"),
    ("module", "module"),
    ("function_signature", "function"),
    ("method_signature", ""),
    ("abstract_method_signature", ""),
];
const TS_BODIES: [&str; 5] = [
    JS_BODIES[0],
    JS_BODIES[1],
    JS_BODIES[2],
    "interface_body",
    "enum_body",
];

const TYPESCRIPT: Grammar = Grammar {
    language: typescript,
    items: &TS_ITEMS,
    // `namespace N { … }` may parse as an expression statement.
    wrappers: &[
        ("export_statement", "declaration"),
        ("expression_statement", ""),
    ],
    imports: &["import_statement"],
    commonjs: true,
    bodies: &TS_BODIES,
    leading: &["comment"],
};

const TSX: Grammar = Grammar {
    language: tsx,
    ..TYPESCRIPT
};

const GO: Grammar = Grammar {
    language: go,
    items: &[
        ("function_declaration", "func"),
        ("method_declaration", "func"),
        ("type_declaration", "type"),
    ],
    wrappers: &[],
    imports: &["import_declaration"],
    commonjs: false,
    bodies: &[
        "block",
        "field_declaration_list",
        "interface_type",
        "expression_switch_statement",
        "type_switch_statement",
        "select_statement",
    ],
    leading: &["comment"],
};

fn rust() -> Language {
    tree_sitter_rust::LANGUAGE.into()
}
fn python() -> Language {
    tree_sitter_python::LANGUAGE.into()
}
fn javascript() -> Language {
    tree_sitter_javascript::LANGUAGE.into()
}
fn typescript() -> Language {
    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
}
fn tsx() -> Language {
    tree_sitter_typescript::LANGUAGE_TSX.into()
}
fn go() -> Language {
    tree_sitter_go::LANGUAGE.into()
}

fn grammar(format: SourceFormat) -> Option<&'static Grammar> {
    Some(match format {
        SourceFormat::Rust => &RUST,
        SourceFormat::Python => &PYTHON,
        SourceFormat::JavaScript => &JAVASCRIPT,
        SourceFormat::TypeScript => &TYPESCRIPT,
        SourceFormat::Tsx => &TSX,
        SourceFormat::Go => &GO,
        _ => return None,
    })
}

/// The block tree of source code in `format`; `None` for a format that is not code or a
/// source the parser gives up on (the caller reads it as plain text).
pub fn read(text: &str, format: SourceFormat) -> Option<Tree> {
    let grammar = grammar(format)?;
    let mut parser = Parser::new();
    parser.set_language(&(grammar.language)()).ok()?;
    let parsed = parser.parse(text, None)?;
    let reader = Reader { text, grammar };
    let mut tree = Tree::new(Prose::Code);
    tree.blocks = reader.blocks(parsed.root_node(), 0);
    Some(tree)
}

struct Reader<'t> {
    text: &'t str,
    grammar: &'static Grammar,
}

impl Reader<'_> {
    /// The named children of `parent` (a body, or the whole file) as blocks, in order, with
    /// the comments and attributes above each (no blank line between) in its span, and a
    /// comment that ends a line in the span of what the line holds.
    fn blocks(&self, parent: Node<'_>, nesting: usize) -> Vec<Block> {
        let mut cursor = parent.walk();
        let nodes: Vec<Node<'_>> = parent
            .named_children(&mut cursor)
            .filter(|n| self.span(*n).is_some())
            .collect();
        let mut out: Vec<Block> = Vec::with_capacity(nodes.len());
        let mut leading: Option<usize> = None;
        for (i, node) in nodes.iter().enumerate() {
            let Some(span) = self.span(*node) else {
                continue;
            };
            let comment = self.grammar.leading.contains(&node.kind());
            if let (true, None, Some(last)) = (comment, leading, out.last_mut()) {
                let gap = self.text.get(last.span.end..span.start);
                if gap.is_some_and(|g| !g.contains('\n')) {
                    last.span.end = span.end;
                    continue;
                }
            }
            let next = nodes.get(i + 1).and_then(|n| self.span(*n));
            let gap = next.and_then(|n| self.text.get(span.end..n.start));
            let next_close = gap.is_some_and(|g| g.matches('\n').count() < 2);
            if comment && next_close {
                leading.get_or_insert(span.start);
                continue;
            }
            let mut block = self.block(*node, span, nesting);
            if let Some(start) = leading.take() {
                block.span.start = start;
            }
            out.push(block);
        }
        out
    }

    /// One node as a block: an item, an import or a statement, with what is inside it.
    fn block(&self, node: Node<'_>, span: Span, nesting: usize) -> Block {
        let inner = self.unwrap(node);
        let kind = if let Some(title) = self.title(inner) {
            let signature = self.signature(node, inner);
            BlockKind::Symbol { title, signature }
        } else if self.grammar.imports.contains(&inner.kind()) || self.is_require(inner) {
            return Block::leaf(BlockKind::Import, span.start, span.end);
        } else {
            BlockKind::Statement
        };
        let mut children = Vec::new();
        if nesting < MAX_NESTING {
            self.inner(node, nesting + 1, 0, &mut children);
        }
        Block {
            kind,
            span,
            children,
        }
    }

    /// Whether `node` is a CommonJS import: `require("m")` alone, or a declaration whose
    /// every value is one (`const fs = require("fs")`, `var { a } = require("m").b`).
    fn is_require(&self, node: Node<'_>) -> bool {
        if !self.grammar.commonjs {
            return false;
        }
        match node.kind() {
            "expression_statement" => node.named_child(0).is_some_and(|e| self.require_call(e)),
            "lexical_declaration" | "variable_declaration" => {
                let mut cursor = node.walk();
                let values: Vec<Option<Node<'_>>> = node
                    .named_children(&mut cursor)
                    .filter(|d| d.kind() == "variable_declarator")
                    .map(|d| d.child_by_field_name("value"))
                    .collect();
                !values.is_empty()
                    && values
                        .into_iter()
                        .all(|v| v.is_some_and(|v| self.require_call(v)))
            }
            // TypeScript's wrapper gives the expression of `require("m");` itself.
            _ => self.require_call(node),
        }
    }

    /// `require(…)`, or a member read off it (`require("m").b`).
    fn require_call(&self, node: Node<'_>) -> bool {
        let mut node = node;
        while node.kind() == "member_expression" {
            match node.child_by_field_name("object") {
                Some(object) => node = object,
                None => return false,
            }
        }
        node.kind() == "call_expression"
            && node
                .child_by_field_name("function")
                .is_some_and(|f| f.kind() == "identifier" && self.flat(f) == "require")
    }

    /// The blocks of every body below `node`, down to the next bodies.
    fn inner(&self, node: Node<'_>, nesting: usize, depth: usize, out: &mut Vec<Block>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if self.grammar.bodies.contains(&child.kind()) {
                out.extend(self.blocks(child, nesting));
            } else if depth < MAX_DEPTH && child.named_child_count() > 0 {
                self.inner(child, nesting, depth + 1, out);
            }
        }
    }

    /// The declaration a wrapper holds (`export class …`, a decorated `def`), else `node`.
    fn unwrap<'n>(&self, node: Node<'n>) -> Node<'n> {
        self.grammar
            .wrappers
            .iter()
            .find(|(kind, _)| *kind == node.kind())
            .and_then(|(_, field)| match *field {
                "" if node.named_child_count() == 1 => node.named_child(0),
                "" => None,
                field => node.child_by_field_name(field),
            })
            .unwrap_or(node)
    }

    /// The section title of an item (`fn search`, `impl Display for Store`, `class Store`,
    /// `func (s *Store) Search`), or `None` if `node` is not one.
    fn title(&self, node: Node<'_>) -> Option<String> {
        let kind = node.kind();
        let &(_, word) = self.grammar.items.iter().find(|(k, _)| *k == kind)?;
        let field = |name: &str| node.child_by_field_name(name).map(|n| self.flat(n));
        let title = match kind {
            "impl_item" => match (field("trait"), field("type")) {
                (Some(t), Some(ty)) => format!("impl {t} for {ty}"),
                (_, ty) => format!("impl {}", ty.unwrap_or_default()),
            },
            "method_declaration" => format!(
                "func {} {}",
                field("receiver").unwrap_or_default(),
                field("name").unwrap_or_default()
            ),
            "type_declaration" => {
                let mut cursor = node.walk();
                let spec = node.named_children(&mut cursor).next();
                let name = spec.and_then(|s| s.child_by_field_name("name"));
                format!("type {}", name.map(|n| self.flat(n)).unwrap_or_default())
            }
            "lexical_declaration" => self.declared_function(node)?,
            _ => match field("name") {
                Some(name) if word.is_empty() => name,
                Some(name) => format!("{word} {name}"),
                None => word.to_string(),
            },
        };
        Some(cap(title.trim(), 80))
    }

    /// `const f = (…) => …` (or a function or class expression): `const f`.
    fn declared_function(&self, node: Node<'_>) -> Option<String> {
        let mut cursor = node.walk();
        let declarator = node.named_children(&mut cursor).next()?;
        let value = declarator.child_by_field_name("value")?;
        let function = matches!(
            value.kind(),
            "arrow_function" | "function_expression" | "function" | "generator_function" | "class"
        );
        let keyword = node.child(0).map(|k| self.flat(k))?;
        let name = declarator.child_by_field_name("name")?;
        function.then(|| format!("{keyword} {}", self.flat(name)))
    }

    /// An item's declaration, from its wrapper's start (`export`, decorators) up to the
    /// body of the item `inner`, or to the end of its first line when it has none.
    fn signature(&self, node: Node<'_>, inner: Node<'_>) -> Span {
        let start = floor(self.text, node.start_byte());
        let end = match inner.child_by_field_name("body") {
            Some(body) if body.start_byte() > start => body.start_byte(),
            _ => {
                let line_end = self.text[start..]
                    .find('\n')
                    .map_or(self.text.len(), |i| start + i);
                line_end.min(node.end_byte())
            }
        };
        let end = floor(self.text, end);
        let trimmed = self.text[start..end].trim_end().len();
        Span {
            start,
            end: start + trimmed,
        }
    }

    /// A node's bytes without the whitespace around them (a line comment holds its line
    /// break), if it holds any (error recovery makes empty ones).
    fn span(&self, node: Node<'_>) -> Option<Span> {
        let (start, end) = (
            floor(self.text, node.start_byte()),
            floor(self.text, node.end_byte()),
        );
        trim(self.text, start, end.max(start))
    }

    /// A node's text on one line.
    fn flat(&self, node: Node<'_>) -> String {
        let (start, end) = (
            floor(self.text, node.start_byte()),
            floor(self.text, node.end_byte()),
        );
        flatten(&self.text[start.min(end)..end])
    }
}

/// The greatest char boundary at or below `pos`, inside the text.
fn floor(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

/// `text` with every run of whitespace made one space.
fn flatten(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, ending in `…` when cut.
fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Words of an import that say nothing of what it brings in.
const IMPORT_WORDS: &[&str] = &[
    "use", "pub", "crate", "self", "super", "as", "import", "from", "export", "require", "const",
    "let", "var", "type", "typeof", "default", "extern", "mod", "std",
];

/// The header of the embedded text of the chunk `span` of source code read into `tree`: a
/// line with `path` and the first `depth` titles of its section path (joined by ` > `), the
/// file's top-level imports that name a word of the chunk (imports of nothing nameable,
/// and glob imports always; at most [`MAX_IMPORTS`] characters, each on one line), and
/// the signatures of the items the chunk is inside whose declaration it does not show.
/// Empty when there is nothing to say.
pub(crate) fn header(
    text: &str,
    tree: &Tree,
    span: Span,
    path: Option<&str>,
    section_path: &[String],
    depth: usize,
) -> String {
    let mut lines = Vec::new();
    let titles = section_path[..depth.min(section_path.len())]
        .iter()
        .map(String::as_str);
    let first: Vec<&str> = path.into_iter().chain(titles).collect();
    if !first.is_empty() {
        lines.push(first.join(" > "));
    }
    let used: HashSet<&str> = words(&text[span.start..span.end]).collect();
    let mut budget = MAX_IMPORTS;
    let imports = tree.blocks.iter().filter(|b| b.kind == BlockKind::Import);
    for import in imports.filter(|b| b.span.end <= span.start || b.span.start >= span.end) {
        let line = flatten(&text[import.span.start..import.span.end]);
        if names_one_of(&line, &used) && line.len() <= budget {
            budget -= line.len();
            lines.push(line);
        }
    }
    let mut level = &tree.blocks;
    while let Some(block) = level
        .iter()
        .find(|b| b.span.start <= span.start && span.start < b.span.end)
    {
        if let BlockKind::Symbol { signature, .. } = &block.kind {
            if signature.start < span.start {
                let declaration = flatten(&text[signature.start..signature.end]);
                lines.push(cap(&declaration, MAX_SIGNATURE));
            }
        }
        level = &block.children;
    }
    lines.join("\n")
}

/// Whether an import brings in one of the words `used`: a glob, or an import of nothing
/// nameable, may bring in anything.
fn names_one_of(import: &str, used: &HashSet<&str>) -> bool {
    let names = imported_names(import);
    import.contains('*') || names.is_empty() || names.iter().any(|w| used.contains(w))
}

/// The names an import brings in: its words but keywords, the parts of a path before its
/// last (`std`, `collections` in `std::collections::HashMap`, `net` in `"net/http"`) and a
/// module imported from (`from decimal import Decimal`).
fn imported_names(import: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut previous = "";
    for (start, word) in word_spans(import) {
        let next = import[start + word.len()..].chars().next();
        let path = matches!(next, Some(':' | '.' | '/'));
        if !path && previous != "from" && !IMPORT_WORDS.contains(&word) {
            out.push(word);
        }
        previous = word;
    }
    out
}

/// The identifier-like words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    word_spans(text).map(|(_, w)| w)
}

/// The identifier-like words of `text` with their byte offsets.
fn word_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut at = 0;
    text.split(move |c: char| !is_word(c))
        .map(move |w| {
            let start = at;
            // Each piece is followed by one separator character (or the end).
            at += w.len()
                + text[at + w.len()..]
                    .chars()
                    .next()
                    .map_or(0, char::len_utf8);
            (start, w)
        })
        .filter(|(_, w)| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(tree: &Tree, text: &str) -> Vec<String> {
        tree.walk()
            .map(|b| match &b.kind {
                BlockKind::Symbol { title, signature } => {
                    format!("{title} [{}]", &text[signature.start..signature.end])
                }
                BlockKind::Import => format!("import {}", &text[b.span.start..b.span.end]),
                _ => format!("stmt {}", flatten(&text[b.span.start..b.span.end])),
            })
            .collect()
    }

    #[test]
    fn rust_items_keep_their_comments_and_attributes() {
        let text = "use std::fmt;\n\n/// A store.\n#[derive(Debug)]\npub struct Store { n: u32 } // count\n\nimpl fmt::Display for Store {\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {\n        write!(f, \"{}\", self.n)\n    }\n}\n";
        let tree = read(text, SourceFormat::Rust).unwrap_or_else(|| Tree::new(Prose::Code));
        let got = outline(&tree, text);
        assert_eq!(got[0], "import use std::fmt;");
        assert_eq!(got[1], "struct Store [pub struct Store]");
        assert!(text[tree.blocks[1].span.start..tree.blocks[1].span.end]
            .starts_with("/// A store.\n#[derive(Debug)]"));
        assert!(text[..tree.blocks[1].span.end].ends_with("// count"));
        assert_eq!(
            got[3],
            "impl fmt::Display for Store [impl fmt::Display for Store]"
        );
        assert!(got.contains(
            &"fn fmt [fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result]".to_string()
        ));
    }

    #[test]
    fn titles_in_every_language() {
        let cases: [(SourceFormat, &str, &str); 8] = [
            (
                SourceFormat::Python,
                "@app.get('/')\ndef index():\n    return 1\n",
                "def index",
            ),
            (SourceFormat::Python, "class A(B):\n    x = 1\n", "class A"),
            (
                SourceFormat::JavaScript,
                "export class Store {}\n",
                "class Store",
            ),
            (
                SourceFormat::JavaScript,
                "export const get = async (id) => id;\n",
                "const get",
            ),
            (
                SourceFormat::TypeScript,
                "interface Hit { id: string }\n",
                "interface Hit",
            ),
            (
                SourceFormat::Tsx,
                "function App() { return <div/>; }\n",
                "function App",
            ),
            (
                SourceFormat::Go,
                "func (s *Store) Search(q string) {}\n",
                "func (s *Store) Search",
            ),
            (
                SourceFormat::Go,
                "type Store struct {\n\tn int\n}\n",
                "type Store",
            ),
        ];
        for (format, text, title) in cases {
            let tree = read(text, format).unwrap_or_else(|| Tree::new(Prose::Code));
            let first = tree.blocks.first().map(|b| b.kind.clone());
            assert!(
                matches!(&first, Some(BlockKind::Symbol { title: t, .. }) if t == title),
                "{format:?} {text:?}: {first:?}"
            );
        }
    }

    #[test]
    fn imports_name_what_they_bring_in() {
        let cases: [(&str, &[&str]); 6] = [
            (
                "use std::collections::{BTreeMap, HashMap};",
                &["BTreeMap", "HashMap"],
            ),
            (
                "use crate::text::{normalize, tokens as t};",
                &["normalize", "tokens", "t"],
            ),
            (
                "from decimal import Decimal, ROUND_HALF_UP",
                &["Decimal", "ROUND_HALF_UP"],
            ),
            ("import datetime as dt", &["datetime", "dt"]),
            (
                "import ( \"encoding/json\" \"net/http\" )",
                &["json", "http"],
            ),
            (
                "import { readFile } from \"node:fs/promises\";",
                &["readFile", "promises"],
            ),
        ];
        for (import, names) in cases {
            assert_eq!(imported_names(import), names, "{import}");
        }
    }

    #[test]
    fn header_names_the_path_the_imports_used_and_the_enclosing_declaration() {
        let text = "import os\nimport sys\nfrom x import *\n\nclass A:\n    def f(self):\n        return os.getcwd()\n";
        let tree = read(text, SourceFormat::Python).unwrap_or_else(|| Tree::new(Prose::Code));
        let start = text.find("    def f").unwrap_or(0) + 4;
        let span = Span {
            start,
            end: text.len() - 1,
        };
        let path = ["class A".to_string(), "def f".to_string()];
        let got = header(text, &tree, span, Some("app/a.py"), &path, 2);
        assert_eq!(
            got,
            "app/a.py > class A > def f\nimport os\nfrom x import *\nclass A:"
        );
    }
}
