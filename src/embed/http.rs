//! An OpenAI-compatible embedding service (`POST {base}/embeddings`): OpenAI itself, and
//! Ollama, vLLM, TEI and others that serve the same API.
//!
//! Texts go in batches; a request that times out fails at once (a hung service would hang
//! every retry too), while 429 and 5xx answers and dropped connections are retried with
//! exponential backoff (or the service's `Retry-After`, capped). Every answer is checked
//! for one vector per text of the declared dimension before anything is returned.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{check_shape, EmbedError, Embedder};
use crate::index::Metric;

/// Where and how an [`HttpEmbedder`] asks.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`;
    /// requests go to `{base}/embeddings`.
    pub base_url: String,
    /// The `model` field of each request.
    pub model: String,
    /// The environment variable that holds the API key (sent as a bearer token); unset or
    /// empty sends none, as local servers expect.
    pub api_key_env: String,
    /// The vectors' length; `None` asks the service once at construction.
    pub dimension: Option<usize>,
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
    /// The model's input limit in tokens, when known (for the truncation report).
    pub max_input_tokens: Option<usize>,
}

impl HttpOptions {
    /// Defaults for `model` at `base_url`: key from `OPENAI_API_KEY`, 64 texts a request,
    /// 60 s timeout, 5 retries from 0.5 s up to 20 s.
    pub fn new(base_url: &str, model: &str) -> HttpOptions {
        HttpOptions {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key_env: "OPENAI_API_KEY".into(),
            dimension: None,
            batch_size: 64,
            timeout: Duration::from_secs(60),
            max_retries: 5,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_input_tokens: None,
        }
    }
}

/// Embeds through an OpenAI-compatible `/embeddings` endpoint.
pub struct HttpEmbedder {
    options: HttpOptions,
    poster: Poster,
    name: String,
    dim: usize,
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: Option<usize>,
}

impl HttpEmbedder {
    /// Connects to the service; without a declared dimension, embeds one probe text to
    /// learn it.
    pub fn new(options: HttpOptions) -> Result<HttpEmbedder, EmbedError> {
        let endpoint = if options.base_url.ends_with("/embeddings") {
            options.base_url.clone()
        } else {
            format!("{}/embeddings", options.base_url)
        };
        let retries = Retries {
            timeout: options.timeout,
            max_retries: options.max_retries,
            backoff: options.backoff,
            max_backoff: options.max_backoff,
        };
        let mut embedder = HttpEmbedder {
            name: format!("openai:{}", options.model),
            dim: options.dimension.unwrap_or(0),
            poster: Poster::new(endpoint, &options.api_key_env, retries),
            options,
        };
        if embedder.dim == 0 {
            let probe = embedder.request(&["dimension probe"])?;
            embedder.dim = probe.first().map_or(0, Vec::len);
            if embedder.dim == 0 {
                return Err(EmbedError::Protocol {
                    endpoint: embedder.poster.endpoint.clone(),
                    reason: "the probe vector is empty".into(),
                });
            }
        }
        Ok(embedder)
    }

    /// One batch, with retries; the vectors in input order.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::json!({
            "model": self.options.model,
            "input": texts,
            "encoding_format": "float",
        });
        let reply: Reply = self.poster.post(&body)?;
        self.ordered(reply, texts.len())
    }

    /// The reply's vectors in input order (services may answer out of order, with `index`).
    fn ordered(&self, reply: Reply, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let got = reply.data.len();
        if got != expected {
            return Err(EmbedError::Count { expected, got });
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in reply.data.into_iter().enumerate() {
            let slot = item.index.unwrap_or(position);
            match slots.get_mut(slot) {
                Some(s @ None) => *s = Some(item.embedding),
                _ => {
                    return Err(EmbedError::Protocol {
                        endpoint: self.poster.endpoint.clone(),
                        reason: format!("vector index {slot} is repeated or out of range"),
                    })
                }
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }
}

/// How long a request may take and how it is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Retries {
    /// The longest wait for one request, connection included.
    pub(crate) timeout: Duration,
    /// Retries of a request answered with 429 or 5xx, or whose connection failed.
    pub(crate) max_retries: u32,
    /// The first backoff; it doubles with each retry.
    pub(crate) backoff: Duration,
    /// The longest backoff (and the cap on a `Retry-After`).
    pub(crate) max_backoff: Duration,
}

/// JSON POSTed to one endpoint with bounded retries (the requests are idempotent): the
/// embedder's and the HTTP reranker's transport.
pub(crate) struct Poster {
    pub(crate) endpoint: String,
    agent: ureq::Agent,
    key: Option<String>,
    retries: Retries,
}

impl Poster {
    /// Posts to `endpoint` with the bearer key held by `api_key_env` (none when it is unset
    /// or empty, as local servers expect).
    pub(crate) fn new(endpoint: String, api_key_env: &str, retries: Retries) -> Poster {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(retries.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let key = std::env::var(api_key_env).ok().filter(|k| !k.is_empty());
        Poster {
            endpoint,
            agent,
            key,
            retries,
        }
    }

    /// Posts `body` and reads a 200 answer as `T`: 429, 5xx and dropped connections are
    /// retried with exponential backoff (or the service's `Retry-After`, capped); a timeout
    /// fails at once (a hung service would hang every retry too).
    pub(crate) fn post<T: DeserializeOwned>(
        &self,
        body: &serde_json::Value,
    ) -> Result<T, EmbedError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self.agent.post(&self.endpoint);
            if let Some(key) = &self.key {
                request = request.header("Authorization", &format!("Bearer {key}"));
            }
            let retry_after = match request.send_json(body) {
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    if status == 200 {
                        return response
                            .body_mut()
                            .read_json()
                            .map_err(|e| self.failure(e, attempt, "reading the answer"));
                    }
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64);
                    let text = response
                        .body_mut()
                        .with_config()
                        .limit(4096)
                        .read_to_string()
                        .unwrap_or_default();
                    let error = EmbedError::Http {
                        endpoint: self.endpoint.clone(),
                        status,
                        body: text.trim().to_string(),
                        attempts: attempt,
                    };
                    if !(status == 429 || status >= 500) || attempt > self.retries.max_retries {
                        return Err(error);
                    }
                    retry_after
                }
                Err(e) => {
                    let error = self.failure(e, attempt, "sending the request");
                    let retryable = matches!(error, EmbedError::Transport { .. });
                    if !retryable || attempt > self.retries.max_retries {
                        return Err(error);
                    }
                    None
                }
            };
            let backoff = self
                .retries
                .backoff
                .saturating_mul(1 << (attempt - 1).min(16))
                .max(retry_after.unwrap_or_default())
                .min(self.retries.max_backoff);
            std::thread::sleep(backoff);
        }
    }

    fn failure(&self, e: ureq::Error, attempts: u32, doing: &str) -> EmbedError {
        let endpoint = self.endpoint.clone();
        match e {
            ureq::Error::Timeout(_) => EmbedError::Timeout {
                endpoint,
                after: self.retries.timeout,
                attempts,
            },
            ureq::Error::Io(ref io) if io.kind() == std::io::ErrorKind::TimedOut => {
                EmbedError::Timeout {
                    endpoint,
                    after: self.retries.timeout,
                    attempts,
                }
            }
            ureq::Error::Json(e) => EmbedError::Protocol {
                endpoint,
                reason: format!("{doing}: {e}"),
            },
            e => EmbedError::Transport {
                endpoint,
                reason: format!("{doing}: {e}"),
            },
        }
    }
}

impl Embedder for HttpEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> String {
        format!("dim={}", self.dim)
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    fn max_input_tokens(&self) -> usize {
        self.options.max_input_tokens.unwrap_or(usize::MAX)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len() * self.dim);
        for batch in texts.chunks(self.options.batch_size.max(1)) {
            let vectors = self.request(batch)?;
            if let Some(bad) = vectors.iter().find(|v| v.len() != self.dim) {
                return Err(EmbedError::Dimension {
                    expected: self.dim,
                    got: bad.len(),
                });
            }
            let rows = vectors.len();
            let flat: Vec<f32> = vectors.into_iter().flatten().collect();
            check_shape(&flat, batch.len(), self.dim, rows)?;
            out.extend(flat);
        }
        Ok(out)
    }
}
