//! A reranker that runs an external program, over the command embedder's pipes and frames
//! (`embed/command.rs`).
//!
//! Protocol: folio writes one JSON line per batch, `{"role": "rerank", "query": "...",
//! "texts": ["...", ...]}`; the program answers with one frame of `texts.len()` rows of one
//! `f32` each (the scores, in the order of the texts), or an error frame.

use super::Reranker;
use crate::embed::command::Pipe;
use crate::embed::{CommandOptions, EmbedError};

/// A running program that scores (query, text) pairs (see the module docs).
pub struct CommandReranker {
    pipe: Pipe,
    name: String,
    batch_size: usize,
}

impl CommandReranker {
    /// Starts `command` (run by `sh -c`); `options` bound each answer's wait and the texts
    /// sent at once.
    pub fn start(command: &str, options: CommandOptions) -> Result<CommandReranker, EmbedError> {
        Ok(CommandReranker {
            pipe: Pipe::start(command, options.timeout)?,
            name: format!("cmd:{command}"),
            batch_size: options.batch_size.max(1),
        })
    }
}

impl Reranker for CommandReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let mut scores = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            let request = serde_json::json!({"role": "rerank", "query": query, "texts": batch});
            let (values, columns) = self.pipe.exchange(&request)?;
            if columns != 1 || values.len() != batch.len() {
                return Err(self.pipe.error(format!(
                    "answered {} values in {columns} columns for {} texts (one score each expected)",
                    values.len(),
                    batch.len()
                )));
            }
            scores.extend(values);
        }
        Ok(scores)
    }
}
