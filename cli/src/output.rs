//! What the command prints: JSON for scripts, and text with control characters escaped,
//! so an id or a document cannot move the cursor, recolour the terminal or hide text.

use std::collections::BTreeMap;

use serde::Serialize;

use folio::query::SearchResponse;
use folio::store::{Store, UnavailableIndex};

/// Prints `value` as one pretty JSON document.
pub(crate) fn print_json<T: Serialize>(value: &T) -> CliResult {
    println!("{}", serde_json::to_string_pretty(value).map_err(err)?);
    Ok(())
}

/// `text` with control characters (C0, DEL, C1) and the bidirectional overrides written
/// as escapes: `\n`, `\t`, `\r`, else `\u{..}`.
pub(crate) fn escape(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The version each index serves now, as a search without `@VERSION` reports it: the head
/// after any automatic merge, or the version a rollback pinned.
pub(crate) fn serving_versions(store: &Store) -> Result<BTreeMap<String, u64>, String> {
    Ok(store
        .indexes()
        .list()
        .map_err(err)?
        .into_iter()
        .map(|i| (i.name, i.serving))
        .collect())
}

/// `versions default@4, small@2`.
pub(crate) fn versions_line(versions: &BTreeMap<String, u64>) -> String {
    let list: Vec<String> = versions.iter().map(|(i, v)| format!("{i}@{v}")).collect();
    format!("versions {}", list.join(", "))
}

/// Indexes the store could not load, and what to do about them.
pub(crate) fn print_unavailable(unavailable: &[UnavailableIndex]) {
    for bad in unavailable {
        println!(
            "  index {}: could not be loaded ({}); `folio index drop` removes it",
            bad.name, bad.reason
        );
    }
}

/// The first `max_chars` characters of `text` on one line, escaped.
pub(crate) fn preview(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", escape(&flat[..i])),
        None => escape(&flat),
    }
}

pub(crate) fn print_response(response: &SearchResponse) {
    let paths: Vec<String> = response
        .stats
        .paths
        .iter()
        .map(|p| format!("{p:?}").to_lowercase())
        .collect();
    println!(
        "{}@{}: {} results of {} visible chunks ({}; {} distances; {:.2} ms)",
        response.index,
        response.version,
        response.results.len(),
        response.stats.visible,
        if paths.is_empty() {
            "nothing visible".to_string()
        } else {
            paths.join("+")
        },
        response.stats.distances,
        response.stats.micros as f64 / 1000.0
    );
    if let Some(reranker) = &response.reranker {
        println!("reranked by {}", escape(reranker));
    }
    if response.stats.duplicates_dropped > 0 {
        println!(
            "({} near-duplicate units left out; --no-dedup keeps them)",
            response.stats.duplicates_dropped
        );
    }
    for (i, hit) in response.results.iter().enumerate() {
        let section = if hit.section_path.is_empty() {
            String::new()
        } else {
            format!(" › {}", escape(&hit.section_path.join(" › ")))
        };
        let pages = match hit.pages {
            Some(p) if p.first == p.last => format!(" p. {}", p.first),
            Some(p) => format!(" pp. {}-{}", p.first, p.last),
            None => String::new(),
        };
        println!(
            "{:>2}. {:.3}  {}{section}  [{}]{pages}",
            i + 1,
            hit.score,
            escape(&hit.doc_id),
            escape(&hit.parent_id)
        );
        println!("    {}", preview(&hit.text, 220));
        if !hit.metadata.is_empty() {
            let fields: Vec<String> = hit
                .metadata
                .iter()
                .map(|(key, value)| format!("{key}: {value}"))
                .collect();
            println!("    {{{}}}", escape(&fields.join(", ")));
        }
    }
}

/// What a command returns: an error is a message for stderr.
pub(crate) type CliResult = Result<(), String>;

pub(crate) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}
