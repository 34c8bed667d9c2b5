//! What can go wrong between folio and Milvus. The failures a user can act on (nothing
//! published for a version, a publish not finished, a collection of another store, a server
//! down or silent) are variants of their own that name the collection and what to run.

use std::time::Duration;

/// A publish, a sync or a remote search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the folio store failed.
    #[error(transparent)]
    Folio(#[from] folio::ReadError),
    /// A search through Milvus failed in folio.
    #[error(transparent)]
    Query(#[from] folio::QueryError),
    /// Changing the folio store failed (an alias set or rolled back).
    #[error(transparent)]
    Index(#[from] folio::IndexError),
    /// No complete collection holds the version: neither its own nor one published for a
    /// version it derives from without new segments (see `docs/milvus.md`, "Versions and
    /// collections").
    #[error(
        "no collection on {uri} holds {index}@{version} (its own would be `{collection}`{}): run `folio publish STORE {index}@{version} --milvus {uri}`",
        nearest.as_ref().map(|(c, v)| format!("; `{c}` holds {index}@{v}, but {index}@{version} has segments it lacks: a write or a compaction came between")).unwrap_or_default()
    )]
    NotPublished {
        /// The server.
        uri: String,
        /// The index.
        index: String,
        /// The version asked for.
        version: u64,
        /// The collection the version's own publish would make.
        collection: String,
        /// The newest complete collection of an earlier version, which cannot serve this
        /// one (collection, its version).
        nearest: Option<(String, u64)>,
    },
    /// The collection that would serve the version is a publish not finished (or whose
    /// rows went missing).
    #[error(
        "collection `{collection}` on {uri} is an unfinished publish of {index}@{published}: run `folio publish STORE {index}@{published} --milvus {uri}` to finish it"
    )]
    Incomplete {
        /// The server.
        uri: String,
        /// The collection.
        collection: String,
        /// The index.
        index: String,
        /// The version it is a publish of.
        published: u64,
    },
    /// Milvus answered with rows another store published (a chunk id that is not the
    /// store's for that child number), or a collection of that name holds something else.
    #[error(
        "collection `{collection}` on {uri} does not hold this store's {index}@{version} ({problem}): drop it, or use another `--collection` prefix, then run `folio publish STORE {index}@{version} --milvus {uri}`"
    )]
    ForeignCollection {
        /// The server.
        uri: String,
        /// The collection.
        collection: String,
        /// The index.
        index: String,
        /// The version folio asked it for.
        version: u64,
        /// What differs.
        problem: String,
    },
    /// Nothing listens at the server's address (connection refused, or no such host).
    #[error("no Milvus server at {uri} ({reason}): start one (see docs/milvus.md, \"Try it\") or pass `--milvus URI`")]
    Unreachable {
        /// The server.
        uri: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// The server did not answer in time (it accepts connections but stays silent, or is
    /// overloaded).
    #[error("Milvus at {uri} did not answer within {}s{}: check that it is a Milvus server and running", limit.as_secs_f32(), collection.as_ref().map(|c| format!(" (collection `{c}`)")).unwrap_or_default())]
    Timeout {
        /// The server.
        uri: String,
        /// How long folio waited.
        limit: Duration,
        /// The collection asked about, when there was one.
        collection: Option<String>,
    },
    /// Milvus refused a request.
    #[error("Milvus at {uri} refused a request{}: {error}", collection.as_ref().map(|c| format!(" on collection `{c}`")).unwrap_or_default())]
    Milvus {
        /// The server.
        uri: String,
        /// The collection asked about, when there was one.
        collection: Option<String>,
        /// What the client said (boxed: it is large, and every call returns this enum).
        error: Box<milvus::v2::error::Error>,
    },
    /// The async runtime the client runs on could not start.
    #[error("could not start the client's runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// A follower's server is not the one the index was last published to (each index is
    /// followed on one server: the one its latest publish named).
    #[error("index `{index}` was last published to {published_to}, not {following}: follow it with `folio milvus follow STORE --milvus {published_to}`, or publish it to {following}")]
    PublishedElsewhere {
        /// The index.
        index: String,
        /// The server its latest publish named.
        published_to: String,
        /// The server the follower applies changes to.
        following: String,
    },
    /// A collection holds what folio did not publish, or lacks what it did.
    #[error("collection `{collection}`: {problem}")]
    Collection {
        /// The collection.
        collection: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A search node found no catalog or no complete documents for what it was asked: the
    /// collection was published before search nodes, or its publish was cut short before
    /// its documents were written (see `docs/milvus.md`, "Search nodes").
    #[error(
        "{} on {uri} was published before search nodes (no {}): run `folio publish STORE {target} --milvus {uri}`",
        collection.as_ref().map_or_else(|| format!("nothing under the prefix `{prefix}`"), |c| format!("collection `{c}`")),
        if collection.is_some() { "complete documents collection a node reads units from: or its publish was cut short" } else { "catalog a node resolves targets with" }
    )]
    PublishedBeforeNodes {
        /// The server.
        uri: String,
        /// The collection prefix.
        prefix: String,
        /// What to publish: `INDEX@VERSION`, or the target asked for.
        target: String,
        /// The collection that lacks its documents, when known.
        collection: Option<String>,
    },
    /// A search node's catalog holds no index, tag or alias of this name.
    #[error(
        "`{target}` names no index, tag or alias published on {uri} under the prefix `{prefix}`: run `folio publish STORE INDEX --milvus {uri}` (or `folio milvus sync STORE --milvus {uri}` after a change)"
    )]
    UnknownTarget {
        /// The server.
        uri: String,
        /// The collection prefix.
        prefix: String,
        /// The target asked for.
        target: String,
    },
    /// A search node was given a query embedder other than the one that made the index's
    /// vectors (name, fingerprint or dimension differ).
    #[error("index `{index}` was published with embedder {published}; the query embedder is {given}: pass the same model")]
    EmbedderMismatch {
        /// The index.
        index: String,
        /// The published embedder (name, dimension, metric, fingerprint).
        published: String,
        /// The query embedder given.
        given: String,
    },
    /// A search node has a text query but no embedder for it, and cannot build the
    /// published one from its name.
    #[error("a text query of index `{index}` needs its embedder {published}: pass it (`--embedder SPEC`, `Searcher::with_embedder`)")]
    EmbedderNeeded {
        /// The index.
        index: String,
        /// The published embedder.
        published: String,
    },
}

impl From<milvus::v2::error::Error> for Error {
    /// The client's error as it comes out of a call; [`crate::Remote`] names the server and
    /// the collection, and tells a timeout or a server down apart, before it is returned.
    fn from(e: milvus::v2::error::Error) -> Self {
        Error::Milvus {
            uri: String::new(),
            collection: None,
            error: Box::new(e),
        }
    }
}
