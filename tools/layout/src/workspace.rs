//! The workspace's crates, from the few Cargo.toml keys the check needs: the root's
//! `[workspace] members`, each member's `[package] name` and `[lib] name`. Read line by line
//! (the project's manifests write these keys one per line).

use crate::files::{join, Files};

/// One crate of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// The package name (`folio-python`), what the layers block calls the crate.
    pub name: String,
    /// Its folder from the repository root (empty for the root package).
    pub dir: String,
    /// The name Rust paths give its library (`[lib] name`, else the package name with `_`).
    pub lib_name: String,
}

impl Package {
    /// The crate's `src/` folder from the repository root.
    pub fn src(&self) -> String {
        join(&self.dir, "src")
    }
}

/// The member folders listed by the root manifest's `[workspace] members` (the root alone
/// when there is no workspace).
pub fn members(root_manifest: &str) -> Vec<String> {
    let mut section = String::new();
    let mut collecting = false;
    let mut list = String::new();
    for line in root_manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if collecting {
            list.push_str(line);
            if line.contains(']') {
                break;
            }
            continue;
        }
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[workspace]" && key_of(line) == Some("members") {
            list.push_str(line);
            collecting = !line.contains(']');
            if !collecting {
                break;
            }
        }
    }
    let dirs = quoted(&list);
    if dirs.is_empty() {
        return vec![String::new()];
    }
    dirs.into_iter()
        .map(|d| if d == "." { String::new() } else { d })
        .collect()
}

/// The packages of the given member folders, read from their manifests; a folder whose
/// manifest is missing or has no package name is left out.
pub fn packages(files: &Files, dirs: &[String]) -> Vec<Package> {
    dirs.iter()
        .filter_map(|dir| {
            let manifest = files.get(&join(dir, "Cargo.toml"))?;
            let name = value(manifest, "[package]", "name")?;
            let lib_name =
                value(manifest, "[lib]", "name").unwrap_or_else(|| name.replace('-', "_"));
            Some(Package {
                name,
                dir: dir.clone(),
                lib_name,
            })
        })
        .collect()
}

/// The string value of `key = "..."` in `section`.
fn value(manifest: &str, section: &str, key: &str) -> Option<String> {
    let mut current = "";
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            current = line;
        } else if current == section && key_of(line) == Some(key) {
            return quoted(line).into_iter().next();
        }
    }
    None
}

fn key_of(line: &str) -> Option<&str> {
    line.split_once('=').map(|(k, _)| k.trim())
}

/// The double-quoted strings of a line, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_names() {
        let root = "[package]\nname = \"folio\"\n\n[workspace]\n# the tools\nmembers = [\n  \".\",\n  \"python\", # wheel\n]\ndefault-members = [\".\"]\n";
        assert_eq!(members(root), ["", "python"]);
        let files = Files::from_pairs([
            ("Cargo.toml", root),
            (
                "python/Cargo.toml",
                "[package]\nname = \"folio-python\"\n[lib]\nname = \"_folio\"\n",
            ),
        ]);
        let got = packages(&files, &members(root));
        assert_eq!(
            got[0],
            Package {
                name: "folio".into(),
                dir: String::new(),
                lib_name: "folio".into()
            }
        );
        assert_eq!(got[1].lib_name, "_folio");
        assert_eq!(got[1].src(), "python/src");
        assert_eq!(members("[package]\nname = \"x-y\"\n"), [""]);
        let single = Files::from_pairs([("Cargo.toml", "[package]\nname = \"x-y\"\n")]);
        assert_eq!(packages(&single, &[String::new()])[0].lib_name, "x_y");
    }
}
