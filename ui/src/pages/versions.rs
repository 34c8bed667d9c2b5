//! Versions: each index's versions, tags and aliases (with their routes and weights), and
//! what changed between two versions of an index.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::{blocking, encode, given, layout, params, read_err, PageError};
use crate::read::version_docs;

pub(crate) async fn page(
    State(state): State<Arc<crate::state::State>>,
) -> Result<Markup, PageError> {
    blocking(state, move |state| {
        let store = state.store()?;
        let indexes = store.indexes().list().map_err(read_err)?;
        let aliases = store.aliases().list().map_err(read_err)?;
        let mut sections = Vec::new();
        for index in &indexes {
            let versions = store.versions(&index.name).list().map_err(read_err)?;
            sections.push((index, versions));
        }
        Ok(layout(
            "Versions",
            html! {
                h2 { "Aliases" }
                @if aliases.is_empty() { p.note { "No aliases." } }
                @else {
                    table #aliases {
                        tr { th { "alias" } th { "routes (index@version: share of traffic)" } }
                        @for alias in &aliases {
                            tr.alias data-alias=(alias.name) {
                                td { (alias.name) }
                                td { @for route in &alias.routes { code { (route.index) "@" (route.version) ": " (route.weight) "%" } " " } }
                            }
                        }
                    }
                }
                @for (index, versions) in &sections {
                    h2 { "Index " (index.name) }
                    p {
                        "chunking " code { (serde_json::to_string(&index.spec).unwrap_or_default()) }
                        "; embedder " code { (index.embedder.to_string()) }
                        "; head " (index.head) ", serving " (index.serving)
                    }
                    form.bar method="get" action="/versions/diff" {
                        input type="hidden" name="index" value=(index.name);
                        "What changed from version "
                        input name="from" size="4" value=(versions.get(1).map_or(index.head, |v| v.version));
                        " to " input name="to" size="4" value=(index.head);
                        " " button { "Compare" }
                    }
                    table.versions data-index=(index.name) {
                        tr { th { "version" } th { "made by" } th { "created" } th { "documents" } th { "live children" } th { "segments" } th { "tags" } th { "aliases" } th { "" } }
                        @for v in versions {
                            tr.version data-version=(v.version) {
                                td { (v.version) }
                                td { (v.change) }
                                td { (time(v.created_ms)) }
                                td { (v.documents) }
                                td { (v.live_children) }
                                td { (v.segments) }
                                td { (v.tags.join(", ")) }
                                td { (v.aliases.join(", ")) }
                                td {
                                    @if v.head { "head " }
                                    @if v.serving { "serving " }
                                    a href=(super::search::link("", "", &format!("{}@{}", index.name, v.version))) { "search it" }
                                }
                            }
                        }
                    }
                }
            },
        ))
    })
    .await
}

/// Unix milliseconds as a UTC date and time.
fn time(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    folio::filter::format_date(ms)
}

#[derive(Deserialize)]
pub(crate) struct DiffQuery {
    index: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

pub(crate) async fn diff(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<DiffQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let store = state.store()?;
        let index = given(&query.index).ok_or_else(|| PageError::Bad("which index? (`index`)".into()))?;
        let version = |v: &Option<String>, name: &str| -> Result<u64, PageError> {
            let text = given(v).ok_or_else(|| PageError::Bad(format!("which version? (`{name}`)")))?;
            text.parse()
                .map_err(|_| PageError::Bad(format!("`{name}` must be a version number, not `{text}`")))
        };
        let (from, to) = (version(&query.from, "from")?, version(&query.to, "to")?);
        let snapshot = store.snapshot().map_err(read_err)?;
        let docs_of = |v: u64| -> Result<BTreeMap<String, u64>, PageError> {
            let target = format!("{index}@{v}");
            let (state, view) = snapshot
                .resolve(&target)
                .map_err(|e| PageError::NotFound(format!("`{target}`: {e}")))?;
            Ok(version_docs(&snapshot, &state, &view)?
                .into_iter()
                .map(|d| (d.doc_id, d.rev))
                .collect())
        };
        let (before, after) = (docs_of(from)?, docs_of(to)?);
        let added: Vec<&String> = after.keys().filter(|d| !before.contains_key(*d)).collect();
        let deleted: Vec<&String> = before.keys().filter(|d| !after.contains_key(*d)).collect();
        let replaced: Vec<&String> = after
            .iter()
            .filter(|(d, rev)| before.get(*d).is_some_and(|r| r != *rev))
            .map(|(d, _)| d)
            .collect();
        let unchanged = after.len() - added.len() - replaced.len();
        let spec = store
            .indexes()
            .list()
            .map_err(read_err)?
            .into_iter()
            .find(|i| i.name == index)
            .map(|i| serde_json::to_string(&i.spec).unwrap_or_default())
            .unwrap_or_default();
        let list = |kind: &str, ids: &[&String], v: u64| {
            html! {
                h2 { (kind) " (" (ids.len()) ")" }
                ul data-change=(kind) {
                    @for id in ids { li { a href=(format!("/document?id={}&target={}", encode(id), encode(&format!("{index}@{v}")))) { (id) } } }
                }
            }
        };
        Ok(layout(
            &format!("{index}: version {from} → {to}"),
            html! {
                p { "Chunking spec (one per index, so the same in both versions): " code { (spec) } }
                p #unchanged { (unchanged) " documents unchanged." }
                (list("added", &added, to))
                (list("replaced", &replaced, to))
                (list("deleted", &deleted, from))
            },
        ))
    })
    .await
}
