//! The sources the check reads, held in memory by their path from the repository root
//! (`/`-separated, so the tests build tiny trees without a disk).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;

/// Texts by path relative to the repository root (`src/store/mod.rs`, `Cargo.toml`).
#[derive(Debug, Default, Clone)]
pub struct Files {
    texts: BTreeMap<String, String>,
}

impl Files {
    /// A tree from `(path, text)` pairs (the tests' fixtures).
    #[cfg(test)]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Files {
        let texts = pairs
            .into_iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        Files { texts }
    }

    /// Adds one file read from disk (`rel` relative to `root`); a missing file is skipped.
    pub fn read(&mut self, root: &Path, rel: &str) -> io::Result<()> {
        match fs::read_to_string(root.join(rel)) {
            Ok(text) => {
                self.texts.insert(rel.to_string(), text);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Adds every `.rs` file under the folder `rel` (relative to `root`), if it exists.
    pub fn read_rust_tree(&mut self, root: &Path, rel: &str) -> io::Result<()> {
        let dir = root.join(rel);
        if !dir.is_dir() {
            return Ok(());
        }
        let mut entries: Vec<_> = fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = join(rel, &name);
            if entry.file_type()?.is_dir() {
                self.read_rust_tree(root, &path)?;
            } else if name.ends_with(".rs") {
                self.read(root, &path)?;
            }
        }
        Ok(())
    }

    /// The text of one file.
    pub fn get(&self, path: &str) -> Option<&str> {
        self.texts.get(path).map(String::as_str)
    }

    /// Every `.rs` file under the folder `dir`, in order.
    pub fn rust_files(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        self.texts
            .keys()
            .filter(|p| p.starts_with(&prefix) && p.ends_with(".rs"))
            .cloned()
            .collect()
    }

    /// Every folder strictly under `dir` that holds a `.rs` file (at any depth), as
    /// `dir/a/`, `dir/a/b/`.
    pub fn rust_folders(&self, dir: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for file in self.rust_files(dir) {
            let mut folder = dir_of(&file);
            while folder.len() > dir.len() {
                out.insert(format!("{folder}/"));
                folder = dir_of(folder);
            }
        }
        out
    }
}

/// `a/b` (or `b` when `a` is empty: the repository root).
pub fn join(a: &str, b: &str) -> String {
    if a.is_empty() || a == "." {
        b.to_string()
    } else {
        format!("{a}/{b}")
    }
}

/// The folder of a path (`src/a` for `src/a/b.rs`; empty at the root).
pub fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_under_a_crate() {
        let files = Files::from_pairs([
            ("src/lib.rs", ""),
            ("src/a/mod.rs", ""),
            ("src/a/b/c.rs", ""),
            ("src/a/notes.md", ""),
            ("srcx/d.rs", ""),
        ]);
        assert_eq!(
            files.rust_files("src"),
            ["src/a/b/c.rs", "src/a/mod.rs", "src/lib.rs"]
        );
        let folders: Vec<_> = files.rust_folders("src").into_iter().collect();
        assert_eq!(folders, ["src/a/", "src/a/b/"]);
        assert_eq!(join("", "src"), "src");
        assert_eq!(join("python", "src"), "python/src");
        assert_eq!(dir_of("src/a/b.rs"), "src/a");
        assert_eq!(dir_of("lib.rs"), "");
    }
}
