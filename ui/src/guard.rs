//! Who may use the pages: requests to one of the server's own host names (a DNS-rebinding
//! page sends its own name) that carry the access token, in the query (`?token=`, as the
//! printed address does, which also sets a cookie) or in that cookie.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{COOKIE, HOST, SET_COOKIE};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::PageError;
use crate::error::UiError;

const COOKIE_NAME: &str = "folio_ui_token";

/// The access token: 32 random bytes, hex.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A new random token.
    pub fn random() -> Result<Token, UiError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| UiError::Random(e.to_string()))?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the texts differ.
    fn matches(&self, given: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// The host names requests may carry, and the token.
pub(crate) struct Allowed {
    hosts: Vec<String>,
    token: Token,
}

impl Allowed {
    pub(crate) fn new(addr: SocketAddr, token: Token) -> Allowed {
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            for name in ["127.0.0.1", "localhost", "[::1]"] {
                hosts.push(format!("{name}:{port}"));
            }
        }
        Allowed { hosts, token }
    }
}

/// Refuses a request to a foreign host name or without the token.
pub(crate) async fn check(
    State(allowed): State<Arc<Allowed>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !allowed.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return PageError::Refused {
            status: StatusCode::MISDIRECTED_REQUEST,
            why: format!(
                "this server answers to {} only (the request named host `{host}`)",
                allowed.hosts.join(", ")
            ),
        }
        .into_response();
    }
    let from_query = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("token=")))
        .filter(|t| allowed.token.matches(t))
        .is_some();
    let from_cookie = request
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
        .any(|t| allowed.token.matches(t));
    if !from_query && !from_cookie {
        return PageError::Refused {
            status: StatusCode::UNAUTHORIZED,
            why: "this page needs the access token `folio ui` printed when it started: open \
                  the address it printed"
                .into(),
        }
        .into_response();
    }
    let mut response = next.run(request).await;
    if from_query {
        let cookie = format!(
            "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/",
            allowed.token.as_str()
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }
    response
}
