//! Counting text in tokens, the one place sizes, budgets and costs are counted: the
//! [`TokenCounter`] trait every counter implements (characters, the model-free estimate
//! here; a model's own tokenizer in `crate::embed`), and the estimate itself.

mod counter;
mod estimate;

pub use counter::{CharCounter, EstimateCounter, TokenCounter};
pub use estimate::{count, is_cjk, spans, WORD_PIECE};
