//! Rerank services over HTTP (feature `http`), in the two common shapes:
//!
//! - TEI (Hugging Face text-embeddings-inference): `POST {url}/rerank` with `{query, texts,
//!   raw_scores: true}`, answered `[{index, score}, ...]` (raw logits, as in-process
//!   cross-encoders give);
//! - Cohere, and Jina which speaks the same: `POST {url}` with `{model, query, documents,
//!   top_n}`, answered `{results: [{index, relevance_score}, ...]}` (the service's scores).
//!
//! Texts go in batches; the transport (timeouts, bounded retries with backoff on 429, 5xx
//! and dropped connections) is the HTTP embedder's. Every answer must score each text of
//! its batch exactly once.

use std::time::Duration;

use serde::Deserialize;

use super::Reranker;
use crate::embed::http::{Poster, Retries};
use crate::embed::EmbedError;

/// Which API a [`HttpReranker`] speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RerankApi {
    /// text-embeddings-inference's `/rerank`.
    Tei,
    /// Cohere's rerank API, with this model.
    Cohere {
        /// The `model` field of each request.
        model: String,
    },
    /// Jina's rerank API (Cohere's shape), with this model.
    Jina {
        /// The `model` field of each request.
        model: String,
    },
}

/// Where and how an [`HttpReranker`] asks.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRerankOptions {
    /// TEI: the server's base (`/rerank` is added); Cohere and Jina: the endpoint itself,
    /// e.g. `https://api.cohere.com/v2/rerank`.
    pub url: String,
    /// The API spoken.
    pub api: RerankApi,
    /// The environment variable that holds the API key (sent as a bearer token); unset or
    /// empty sends none.
    pub api_key_env: String,
    /// Texts per request.
    pub batch_size: usize,
    /// The longest wait for one request, connection included.
    pub timeout: Duration,
    /// Retries of a request answered with 429 or 5xx, or whose connection failed.
    pub max_retries: u32,
    /// The first backoff; it doubles with each retry.
    pub backoff: Duration,
    /// The longest backoff (and the cap on a `Retry-After`).
    pub max_backoff: Duration,
}

impl HttpRerankOptions {
    /// Defaults for `api` at `url`: 32 texts a request, 60 s timeout, 3 retries from 0.5 s
    /// up to 10 s; the key from `TEI_API_KEY`, `COHERE_API_KEY` or `JINA_API_KEY`.
    pub fn new(url: &str, api: RerankApi) -> HttpRerankOptions {
        let api_key_env = match api {
            RerankApi::Tei => "TEI_API_KEY",
            RerankApi::Cohere { .. } => "COHERE_API_KEY",
            RerankApi::Jina { .. } => "JINA_API_KEY",
        };
        HttpRerankOptions {
            url: url.trim_end_matches('/').to_string(),
            api,
            api_key_env: api_key_env.into(),
            batch_size: 32,
            timeout: Duration::from_secs(60),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// Scores (query, text) pairs through a rerank service.
pub struct HttpReranker {
    options: HttpRerankOptions,
    poster: Poster,
    name: String,
}

/// TEI's answer: one entry per text.
#[derive(Deserialize)]
struct TeiScore {
    index: usize,
    score: f32,
}

/// Cohere's and Jina's answer.
#[derive(Deserialize)]
struct CohereReply {
    results: Vec<CohereScore>,
}

#[derive(Deserialize)]
struct CohereScore {
    index: usize,
    relevance_score: f32,
}

impl HttpReranker {
    /// A reranker asking the service `options` name; nothing is sent until it scores.
    pub fn new(options: HttpRerankOptions) -> HttpReranker {
        let (endpoint, name) = match &options.api {
            RerankApi::Tei if options.url.ends_with("/rerank") => {
                (options.url.clone(), format!("tei:{}", options.url))
            }
            RerankApi::Tei => (
                format!("{}/rerank", options.url),
                format!("tei:{}", options.url),
            ),
            RerankApi::Cohere { model } => (options.url.clone(), format!("cohere:{model}")),
            RerankApi::Jina { model } => (options.url.clone(), format!("jina:{model}")),
        };
        let retries = Retries {
            timeout: options.timeout,
            max_retries: options.max_retries,
            backoff: options.backoff,
            max_backoff: options.max_backoff,
        };
        HttpReranker {
            poster: Poster::new(endpoint, &options.api_key_env, retries),
            options,
            name,
        }
    }

    /// One batch's scores, in the order of `texts`.
    fn request(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let pairs: Vec<(usize, f32)> = match &self.options.api {
            RerankApi::Tei => {
                let body = serde_json::json!({"query": query, "texts": texts, "raw_scores": true});
                let reply: Vec<TeiScore> = self.poster.post(&body)?;
                reply.into_iter().map(|s| (s.index, s.score)).collect()
            }
            RerankApi::Cohere { model } | RerankApi::Jina { model } => {
                let body = serde_json::json!({
                    "model": model,
                    "query": query,
                    "documents": texts,
                    "top_n": texts.len(),
                });
                let reply: CohereReply = self.poster.post(&body)?;
                let results = reply.results.into_iter();
                results.map(|s| (s.index, s.relevance_score)).collect()
            }
        };
        if pairs.len() != texts.len() {
            return Err(EmbedError::Count {
                expected: texts.len(),
                got: pairs.len(),
            });
        }
        let mut slots = vec![None; texts.len()];
        for (index, score) in pairs {
            match slots.get_mut(index) {
                Some(slot @ None) => *slot = Some(score),
                _ => {
                    return Err(EmbedError::Protocol {
                        endpoint: self.poster.endpoint.clone(),
                        reason: format!("score index {index} is repeated or out of range"),
                    })
                }
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }
}

impl Reranker for HttpReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let mut scores = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.options.batch_size.max(1)) {
            scores.extend(self.request(query, batch)?);
        }
        Ok(scores)
    }
}
