//! Request log: recent requests with the version that answered, their feedback and
//! whether they failed; failures selected here are replayed between two versions (a read:
//! the replay writes nothing).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, RawQuery, State};
use maud::{html, Markup, PreEscaped};
use serde::Deserialize;

use super::{blocking, encode, given, layout, number, params, read_err, PageError};
use folio::review::LogEntry;
use folio_eval::data::QuestionRecord;
use folio_eval::{version_report, QuestionSet, VersionReplay};

/// Requests a page shows.
const PAGE: usize = 50;

#[derive(Deserialize)]
pub(crate) struct LogQuery {
    page: Option<String>,
}

/// Whether a request failed, and why: a thumb down, a `wrong` verdict, nothing returned.
fn failure(entry: &LogEntry) -> Option<&'static str> {
    let r = &entry.request;
    let feedback = r.feedback.as_ref();
    if feedback.is_some_and(|f| f.rating == Some(folio::review::Rating::Down)) {
        Some("thumb down")
    } else if feedback.is_some_and(|f| f.verdict == Some(folio::review::Verdict::Wrong)) {
        Some("wrong")
    } else if r.parents.is_empty() {
        Some("nothing returned")
    } else {
        None
    }
}

const SELECT_FAILURES: &str = "document.querySelectorAll('tr.request').forEach(function (row) {\
    row.querySelector('input').checked = row.dataset.failure !== ''; });";

pub(crate) async fn page(
    State(state): State<Arc<crate::state::State>>,
    query: Result<Query<LogQuery>, QueryRejection>,
) -> Result<Markup, PageError> {
    let query = params(query)?;
    blocking(state, move |state| {
        let store = state.store()?;
        let page = number("page", &query.page, 1)?.max(1);
        let mut entries = store.log().entries().map_err(read_err)?;
        entries.reverse();
        let total = entries.len();
        let shown: Vec<&LogEntry> = entries.iter().skip((page - 1) * PAGE).take(PAGE).collect();
        let targets = store.index_names();
        Ok(layout(
            "Request log",
            html! {
                @if !store.logs_requests() && total == 0 {
                    p.note { "The store logs no requests (ingest or search with --log to turn the log on)." }
                }
                p { (total) " requests, newest first." }
                form #replay method="get" action="/log/replay" {
                    p {
                        button type="button" onclick=(PreEscaped(SELECT_FAILURES)) { "Select failures" }
                        " then replay them between "
                        input name="base" list="targets" placeholder="default@1" required;
                        " and " input name="other" list="targets" placeholder="default" required;
                        datalist #targets { @for name in &targets { option value=(name) {} } }
                        " " button { "Replay" }
                    }
                    table #requests {
                        tr { th { "" } th { "id" } th { "time" } th { "query" } th { "as" } th { "answered by" } th { "units" } th { "best" } th { "µs" } th { "feedback" } th { "failure" } }
                        @for entry in &shown {
                            @let r = &entry.request;
                            @let failed = failure(entry);
                            tr.request data-request-id=(entry.request_id) data-failure=(failed.unwrap_or("")) {
                                td { input type="checkbox" name="id" value=(entry.request_id); }
                                td { (entry.request_id) }
                                td { (folio::filter::format_date(i64::try_from(r.time_ms).unwrap_or(i64::MAX))) }
                                td { @match r.text() { Some(text) => (text), None => em { "a vector" } } }
                                td { @match &r.principals { Some(p) if p.is_empty() => em { "public only" }, Some(p) => (p.join(", ")), None => em { "unrestricted" } } }
                                td { (r.index) "@" (r.version) @if r.target != r.index { " (via " (r.target) ")" } }
                                td { (r.parents.len()) }
                                td { (r.best_score().map_or(String::new(), |s| format!("{s:.3}"))) }
                                td { (r.latency_us) }
                                td { (feedback(entry)) }
                                td { @if let Some(why) = failed { span.split { (why) } } }
                            }
                        }
                    }
                }
                (super::pager("/log?", page, total.div_ceil(PAGE)))
            },
        ))
    })
    .await
}

fn feedback(entry: &LogEntry) -> String {
    let Some(f) = &entry.request.feedback else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(rating) = &f.rating {
        parts.push(format!("{rating:?}").to_lowercase());
    }
    if let Some(verdict) = &f.verdict {
        parts.push(format!("{verdict:?}").to_lowercase());
    }
    if let Some(note) = &f.note {
        parts.push(note.clone());
    }
    if !f.gold.is_empty() {
        parts.push(format!("{} gold spans", f.gold.len()));
    }
    parts.join("; ")
}

/// `/log/replay?id=3&id=7&base=default@1&other=default`: the selected requests asked of
/// both versions, with the replay's tables.
pub(crate) async fn replay(
    State(state): State<Arc<crate::state::State>>,
    RawQuery(raw): RawQuery,
) -> Result<Markup, PageError> {
    let mut ids = Vec::new();
    let (mut base, mut other) = (None, None);
    let raw = raw.unwrap_or_default();
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        let value = value.into_owned();
        match key.as_ref() {
            "id" => ids.push(
                value
                    .parse::<u64>()
                    .map_err(|_| PageError::Bad(format!("request id `{value}` is not a number")))?,
            ),
            "base" => base = Some(value),
            "other" => other = Some(value),
            _ => {}
        }
    }
    let base = given(&base)
        .ok_or_else(|| PageError::Bad("replay between which versions? (`base`)".into()))?
        .to_string();
    let other = given(&other)
        .ok_or_else(|| PageError::Bad("replay between which versions? (`other`)".into()))?
        .to_string();
    if ids.is_empty() {
        return Err(PageError::Bad(
            "select at least one request to replay".into(),
        ));
    }
    blocking(state, move |state| {
        let store = state.store()?;
        let entries = store.log().entries().map_err(read_err)?;
        let mut records = Vec::new();
        for id in &ids {
            let entry = entries
                .iter()
                .find(|e| e.request_id == *id)
                .ok_or_else(|| PageError::NotFound(format!("no request {id} in the log")))?;
            let text_of = |doc: &str| store.document(doc).ok().flatten().map(|d| d.text);
            let (record, _) = QuestionRecord::from_logged(entry, text_of).ok_or_else(|| {
                PageError::Bad(format!("request {id} searched by vector: it has no text to replay"))
            })?;
            records.push(record);
        }
        let set = QuestionSet::from_records("the selected requests", records);
        let report = VersionReplay::new([base.clone(), other.clone()])
            .run(&store, set)
            .map_err(|e| PageError::Bad(e.to_string()))?;
        let id_args: String = ids.iter().map(|id| format!("&id={id}")).collect();
        Ok(layout(
            &format!("Replay: {base} → {other}"),
            html! {
                p { (ids.len()) " requests replayed. The same from the command line: "
                    code { "folio log select STORE --out q.jsonl …; folio replay STORE --queries q.jsonl --target " (base) " --target " (other) } }
                pre #replay-tables { (version_report::tables(&report)) }
                p { a href=(format!("/log/replay?base={}&other={}{id_args}", encode(&other), encode(&base))) { "the other way round" } }
            },
        ))
    })
    .await
}
