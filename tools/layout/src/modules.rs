//! A crate's module tree, read with syn: the modules found from each crate root (`lib.rs`,
//! `main.rs`, `bin/*.rs`, `bin/*/main.rs`) through `mod` declarations (`#[path]` honoured,
//! inline `mod x { ... }` kept in its file), what each module defines and imports, and every
//! path that may be an import. Items under `#[cfg(test)]` and `#[test]` functions are left
//! out (their modules are kept, marked, so their files count as reached).

use std::collections::BTreeMap;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, Item, Meta, UseTree};

use crate::files::{dir_of, join, Files};

/// Where something is defined.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// Path from the repository root.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

/// A `use` leaf of a module: `use a::b::C as D` is `(Some("D"), [a, b, C])`, a glob
/// `use a::b::*` is `(None, [a, b])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The name it brings into scope; `None` for a glob.
    pub name: Option<String>,
    /// The path as written.
    pub path: Vec<String>,
    /// Its line.
    pub line: usize,
}

/// One module.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// The file holding its items (the enclosing file for an inline module).
    pub file: String,
    /// Where its `mod x;` children are looked for.
    dir: String,
    /// Whether it is an inline `mod x { ... }`.
    inline: bool,
    /// Its parent (`None` for a crate root).
    pub parent: Option<usize>,
    /// Its crate root.
    pub root: usize,
    /// Under `#[cfg(test)]`.
    pub test: bool,
    /// Child modules by name.
    pub children: BTreeMap<String, usize>,
    /// Items it defines (struct, enum, fn, trait, const, static, type, union, macro_rules).
    pub items: BTreeMap<String, Place>,
    /// Its module-level `use` leaves.
    pub uses: Vec<Use>,
}

/// A path in non-test code that may import: a `use` leaf, or a path starting with `crate`,
/// `self`, `super`, the library's name or a watched external crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The module it is written in (its file is that module's file).
    pub module: usize,
    /// Its line.
    pub line: usize,
    /// Its segments (a glob leaf without the `*`).
    pub path: Vec<String>,
}

/// A crate's sources as the check sees them.
#[derive(Debug, Default)]
pub struct Tree {
    /// Every module; crate roots have no parent.
    pub modules: Vec<Module>,
    /// The library root, if the crate has one.
    pub lib: Option<usize>,
    /// The name Rust paths give the library (`folio`).
    pub lib_name: String,
    /// Candidate imports.
    pub references: Vec<Reference>,
    /// Inherent `impl T` blocks outside tests: `(T, place)`.
    pub impls: Vec<(String, Place)>,
    /// Files that could not be read or parsed, `mod` declarations without a file.
    pub problems: Vec<(Place, String)>,
}

/// Reads the crate whose sources are under `src`; `watched` are external crate names whose
/// paths are recorded wherever they appear (the block's `NAME-only:` lines).
pub fn load(files: &Files, src: &str, lib_name: &str, watched: &[String]) -> Tree {
    let mut starts: Vec<String> = ["crate", "self", "super", lib_name]
        .map(String::from)
        .to_vec();
    starts.extend(watched.iter().cloned());
    let mut loader = Loader {
        files,
        starts,
        tree: Tree {
            lib_name: lib_name.to_string(),
            ..Tree::default()
        },
    };
    let lib = format!("{src}/lib.rs");
    if files.get(&lib).is_some() {
        loader.tree.lib = Some(loader.root(&lib));
    }
    let bin = format!("{src}/bin/");
    for file in files.rust_files(src) {
        let in_bin = file.strip_prefix(&bin).map(|rest| {
            let parts: Vec<_> = rest.split('/').collect();
            parts.len() == 1 || (parts.len() == 2 && parts[1] == "main.rs")
        });
        if file == format!("{src}/main.rs") || in_bin == Some(true) {
            loader.root(&file);
        }
    }
    loader.tree
}

struct Loader<'a> {
    files: &'a Files,
    starts: Vec<String>,
    tree: Tree,
}

impl Loader<'_> {
    fn root(&mut self, file: &str) -> usize {
        let id = self.tree.modules.len();
        let module = Module {
            file: file.to_string(),
            dir: dir_of(file).to_string(),
            root: id,
            ..Module::default()
        };
        self.tree.modules.push(module);
        self.load_file(
            id,
            &Place {
                file: file.to_string(),
                line: 1,
            },
        );
        id
    }

    /// Parses the module's file and fills it; `from` is where it was declared.
    fn load_file(&mut self, id: usize, from: &Place) {
        let file = self.tree.modules[id].file.clone();
        let Some(text) = self.files.get(&file) else {
            self.tree
                .problems
                .push((from.clone(), format!("module file `{file}` not found")));
            return;
        };
        match syn::parse_file(text) {
            Ok(parsed) => self.fill(id, &parsed.items),
            Err(e) => {
                let line = e.span().start().line;
                self.tree
                    .problems
                    .push((Place { file, line }, format!("does not parse: {e}")));
            }
        }
    }

    fn fill(&mut self, id: usize, items: &[Item]) {
        let file = self.tree.modules[id].file.clone();
        let place = |line| Place {
            file: file.clone(),
            line,
        };
        for item in items {
            let test = self.tree.modules[id].test || is_test(attrs(item));
            if let Item::Mod(m) = item {
                let name = m.ident.to_string();
                let child = self.child(id, m, test);
                self.tree.modules[id].children.insert(name, child);
                continue;
            }
            if test {
                continue;
            }
            match item {
                Item::Use(u) => {
                    let mut leaves = Vec::new();
                    use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                    // A re-export (`pub use`, `pub(crate) use`) passes names through: it
                    // is followed when a path is resolved, and is not an import itself.
                    let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                    for leaf in leaves {
                        // ... but a re-export of a watched crate's item still uses that crate.
                        let watched = leaf
                            .path
                            .first()
                            .is_some_and(|first| self.starts[4..].contains(first));
                        if !reexport || watched {
                            self.tree.references.push(Reference {
                                module: id,
                                line: leaf.line,
                                path: leaf.path.clone(),
                            });
                        }
                        self.tree.modules[id].uses.push(leaf);
                    }
                    continue;
                }
                Item::Impl(i) if i.trait_.is_none() => {
                    if let syn::Type::Path(p) = &*i.self_ty {
                        if let Some(last) = p.path.segments.last() {
                            let line = i.impl_token.span.start().line;
                            self.tree.impls.push((last.ident.to_string(), place(line)));
                        }
                    }
                }
                _ => {}
            }
            if let Some(ident) = defined(item) {
                self.tree.modules[id]
                    .items
                    .insert(ident.to_string(), place(ident.span().start().line));
            }
            let mut paths = Paths {
                module: id,
                starts: &self.starts,
                out: &mut self.tree.references,
            };
            paths.visit_item(item);
        }
    }

    /// Adds the module `m` declared in `parent`, loading its file unless it is inline.
    fn child(&mut self, parent: usize, m: &syn::ItemMod, test: bool) -> usize {
        let up = &self.tree.modules[parent];
        let name = m.ident.to_string();
        let id = self.tree.modules.len();
        let mut module = Module {
            parent: Some(parent),
            root: up.root,
            test,
            file: up.file.clone(),
            ..Module::default()
        };
        let declared = Place {
            file: up.file.clone(),
            line: m.ident.span().start().line,
        };
        if let Some((_, items)) = &m.content {
            module.dir = join(&up.dir, &name);
            module.inline = true;
            self.tree.modules.push(module);
            self.fill(id, items);
            return id;
        }
        let file = if let Some(path) = path_attr(&m.attrs) {
            let base = if up.inline {
                up.dir.clone()
            } else {
                dir_of(&up.file).to_string()
            };
            join(&base, &path)
        } else {
            let flat = join(&up.dir, &format!("{name}.rs"));
            let nested = join(&up.dir, &format!("{name}/mod.rs"));
            if self.files.get(&flat).is_some() {
                flat
            } else {
                nested
            }
        };
        // A `mod.rs` file or one named by `#[path]` looks for its children beside it;
        // `x.rs` looks in `x/`.
        module.dir = if path_attr(&m.attrs).is_some() || file.ends_with("/mod.rs") {
            dir_of(&file).to_string()
        } else {
            file.trim_end_matches(".rs").to_string()
        };
        module.file = file;
        self.tree.modules.push(module);
        self.load_file(id, &declared);
        id
    }
}

/// The name an item defines in its module's namespace, if the check tracks it.
fn defined(item: &Item) -> Option<&syn::Ident> {
    match item {
        Item::Struct(i) => Some(&i.ident),
        Item::Enum(i) => Some(&i.ident),
        Item::Union(i) => Some(&i.ident),
        Item::Fn(i) => Some(&i.sig.ident),
        Item::Trait(i) => Some(&i.ident),
        Item::TraitAlias(i) => Some(&i.ident),
        Item::Const(i) => Some(&i.ident),
        Item::Static(i) => Some(&i.ident),
        Item::Type(i) => Some(&i.ident),
        Item::Macro(i) => i.ident.as_ref(),
        _ => None,
    }
}

fn attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[test]`, or `#[cfg(P)]` where P holds only under test (`test`, `all(test, ...)`).
fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<Meta>().is_ok_and(|m| test_only(&m)))
    })
}

fn test_only(meta: &Meta) -> bool {
    match meta {
        Meta::Path(p) => p.is_ident("test"),
        Meta::List(l) if l.path.is_ident("all") => l
            .parse_args_with(syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated)
            .is_ok_and(|args| args.iter().any(test_only)),
        _ => false,
    }
}

/// The value of `#[path = "..."]`.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// The leaves of a use tree (`self` in a group names the prefix itself).
fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<Use>) {
    let leaf = |prefix: &Vec<String>, ident: &syn::Ident, name: Option<String>| {
        let mut path = prefix.clone();
        if ident != "self" {
            path.push(ident.to_string());
        }
        let name = name.or_else(|| path.last().cloned());
        Use {
            name,
            path,
            line: ident.span().start().line,
        }
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => out.push(leaf(prefix, &n.ident, None)),
        UseTree::Rename(r) => out.push(leaf(prefix, &r.ident, Some(r.rename.to_string()))),
        UseTree::Glob(g) => out.push(Use {
            name: None,
            path: prefix.clone(),
            line: g.star_token.span.start().line,
        }),
        UseTree::Group(g) => g.items.iter().for_each(|t| use_leaves(t, prefix, out)),
    }
}

/// Collects the paths of one item's code, skipping test-only parts and `pub(in ...)`.
struct Paths<'a> {
    module: usize,
    starts: &'a [String],
    out: &'a mut Vec<Reference>,
}

impl Paths<'_> {
    fn record(&mut self, path: Vec<String>, line: usize) {
        if path.len() >= 2 && self.starts.contains(&path[0]) {
            self.out.push(Reference {
                module: self.module,
                line,
                path,
            });
        }
    }

    /// `crate::a::b`-shaped runs inside a macro's tokens.
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            if let TokenTree::Group(g) = &tokens[i] {
                self.scan(g.stream());
            }
            if let TokenTree::Ident(first) = &tokens[i] {
                let mut path = vec![first.to_string()];
                let mut j = i + 1;
                while let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(next)),
                ) = (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    path.push(next.to_string());
                    j += 3;
                }
                self.record(path, first.span().start().line);
                i = j;
                continue;
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test(attrs(item)) {
            return;
        }
        match item {
            // A `use` inside a function body imports as a module's does.
            Item::Use(u) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &mut Vec::new(), &mut leaves);
                for leaf in leaves {
                    self.out.push(Reference {
                        module: self.module,
                        line: leaf.line,
                        path: leaf.path,
                    });
                }
            }
            Item::Mod(_) => {}
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs = match item {
            syn::TraitItem::Fn(f) => &f.attrs,
            syn::TraitItem::Const(c) => &c.attrs,
            syn::TraitItem::Type(t) => &t.attrs,
            _ => return visit::visit_trait_item(self, item),
        };
        if !is_test(attrs) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_attribute(&mut self, _: &'ast Attribute) {}

    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = path.segments.first() {
            self.record(segments, first.ident.span().start().line);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan(mac.tokens.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(pairs: &[(&str, &str)]) -> Tree {
        load(
            &Files::from_pairs(pairs.iter().copied()),
            "src",
            "demo",
            &["redb".to_string()],
        )
    }

    fn module<'a>(t: &'a Tree, file: &str) -> &'a Module {
        t.modules
            .iter()
            .find(|m| m.file == file && !m.inline)
            .unwrap()
    }

    #[test]
    fn finds_modules_like_rustc() {
        let t = tree(&[
            (
                "src/lib.rs",
                "mod a; mod b; #[path = \"odd/place.rs\"] mod c; mod d { mod e; }",
            ),
            ("src/a.rs", "mod inner;"),
            ("src/a/inner.rs", "pub struct In;"),
            ("src/b/mod.rs", "mod leaf;"),
            ("src/b/leaf.rs", ""),
            ("src/odd/place.rs", "mod next;"),
            ("src/odd/next.rs", ""),
            ("src/d/e.rs", "pub fn e() {}"),
            ("src/main.rs", "fn main() { demo::a::run(); }"),
            ("src/bin/tool/main.rs", "mod helper;"),
            ("src/bin/tool/helper.rs", ""),
            ("src/bin/small.rs", ""),
        ]);
        let files: Vec<_> = t.modules.iter().map(|m| m.file.as_str()).collect();
        for f in [
            "src/a/inner.rs",
            "src/b/leaf.rs",
            "src/odd/place.rs",
            "src/odd/next.rs",
            "src/d/e.rs",
            "src/main.rs",
            "src/bin/tool/helper.rs",
            "src/bin/small.rs",
        ] {
            assert!(files.contains(&f), "{f} not in {files:?}");
        }
        assert!(t.problems.is_empty(), "{:?}", t.problems);
        assert_eq!(module(&t, "src/a/inner.rs").items["In"].line, 1);
        let main = module(&t, "src/main.rs");
        assert_eq!(
            t.references,
            [Reference {
                module: main.root,
                line: 1,
                path: ["demo", "a", "run"].map(String::from).to_vec()
            }]
        );
        let missing = tree(&[("src/lib.rs", "\nmod gone;")]);
        assert_eq!(
            missing.problems[0].0,
            Place {
                file: "src/lib.rs".into(),
                line: 2
            }
        );
    }

    #[test]
    fn records_use_leaves_and_paths_but_not_tests() {
        let t = tree(&[
            (
                "src/lib.rs",
                "mod a;
use crate::a::{self, b::{C, D as E}, f::*};
fn g() -> crate::a::T { let x = self.y; std::mem::take(&mut x); super::up(); vec![crate::a::M, redb::N] }
pub(in crate::a) struct S;
impl S { #[cfg(test)] fn t() { crate::a::Hidden; } }
impl Other for S {}
#[cfg(test)] use crate::a::Test;
#[cfg(all(test, unix))] fn only_test() { crate::a::Test2; }
#[cfg(any(test, unix))] fn both() { crate::a::Kept; }
#[test] fn a_test() { crate::a::Test3; }
#[cfg(test)] mod tests { use crate::a::Test4; }",
            ),
            ("src/a.rs", ""),
        ]);
        let got: Vec<_> = t
            .references
            .iter()
            .map(|r| (r.line, r.path.join("::")))
            .collect();
        let want = [
            (2, "crate::a"),
            (2, "crate::a::b::C"),
            (2, "crate::a::b::D"),
            (2, "crate::a::f"),
            (3, "crate::a::T"),
            (3, "super::up"),
            (3, "crate::a::M"),
            (3, "redb::N"),
            (9, "crate::a::Kept"),
        ];
        assert_eq!(got, want.map(|(l, p)| (l, p.to_string())));
        let root = &t.modules[0];
        assert_eq!(root.uses[2].name.as_deref(), Some("E"));
        assert_eq!(root.uses[3].name, None);
        assert!(root.items.contains_key("S") && !root.items.contains_key("only_test"));
        assert_eq!(
            t.impls,
            [(
                "S".to_string(),
                Place {
                    file: "src/lib.rs".into(),
                    line: 5
                }
            )]
        );
        assert!(
            t.modules.iter().any(|m| m.test),
            "the test module is kept, marked"
        );
    }
}
