//! Embedders: the built-in hashing embedder, vector validation, the command embedder, and
//! (with their features) the native BERT and e5 embedders, ONNX and HTTP.
//! One test crate (one binary to link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[cfg(feature = "models")]
mod bert_embedder;
mod command_embedder;
mod command_reranker;
#[cfg(feature = "models")]
mod cross_encoder;
#[cfg(feature = "models")]
mod e5q4_embedder;
mod embed_hash;
mod embed_validate;
#[cfg(feature = "http")]
mod http_embedder;
#[cfg(feature = "http")]
mod http_reranker;
#[cfg(feature = "http")]
mod http_server;
#[cfg(feature = "download")]
mod model_download;
#[cfg(feature = "onnx")]
mod onnx_embedder;
