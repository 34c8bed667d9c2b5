//! What can go wrong: the server's start ([`UiError`]) and a page ([`PageError`], which
//! renders as a page with a status code).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::frame::layout;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// No random bytes for the token.
    #[error("no random bytes for the access token: {0}")]
    Random(String),
    /// The server failed while running.
    #[error("the server stopped: {0}")]
    Serve(std::io::Error),
}

/// What a page could not do.
#[derive(Debug)]
pub(crate) enum PageError {
    /// The store could not be opened (missing, damaged, another embedder).
    Store(String),
    /// A parameter the page cannot use: a malformed query, filter or number.
    Bad(String),
    /// What the page names does not exist: an unknown document, index or version.
    NotFound(String),
    /// Reading failed after the store opened.
    Read(String),
    /// Refused by the guard.
    Refused { status: StatusCode, why: String },
}

impl PageError {
    fn parts(&self) -> (StatusCode, &'static str, &str) {
        match self {
            PageError::Store(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The store could not be opened",
                why,
            ),
            PageError::Bad(why) => (StatusCode::BAD_REQUEST, "Bad input", why),
            PageError::NotFound(why) => (StatusCode::NOT_FOUND, "Not found", why),
            PageError::Read(why) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "The store could not be read",
                why,
            ),
            PageError::Refused { status, why } => (*status, "Refused", why),
        }
    }
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.parts().2)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, why) = self.parts();
        let page = layout(
            title,
            html! {
                p.error data-error=(title) { (why) }
            },
        );
        (status, page).into_response()
    }
}

/// Any error of the library, as a read failure.
pub(crate) fn read_err(e: impl std::fmt::Display) -> PageError {
    PageError::Read(e.to_string())
}
