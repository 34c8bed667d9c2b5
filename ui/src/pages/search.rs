//! Search: a query asked as chosen principals of an index, version or alias, answered as
//! the library answers it, with the matching children highlighted inside each unit, each
//! stage's score, and how many chunks the caller could not see (a count only).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use maud::{html, Markup};
use serde::Deserialize;

use super::{blocking, encode, given, layout, number, params, slice, PageError};
use folio::chunk::{visible_text_of, EmbedTexts, SourceFormat, Span};
use folio::query::{Expand, Hit, SearchRequest, SearchResponse, DEFAULT_K};
use folio::store::{Access, Store, DEFAULT_INDEX};
use folio::{Document, Filter};

#[derive(Deserialize, Default)]
pub(crate) struct SearchQuery {
    q: Option<String>,
    #[serde(rename = "as")]
    principals: Option<String>,
    target: Option<String>,
    expand: Option<String>,
    k: Option<String>,
    budget: Option<String>,
    filter: Option<String>,
    route_key: Option<String>,
}

/// What the page shows below the form.
enum Outcome {
    Nothing,
    /// The answer, the chunks hidden from the caller, each unit's document as stored now.
    Answer(Box<SearchResponse>, u64, Vec<Option<Document>>),
    Refused(String),
}

pub(crate) async fn page(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<(StatusCode, Markup), PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let store = state.store()?;
        let outcome = match given(&query.q) {
            None => Outcome::Nothing,
            Some(text) => match request(&query, text).and_then(|r| answer(&store, &r)) {
                Ok((response, hidden)) => {
                    let sources = response
                        .results
                        .iter()
                        .map(|hit| store.document(&hit.doc_id).ok().flatten())
                        .collect();
                    Outcome::Answer(Box::new(response), hidden, sources)
                }
                Err(why) => Outcome::Refused(why),
            },
        };
        let status = match outcome {
            Outcome::Refused(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        };
        Ok((status, render(&store, &query, &outcome)))
    })
    .await
}

/// The request the form describes, or why it cannot be asked.
fn request(query: &SearchQuery, text: &str) -> Result<SearchRequest, String> {
    let principals: Vec<String> = given(&query.principals)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let mut request = SearchRequest::text(text)
        .access(Access::principals(principals))
        .k(number("k", &query.k, DEFAULT_K).map_err(|e| e.to_string())?)
        .expand(expand(given(&query.expand).unwrap_or("parent"))?)
        .target(given(&query.target).unwrap_or(DEFAULT_INDEX));
    if let Some(budget) = given(&query.budget) {
        request.token_budget = Some(
            budget
                .parse()
                .map_err(|_| format!("the token budget must be a whole number, not `{budget}`"))?,
        );
    }
    if let Some(filter) = given(&query.filter) {
        request = request.filter(Filter::parse(filter).map_err(|e| format!("filter: {e}"))?);
    }
    if let Some(key) = given(&query.route_key) {
        request = request.route_key(key);
    }
    Ok(request)
}

fn expand(text: &str) -> Result<Expand, String> {
    match text {
        "parent" => Ok(Expand::Parent),
        "section" => Ok(Expand::Section),
        _ => text
            .strip_prefix("window:")
            .and_then(|n| n.parse().ok())
            .map(Expand::Window)
            .ok_or_else(|| format!("expansion `{text}`: expected parent, section or window:N")),
    }
}

/// The answer, and how many live chunks of the answering version the caller may not see.
fn answer(store: &Store, request: &SearchRequest) -> Result<(SearchResponse, u64), String> {
    let response = store.search(request).map_err(|e| e.to_string())?;
    let version = format!("{}@{}", response.index, response.version);
    let all = store
        .visible(&version, &Access::Unrestricted)
        .map_err(|e| e.to_string())?;
    let theirs = store
        .visible(&version, &request.access)
        .map_err(|e| e.to_string())?;
    Ok((response, all.len() - theirs.len()))
}

fn render(store: &Store, query: &SearchQuery, outcome: &Outcome) -> Markup {
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    layout(
        "Search",
        html! {
            form.bar #search method="get" action="/search" {
                p { label { "query " input name="q" size="50" value=(value(&query.q)); } }
                p {
                    label { "as principals " input name="as" value=(value(&query.principals)) placeholder="alice, billing (empty: public only)"; }
                    label { "index, version or alias " input name="target" list="targets" value=(given(&query.target).unwrap_or(DEFAULT_INDEX)); }
                    datalist #targets { @for name in store.index_names() { option value=(name) {} } }
                    label { "route key " input name="route_key" size="10" value=(value(&query.route_key)); }
                }
                p {
                    label { "expand " input name="expand" size="10" value=(given(&query.expand).unwrap_or("parent")) placeholder="parent, section, window:N"; }
                    label { "k " input name="k" size="3" value=(given(&query.k).map_or(DEFAULT_K.to_string(), str::to_string)); }
                    label { "token budget " input name="budget" size="6" value=(value(&query.budget)); }
                    label { "filter " input name="filter" size="40" value=(value(&query.filter)) placeholder="updated_at >= 2024-01-01"; }
                }
                button { "Search" }
            }
            @match outcome {
                Outcome::Nothing => p.note { "Ask a question as one or more principals: the answer holds only what they may see." },
                Outcome::Refused(why) => p.error data-error="search" { (why) },
                Outcome::Answer(response, hidden, sources) => (answer_markup(response, *hidden, sources)),
            }
        },
    )
}

fn answer_markup(response: &SearchResponse, hidden: u64, sources: &[Option<Document>]) -> Markup {
    let stats = &response.stats;
    html! {
        p #answered data-index=(response.index) data-version=(response.version) {
            "Answered by " strong { (response.index) "@" (response.version) } ": "
            (response.results.len()) " units from " (stats.children_gathered) " children gathered of "
            (stats.visible) " the caller may see; " (stats.micros) " µs."
        }
        p #hidden data-hidden=(hidden) {
            (hidden) " chunks of this version are hidden from these principals (a count; their content is never shown)."
        }
        @if stats.duplicates_dropped > 0 { p { (stats.duplicates_dropped) " near-duplicate units dropped." } }
        ol #results {
            @for (hit, source) in response.results.iter().zip(sources) {
                li.hit data-doc-id=(hit.doc_id) data-parent-id=(hit.parent_id) data-start=(hit.start) data-end=(hit.end) {
                    p {
                        a href=(format!("/document?id={}&target={}", encode(&hit.doc_id), encode(&format!("{}@{}", response.index, response.version)))) { (hit.doc_id) }
                        " · " (hit.section_path.join(" › "))
                        " · unit score " strong { (format!("{:.4}", hit.score)) }
                        " · " (hit.tokens) " tokens · bytes " (hit.start) "…" (hit.end)
                    }
                    p.scores {
                        "vector scores of its children: "
                        @for child in &hit.children { code.child-score data-chunk-id=(child.chunk_id) { (child.chunk_id) " " (format!("{:.4}", child.score)) } " " }
                    }
                    pre.text { (highlighted(hit, source.as_ref())) }
                }
            }
        }
    }
}

/// The unit's text with its matching children marked, as a reader sees it (HTML without
/// its markup; `source` is the document as it is now). An HTML hit's text is already its
/// visible text: the children are marked in its source, read from `source` when that is the
/// revision the hit came from, and otherwise the text is shown unmarked.
fn highlighted(hit: &Hit, source: Option<&Document>) -> Markup {
    let format = source.map_or(SourceFormat::Text, |d| d.format);
    let unit = match format {
        SourceFormat::Html => source
            .and_then(|d| d.text.get(hit.start..hit.end))
            .filter(|s| visible_text_of(s, format) == hit.text),
        _ => Some(hit.text.as_str()),
    };
    let Some(unit) = unit else {
        return html! { (hit.text) };
    };
    let mut spans: Vec<(usize, usize)> = hit
        .children
        .iter()
        .map(|c| (c.start.max(hit.start), c.end.min(hit.end)))
        .filter(|(s, e)| s < e)
        .collect();
    spans.sort_unstable();
    let mut cuts = Vec::new();
    let mut at = hit.start;
    for (start, end) in spans {
        if at < start {
            cuts.push((false, at, start));
        }
        if at.max(start) < end {
            cuts.push((true, at.max(start), end));
        }
        at = at.max(end);
    }
    if at < hit.end {
        cuts.push((false, at, hit.end));
    }
    // Formats whose visible text is not their source are read from the unit's own source
    // (cut at element bounds), not the whole document: a search stays as fast on a
    // book-sized page.
    let reader = matches!(format, SourceFormat::Html | SourceFormat::Dialog)
        .then(|| EmbedTexts::new(unit, format));
    let show = |start: usize, end: usize| {
        let (start, end) = (start - hit.start, end - hit.start);
        match &reader {
            Some(reader) => reader.body(Span { start, end }),
            None => slice(unit, start, end).to_string(),
        }
    };
    html! {
        @for (marked, start, end) in cuts {
            @if marked { mark { (show(start, end)) } } @else { (show(start, end)) }
        }
    }
}

pub(crate) fn link(query: &str, principals: &str, target: &str) -> String {
    format!(
        "/search?q={}&as={}&target={}",
        encode(query),
        encode(principals),
        encode(target)
    )
}
