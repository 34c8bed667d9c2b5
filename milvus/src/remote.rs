//! A connection to Milvus, used from blocking code like the rest of folio.

use std::collections::HashMap;
use std::future::Future;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use milvus::v2::error::Error as ClientError;
use milvus::v2::prelude::*;
use std::result::Result;
use tonic::{Code, ConnectError, TimeoutExpired};

use crate::error::Error;

/// How long [`Remote::connect`] waits for the server to answer its handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A Milvus client and the single-threaded runtime its calls run on.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    pub(crate) client: ClientV2,
    uri: String,
    /// What a timeout reports, in milliseconds: the connect limit, then the retry limit
    /// once set.
    limit_ms: AtomicU64,
    /// Which complete collection (name, version it was published for) served a version, as
    /// searches learned it: a complete collection's rows and recorded segments never
    /// change, so later searches of the same version skip asking Milvus again. Forgotten
    /// when a search of it fails (`resolve`).
    served: Mutex<HashMap<ServedKey, (String, u64)>>,
}

/// A version searched through a prefix, in one store file.
pub(crate) type ServedKey = (PathBuf, String, String, u64);

/// A kind of Milvus call a remote search makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    HasCollection,
    DescribeCollection,
    Search,
    /// A query by expression (a search node's catalog, documents and counts).
    Query,
}

/// Milvus calls made and the wall time inside them (the client's encoding and decoding
/// included), reported by a search as `RemoteCalls`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tally {
    pub(crate) has_collection: usize,
    pub(crate) describe_collection: usize,
    pub(crate) searches: usize,
    pub(crate) queries: usize,
    pub(crate) in_milvus: Duration,
}

impl Remote {
    /// Connects to the Milvus at `uri` (`http://host:19530`), waiting up to
    /// [`DEFAULT_CONNECT_TIMEOUT`] for it to answer.
    pub fn connect(uri: &str) -> Result<Remote, Error> {
        Self::connect_within(uri, DEFAULT_CONNECT_TIMEOUT)
    }

    /// Connects to the Milvus at `uri`, waiting up to `limit` for it to answer: a port
    /// nobody listens on is [`Error::Unreachable`] at once, a server that does not answer
    /// in time [`Error::Timeout`].
    pub fn connect_within(uri: &str, limit: Duration) -> Result<Remote, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // The client retries a refused connection until its limit and then reports a
        // timeout; a plain TCP connect first tells "nothing listens" apart from "silent".
        if let Err(reason) = probe(uri, limit) {
            return Err(Error::Unreachable {
                uri: uri.to_string(),
                reason,
            });
        }
        let config = ConnectConfig::new().uri(uri).connect_timeout(limit);
        match runtime.block_on(ClientV2::new(&config)) {
            Ok(client) => Ok(Remote {
                runtime,
                client,
                uri: uri.to_string(),
                limit_ms: AtomicU64::new(millis(limit)),
                served: Mutex::new(HashMap::new()),
            }),
            Err(e) => Err(classify(uri, limit, None, e)),
        }
    }

    /// The server's URI, as given to [`Remote::connect`].
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Gives up a call after retrying for `limit` (the client retries a failed call for
    /// minutes by default).
    pub fn retry_for(&self, limit: Duration) {
        self.limit_ms.store(millis(limit), Ordering::Relaxed);
        self.client
            .set_retry_param(RetryConfig::new().max_retry_timeout(limit));
    }

    /// Runs one client call about `collection` to completion: its failure names it.
    pub(crate) fn run_on<T>(
        &self,
        collection: &str,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        self.runtime
            .block_on(call)
            .map_err(|e| self.name(e, collection))
    }

    /// [`Remote::run_on`], counted and timed in `tally` as a call of `kind`.
    pub(crate) fn timed<T>(
        &self,
        tally: &mut Tally,
        kind: Call,
        collection: &str,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let started = Instant::now();
        let result = self.run_on(collection, call);
        tally.in_milvus += started.elapsed();
        match kind {
            Call::HasCollection => tally.has_collection += 1,
            Call::DescribeCollection => tally.describe_collection += 1,
            Call::Search => tally.searches += 1,
            Call::Query => tally.queries += 1,
        }
        result
    }

    /// Forgets every collection searches learned: the next search of each version asks
    /// Milvus again which collection serves it. Needed only when a complete collection
    /// was dropped and published again under the same name while this connection was
    /// open (a search of a dropped collection forgets it by itself).
    pub fn forget_collections(&self) {
        self.served_cache().clear();
    }

    pub(crate) fn served_cache(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<ServedKey, (String, u64)>> {
        // The map holds facts, each inserted whole: a panic elsewhere leaves it usable.
        self.served.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A client failure with the server and collection named, a timeout or a server gone
    /// told apart from a refusal.
    fn name(&self, error: Error, collection: &str) -> Error {
        match error {
            Error::Milvus { error, .. } => {
                let limit = Duration::from_millis(self.limit_ms.load(Ordering::Relaxed));
                classify(&self.uri, limit, Some(collection), *error)
            }
            other => other,
        }
    }
}

fn millis(limit: Duration) -> u64 {
    u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)
}

fn classify(uri: &str, limit: Duration, collection: Option<&str>, error: ClientError) -> Error {
    let kind = match &error {
        ClientError::RetryExhausted { source, .. } => source.as_ref(),
        other => other,
    };
    // Calls retried until a limit end as a timeout even when the server went away
    // meanwhile: a refused TCP connect says which.
    let timeout = || match probe(uri, PROBE_LIMIT) {
        Err(reason) => Error::Unreachable {
            uri: uri.to_string(),
            reason,
        },
        Ok(()) => Error::Timeout {
            uri: uri.to_string(),
            limit,
            collection: collection.map(str::to_string),
        },
    };
    match kind {
        ClientError::Timeout(_) => timeout(),
        ClientError::Grpc(status) => {
            if status.code() == Code::DeadlineExceeded || caused_by::<TimeoutExpired>(status) {
                return timeout();
            }
            if status.code() == Code::Unavailable || caused_by::<ConnectError>(status) {
                return Error::Unreachable {
                    uri: uri.to_string(),
                    reason: status.message().to_string(),
                };
            }
            Error::Milvus {
                uri: uri.to_string(),
                collection: collection.map(str::to_string),
                error: Box::new(error),
            }
        }
        _ => Error::Milvus {
            uri: uri.to_string(),
            collection: collection.map(str::to_string),
            error: Box::new(error),
        },
    }
}

/// Whether the transport failure behind `status` is an `E` (tonic reports a connect
/// timeout as `Cancelled`, its cause a `TimeoutExpired`).
fn caused_by<E: std::error::Error + 'static>(status: &tonic::Status) -> bool {
    let mut cause = std::error::Error::source(status);
    while let Some(error) = cause {
        if error.is::<E>() {
            return true;
        }
        cause = error.source();
    }
    false
}

/// How long the TCP probe after a timeout waits.
const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// Whether something accepts TCP connections at the URI's address (`Ok` when the URI names
/// no explicit port: nothing to probe).
fn probe(uri: &str, limit: Duration) -> Result<(), String> {
    let Some(address) = host_port(uri) else {
        return Ok(());
    };
    let addr = address
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or_else(|| "the host has no address".to_string())?;
    TcpStream::connect_timeout(&addr, limit)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// `host:port` of a URI like `http://host:19530`; none without an explicit port (the
/// client picks one by scheme), so only an address folio knows is probed.
fn host_port(uri: &str) -> Option<String> {
    let rest = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    let numeric = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    (!host.is_empty() && numeric).then(|| authority.to_string())
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn addresses_of_uris() {
        assert_eq!(
            host_port("http://127.0.0.1:19530").as_deref(),
            Some("127.0.0.1:19530")
        );
        assert_eq!(host_port("https://milvus.example/db"), None);
        assert_eq!(host_port("localhost:1").as_deref(), Some("localhost:1"));
        assert_eq!(host_port("http://"), None);
    }
}
