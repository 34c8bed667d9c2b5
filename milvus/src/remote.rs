//! A connection to Milvus, used from blocking code like the rest of folio.

use std::future::Future;
use std::time::Duration;

use milvus::v2::prelude::*;
use std::result::Result;

use crate::error::Error;

/// A Milvus client and the single-threaded runtime its calls run on.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    pub(crate) client: ClientV2,
}

impl Remote {
    /// Connects to the Milvus at `uri` (`http://host:19530`).
    pub fn connect(uri: &str) -> Result<Remote, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = runtime.block_on(ClientV2::new(&ConnectConfig::new().uri(uri)))?;
        Ok(Remote { runtime, client })
    }

    /// Gives up a call after retrying for `limit` (the client retries a failed call for
    /// minutes by default).
    pub fn retry_for(&self, limit: Duration) {
        self.client
            .set_retry_param(RetryConfig::new().max_retry_timeout(limit));
    }

    /// Runs one client call to completion.
    pub(crate) fn run<T>(&self, call: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        self.runtime.block_on(call)
    }
}
