//! The pages: each a handler that reads the store on a blocking thread and renders HTML
//! (maud escapes every value it is given). A failure of any kind is a page that says what
//! went wrong, with a status code; the server goes on.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;

use maud::{html, Markup};

pub(crate) use crate::error::{read_err, PageError};
pub(crate) use crate::frame::layout;
use crate::state::State;

pub(crate) mod documents;
pub(crate) mod eval;
pub(crate) mod log;
pub(crate) mod search;
pub(crate) mod versions;

/// The page's parameters, or a page saying why they could not be read.
pub(crate) fn params<T>(
    query: Result<axum::extract::Query<T>, QueryRejection>,
) -> Result<T, PageError> {
    query
        .map(|q| q.0)
        .map_err(|e| PageError::Bad(e.body_text()))
}

/// Runs `page` on a blocking thread (store reads block), with the shared state.
pub(crate) async fn blocking<F, R>(state: Arc<State>, page: F) -> Result<R, PageError>
where
    F: FnOnce(&State) -> Result<R, PageError> + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(move || page(&state))
        .await
        .unwrap_or_else(|e| Err(PageError::Read(format!("the page failed: {e}"))))
}

/// A number parameter: absent is `default`, anything else but a number is refused.
pub(crate) fn number(
    name: &str,
    value: &Option<String>,
    default: usize,
) -> Result<usize, PageError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| PageError::Bad(format!("`{name}` must be a whole number, not `{text}`"))),
    }
}

/// An empty or missing text parameter as `None`.
pub(crate) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

pub(crate) async fn not_found() -> PageError {
    PageError::NotFound("no such page".into())
}

/// A query-string value, percent-encoded.
pub(crate) fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// `text[start..end]`, widened to character boundaries (empty when out of range).
pub(crate) fn slice(text: &str, start: usize, end: usize) -> &str {
    let mut start = start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    &text[start..end]
}

/// Previous / next links of a paged list.
pub(crate) fn pager(base: &str, page: usize, pages: usize) -> Markup {
    html! {
        p.pager {
            @if page > 1 { a href=(format!("{base}page={}", page - 1)) { "← previous" } " " }
            "page " (page) " of " (pages.max(1))
            @if page < pages { " " a href=(format!("{base}page={}", page + 1)) { "next →" } }
        }
    }
}
