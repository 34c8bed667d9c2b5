//! `folio ui`: a local web application over one folio store, for its owner. Pages rendered
//! on the server: documents with their chunks drawn over the text, searches as any
//! principal, versions and what changed between two, the per-question output of
//! `folio eval --jsonl` and `folio replay --jsonl`, and the request log.
//!
//! It can search as any principal, so it answers only requests that carry the token it
//! prints at start (loopback included: any local page can send requests to it) and only to
//! the host names of the address it is bound to (against DNS rebinding); see [`guard`].
//! It opens the store read-only and writes nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::routing::get;
use axum::Router;

mod error;
mod frame;
mod guard;
mod pages;
mod read;
mod state;

pub use error::UiError;
pub use guard::Token;
use state::State;
pub use state::{Opener, Options};

/// A bound server, not yet answering.
pub struct Server {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    token: Token,
    state: Arc<State>,
}

impl Server {
    /// Binds `options.addr` and draws the access token.
    pub fn bind(options: Options) -> Result<Server, UiError> {
        let listener =
            std::net::TcpListener::bind(options.addr).map_err(|source| UiError::Bind {
                addr: options.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| UiError::Bind {
            addr: options.addr,
            source,
        })?;
        Ok(Server {
            listener,
            addr,
            token: Token::random()?,
            state: Arc::new(State::new(options)),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to open, token included.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token.as_str())
    }

    /// Answers requests until the process ends.
    pub fn serve(self) -> Result<(), UiError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
            .map_err(UiError::Serve)?;
        let allowed = guard::Allowed::new(self.addr, self.token);
        let app = router(self.state).layer(axum::middleware::from_fn_with_state(
            Arc::new(allowed),
            guard::check,
        ));
        runtime.block_on(async move {
            self.listener
                .set_nonblocking(true)
                .map_err(UiError::Serve)?;
            let listener =
                tokio::net::TcpListener::from_std(self.listener).map_err(UiError::Serve)?;
            axum::serve(listener, app).await.map_err(UiError::Serve)
        })
    }
}

fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/", get(pages::documents::list))
        .route("/documents", get(pages::documents::list))
        .route("/document", get(pages::documents::one))
        .route("/search", get(pages::search::page))
        .route("/versions", get(pages::versions::page))
        .route("/versions/diff", get(pages::versions::diff))
        .route("/eval", get(pages::eval::page))
        .route("/eval/question", get(pages::eval::question))
        .route("/log", get(pages::log::page))
        .route("/log/replay", get(pages::log::replay))
        .fallback(pages::not_found)
        .with_state(state)
}
