//! What ARCHITECTURE.md declares: the `layers` block (per crate: layer order, allowed
//! same-layer imports, crates confined to some places, types with one `impl` file) and the
//! file list (table rows naming paths under headings naming folders).

use std::collections::BTreeMap;

/// One crate's lines of the `layers` block.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Layers from the top: entries of the crate's `src/` (`store/`, `error.rs`).
    pub layers: Vec<Vec<String>>,
    /// Same-layer imports allowed (`allow: a -> b`).
    pub allowed: Vec<(String, String)>,
    /// External crates allowed only under some places (`redb-only: store/`): crate name as
    /// Rust paths write it, and the folders or files (relative to `src/`) that may use it.
    pub only: Vec<(String, Vec<String>)>,
    /// Types whose inherent `impl` may appear in one file only (`one-impl: Store`).
    pub one_impl: Vec<String>,
    /// The block's line of each layer entry (1-based).
    pub lines: BTreeMap<String, usize>,
    /// The line naming the crate first.
    pub line: usize,
}

impl Rules {
    /// The layer index (0 at the top) of an entry.
    pub fn layer_of(&self, entry: &str) -> Option<usize> {
        self.layers
            .iter()
            .position(|layer| layer.iter().any(|e| e == entry))
    }
}

/// The `layers` block: rules per crate (package name), and lines it could not read.
#[derive(Debug, Default)]
pub struct Layers {
    /// Rules by package name.
    pub crates: BTreeMap<String, Rules>,
    /// `(line, message)` for lines not understood, or no block at all (line 1).
    pub problems: Vec<(usize, String)>,
}

/// Reads the fenced block tagged `layers`.
pub fn layers(doc: &str) -> Layers {
    let mut out = Layers::default();
    let mut inside = false;
    let mut found = false;
    let mut current: Option<String> = None;
    for (i, raw) in doc.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if !inside {
            if line == "```layers" {
                inside = true;
                found = true;
            }
            continue;
        }
        if line.starts_with("```") {
            inside = false;
            continue;
        }
        let mut rest = line.split(" #").next().unwrap_or("").trim();
        if rest.is_empty() || rest.starts_with('#') {
            continue;
        }
        if let Some(tail) = rest.strip_prefix('[') {
            let Some((name, after)) = tail.split_once(']') else {
                out.problems
                    .push((n, format!("`{rest}`: a crate prefix is `[name]`")));
                continue;
            };
            current = Some(name.trim().to_string());
            rest = after.trim();
        }
        let Some(name) = current.clone() else {
            out.problems
                .push((n, format!("`{rest}` comes before any `[crate]` line")));
            continue;
        };
        let rules = out.crates.entry(name).or_insert_with(|| Rules {
            line: n,
            ..Rules::default()
        });
        if rest.is_empty() {
            continue;
        }
        match rest.split_once(':') {
            Some(("allow", pairs)) => {
                for pair in pairs.split(',') {
                    match pair.split_once("->") {
                        Some((a, b)) => rules
                            .allowed
                            .push((a.trim().to_string(), b.trim().to_string())),
                        None => out
                            .problems
                            .push((n, format!("`{pair}`: an allowed import is `a -> b`"))),
                    }
                }
            }
            Some(("one-impl", types)) => rules.one_impl.extend(words(types)),
            Some((key, places)) if key.ends_with("-only") => {
                let krate = key.trim_end_matches("-only").trim().to_string();
                rules.only.push((krate, words(places)));
            }
            Some((key, _)) => out.problems.push((n, format!("unknown key `{key}:`"))),
            None => {
                let layer = words(rest);
                for entry in &layer {
                    if rules.lines.insert(entry.clone(), n).is_some() {
                        out.problems
                            .push((n, format!("`{entry}` is in two layers")));
                    }
                }
                rules.layers.push(layer);
            }
        }
    }
    if !found {
        out.problems
            .push((1, "no fenced block tagged `layers`".to_string()));
    }
    out
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

/// The paths the file list names, with their lines: in each table row, every backticked
/// path of the first cell, joined to the folder the nearest heading above names (its first
/// backticked text, when that ends with `/`; the repository root otherwise). Headings that
/// name a folder list it too.
pub fn listed(doc: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut base = String::new();
    let mut fenced = false;
    for (i, raw) in doc.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.starts_with('#') {
            base = backticked(line)
                .into_iter()
                .next()
                .filter(|t| t.ends_with('/'))
                .unwrap_or_default();
            if !base.is_empty() {
                out.push((base.clone(), i + 1));
            }
        } else if let Some(row) = line.strip_prefix('|') {
            for path in backticked(first_cell(row)) {
                if !path.contains(' ') {
                    out.push((format!("{base}{path}"), i + 1));
                }
            }
        }
    }
    out
}

/// The text up to the first `|` outside backticks.
fn first_cell(row: &str) -> &str {
    let mut code = false;
    for (i, c) in row.char_indices() {
        match c {
            '`' => code = !code,
            '|' if !code => return &row[..i],
            _ => {}
        }
    }
    row
}

/// The backticked spans of a text, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_block() {
        let doc = "# A\n\n```layers\n[app] main.rs\ncli/ # the command\n\n[lib]\nstore/\nchunk/ embed/\nallow: chunk/ -> embed/\nredb-only: store/\none-impl: Store\n[other] lib.rs\nnonsense: x\nerror.rs lib.rs\n```\n";
        let got = layers(doc);
        let app = &got.crates["app"];
        assert_eq!(
            app.layers,
            [vec!["main.rs".to_string()], vec!["cli/".to_string()]]
        );
        let lib = &got.crates["lib"];
        assert_eq!(lib.layer_of("embed/"), Some(1));
        assert_eq!(lib.layer_of("nowhere/"), None);
        assert_eq!(lib.allowed, [("chunk/".to_string(), "embed/".to_string())]);
        assert_eq!(lib.only, [("redb".to_string(), vec!["store/".to_string()])]);
        assert_eq!(lib.one_impl, ["Store"]);
        assert_eq!(lib.lines["chunk/"], 9);
        assert_eq!(lib.line, 7);
        assert_eq!(got.problems.len(), 2, "{:?}", got.problems);
        assert!(got.problems[0].1.contains("unknown key"));
        assert!(got.problems[1].1.contains("two layers"));
        let none = layers("no block here\n```\nx\n```\n");
        assert_eq!(
            none.problems,
            [(1, "no fenced block tagged `layers`".to_string())]
        );
        let orphan = layers("```layers\nlib.rs\n```\n");
        assert!(orphan.problems[0].1.contains("before any `[crate]`"));
    }

    #[test]
    fn file_list() {
        let doc = "\
## Top level
| file | job |
|---|---|
| `Cargo.toml` | x |
## `src/`
| `lib.rs` | the root |
| `input/` | a folder row |
### `src/eval/` (feature `eval`): measurement
| `ann/config.rs`, `ann/error.rs` | two in one cell; `not/this.rs` |
| `mod.rs` | `a|b` in the second cell |
| `a|b.rs` | a pipe inside backticks |
```
| `fenced.rs` | not a row |
```
## `python/`
| `src/lib.rs` | x |
| `folder or file` | not a path |
";
        let got: Vec<_> = listed(doc).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            got,
            [
                "Cargo.toml",
                "src/",
                "src/lib.rs",
                "src/input/",
                "src/eval/",
                "src/eval/ann/config.rs",
                "src/eval/ann/error.rs",
                "src/eval/mod.rs",
                "src/eval/a|b.rs",
                "python/",
                "python/src/lib.rs",
            ]
        );
        assert_eq!(listed(doc)[2].1, 6);
    }
}
