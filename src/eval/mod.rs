//! The chunking-evaluation harness: chunking strategies × questions with gold spans → metrics.

pub mod metrics;
