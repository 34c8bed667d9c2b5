//! Resolving each candidate import to the file that defines what it names: modules are
//! walked segment by segment; a name is a child module, an item defined there, or a `use`
//! of that module (explicit, then globs), followed until the defining item. A path that
//! names a module resolves to the module's file; one that names an item and goes on
//! (`Enum::Variant`, `Type::method`) stops at the item. A re-export of an external item
//! resolves to the file holding the re-export, where the name enters the crate. A path that
//! goes through another module to reach a re-exported item also imports that module's file.

use crate::modules::{Place, Tree};

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A module of the crate.
    Module(usize),
    /// An item of the crate, where it is defined.
    Item(Place),
    /// Something of another crate (its name).
    External(String),
    /// Nothing the check could find.
    Unresolved,
}

/// A reference from one file to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// Where it is written.
    pub from: Place,
    /// The file defining what it names.
    pub to: String,
    /// The path as written (`crate::store::Store`).
    pub text: String,
}

/// Every candidate import of a crate, sorted out.
#[derive(Debug, Default)]
pub struct Imports {
    /// Imports of another file of the crate.
    pub imports: Vec<Import>,
    /// Paths into another crate: where, the crate's name, the path.
    pub external: Vec<(Place, String, String)>,
    /// Paths the check could not resolve: where, the path.
    pub unresolved: Vec<(Place, String)>,
}

/// Resolves every reference of the tree.
pub fn imports(tree: &Tree) -> Imports {
    let mut out = Imports::default();
    for r in &tree.references {
        let file = &tree.modules[r.module].file;
        let from = Place {
            file: file.clone(),
            line: r.line,
        };
        let text = r.path.join("::");
        let to = match resolve(tree, r.module, &r.path) {
            Target::Module(m) => tree.modules[m].file.clone(),
            Target::Item(place) => place.file,
            Target::External(name) => {
                out.external.push((from, name, text));
                continue;
            }
            Target::Unresolved => {
                out.unresolved.push((from, text));
                continue;
            }
        };
        // A path that reaches its item through another module's re-export (`crate::store::X`
        // where `store.rs` re-exports `X`) depends on that module too: an edge to it as well.
        if let Some((last, prefix)) = r.path.split_last() {
            if let Target::Module(m) = resolve(tree, r.module, prefix) {
                let module = &tree.modules[m];
                let reexported =
                    !module.children.contains_key(last) && !module.items.contains_key(last);
                let via = &module.file;
                if reexported && via != file && *via != to {
                    out.imports.push(Import {
                        from: from.clone(),
                        to: via.clone(),
                        text: text.clone(),
                    });
                }
            }
        }
        if &to != file {
            out.imports.push(Import { from, to, text });
        }
    }
    out
}

/// What `path`, written in module `module`, names.
pub fn resolve(tree: &Tree, module: usize, path: &[String]) -> Target {
    Walk {
        tree,
        stack: Vec::new(),
    }
    .path(module, path)
}

/// How many lookups may nest (re-exports of re-exports) before a path counts as unresolved.
const MAX_DEPTH: usize = 64;

struct Walk<'a> {
    tree: &'a Tree,
    /// The lookups under way, so a glob that reaches itself is skipped.
    stack: Vec<(usize, String)>,
}

impl Walk<'_> {
    fn path(&mut self, module: usize, path: &[String]) -> Target {
        let tree = self.tree;
        let Some((first, rest)) = path.split_first() else {
            return Target::Module(module);
        };
        let mut current = match first.as_str() {
            "crate" => tree.modules[module].root,
            "self" => module,
            "super" => match tree.modules[module].parent {
                Some(parent) => parent,
                None => return Target::Unresolved,
            },
            name => match (tree.lib, name == tree.lib_name) {
                (Some(lib), true) => lib,
                _ => match self.lookup(module, name, !rest.is_empty()) {
                    Some(Target::Module(m)) => m,
                    Some(other) => return other,
                    None => return Target::External(name.to_string()),
                },
            },
        };
        for (i, segment) in rest.iter().enumerate() {
            if segment == "super" {
                match tree.modules[current].parent {
                    Some(parent) => current = parent,
                    None => return Target::Unresolved,
                }
                continue;
            }
            match self.lookup(current, segment, i + 1 < rest.len()) {
                Some(Target::Module(m)) => current = m,
                Some(other) => return other,
                None => return Target::Unresolved,
            }
        }
        Target::Module(current)
    }

    /// `name` in `module`; `more` when the path goes on (a module is then preferred).
    fn lookup(&mut self, module: usize, name: &str, more: bool) -> Option<Target> {
        let key = (module, name.to_string());
        if self.stack.len() > MAX_DEPTH || self.stack.contains(&key) {
            return None;
        }
        self.stack.push(key);
        let found = self.lookup_here(module, name, more);
        self.stack.pop();
        found
    }

    fn lookup_here(&mut self, module: usize, name: &str, more: bool) -> Option<Target> {
        let m = &self.tree.modules[module];
        let child = m.children.get(name).map(|&c| Target::Module(c));
        if more && child.is_some() {
            return child;
        }
        if let Some(place) = m.items.get(name) {
            return Some(Target::Item(place.clone()));
        }
        if child.is_some() {
            return child;
        }
        if let Some(u) = m.uses.iter().find(|u| u.name.as_deref() == Some(name)) {
            return Some(match self.path(module, &u.path) {
                Target::External(_) => Target::Item(Place {
                    file: m.file.clone(),
                    line: u.line,
                }),
                target => target,
            });
        }
        for glob in m.uses.iter().filter(|u| u.name.is_none()) {
            if let Target::Module(source) = self.path(module, &glob.path) {
                if let Some(found) = self.lookup(source, name, more) {
                    return Some(found);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Files;
    use crate::modules::load;

    fn resolved(pairs: &[(&str, &str)]) -> Imports {
        let files = Files::from_pairs(pairs.iter().copied());
        imports(&load(&files, "src", "demo", &["redb".to_string()]))
    }

    fn edges(got: &Imports) -> Vec<(String, String, String)> {
        let mut out: Vec<_> = got
            .imports
            .iter()
            .map(|i| {
                (
                    format!("{}:{}", i.from.file, i.from.line),
                    i.text.clone(),
                    i.to.clone(),
                )
            })
            .collect();
        out.sort();
        out
    }

    fn edge(from: &str, text: &str, to: &str) -> (String, String, String) {
        (from.to_string(), text.to_string(), to.to_string())
    }

    #[test]
    fn follows_re_exports_to_the_defining_file() {
        let got = resolved(&[
            ("src/lib.rs", "pub mod store;\nmod error;\nmod user;\npub use error::Error;\npub use store::*;"),
            ("src/error.rs", "pub enum Error {}"),
            (
                "src/store/mod.rs",
                "mod open;\nmod read;\npub use open::{Store as Handle, Kind};\npub(crate) use read::*;\npub use redb::Durability;",
            ),
            ("src/store/open.rs", "pub struct Store;\npub use self::inner::Kind;\nmod inner { pub enum Kind { A } }"),
            ("src/store/read.rs", "pub fn reader() {}"),
            (
                "src/user.rs",
                "use crate::Error;\nuse crate::store::{self, Handle, reader as r};\nuse super::store::Durability;\nfn f() { crate::Kind::A; crate::store::open::Store::new(); }\nuse super::super::Nothing;",
            ),
        ]);
        let user: Vec<_> = edges(&got)
            .into_iter()
            .filter(|e| e.0.starts_with("src/user.rs"))
            .collect();
        assert_eq!(
            user,
            [
                edge("src/user.rs:1", "crate::Error", "src/error.rs"),
                edge("src/user.rs:1", "crate::Error", "src/lib.rs"),
                edge("src/user.rs:2", "crate::store", "src/store/mod.rs"),
                edge("src/user.rs:2", "crate::store::Handle", "src/store/mod.rs"),
                edge("src/user.rs:2", "crate::store::Handle", "src/store/open.rs"),
                edge("src/user.rs:2", "crate::store::reader", "src/store/mod.rs"),
                edge("src/user.rs:2", "crate::store::reader", "src/store/read.rs"),
                // A re-export of another crate's item: the file re-exporting it.
                edge(
                    "src/user.rs:3",
                    "super::store::Durability",
                    "src/store/mod.rs"
                ),
                // An inline module belongs to its file.
                edge("src/user.rs:4", "crate::Kind::A", "src/store/open.rs"),
                edge(
                    "src/user.rs:4",
                    "crate::store::open::Store::new",
                    "src/store/open.rs"
                ),
            ]
        );
        assert_eq!(
            got.unresolved,
            [(
                Place {
                    file: "src/user.rs".into(),
                    line: 5
                },
                "super::super::Nothing".into()
            )]
        );
        let redb: Vec<_> = got
            .external
            .iter()
            .map(|(p, name, _)| (p.file.as_str(), name.as_str()))
            .collect();
        assert_eq!(redb, [("src/store/mod.rs", "redb")]);
    }

    #[test]
    fn relative_paths_globs_and_the_library_name() {
        let got = resolved(&[
            ("src/lib.rs", "pub mod a;\npub mod b;"),
            ("src/a/mod.rs", "mod x;\nmod y;\npub use x::X;\nuse rayon::prelude::*;"),
            ("src/a/x.rs", "use super::y::*;\npub struct X(Y);\nfn f() { self::g(); super::super::b::h(); }\nfn g() {}"),
            ("src/a/y.rs", "pub struct Y;\nuse super::*;\nfn k() -> X { crate::a::missing::Z }"),
            ("src/b.rs", "pub fn h() {}"),
            ("src/main.rs", "use demo::a::X;\nfn main() { demo::b::h(); }"),
        ]);
        assert_eq!(
            edges(&got),
            [
                edge("src/a/x.rs:1", "super::y", "src/a/y.rs"),
                edge("src/a/x.rs:3", "super::super::b::h", "src/b.rs"),
                edge("src/a/y.rs:2", "super", "src/a/mod.rs"),
                edge("src/main.rs:1", "demo::a::X", "src/a/mod.rs"),
                edge("src/main.rs:1", "demo::a::X", "src/a/x.rs"),
                edge("src/main.rs:2", "demo::b::h", "src/b.rs"),
            ]
        );
        assert_eq!(
            got.unresolved,
            [(
                Place {
                    file: "src/a/y.rs".into(),
                    line: 3
                },
                "crate::a::missing::Z".into()
            )]
        );
        assert_eq!(got.external[0].1, "rayon");
    }
}
