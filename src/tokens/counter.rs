//! What every size in tokens is counted with: one trait, the characters, the estimate.

use super::estimate;

/// Counts a text in some unit (a model's tokens, characters, the estimate) and tells where
/// each unit starts, so chunkers cut at token bounds and budgets count in the tokens of the
/// model that reads.
pub trait TokenCounter: Send + Sync {
    /// What is counted: `chars`, `estimate`, `cl100k`, `o200k`, `tokenizer:NAME`.
    fn name(&self) -> String;
    /// The byte offsets where the tokens of `text` start, in order, on char boundaries
    /// (several tokens may start at one offset when a character takes several tokens).
    fn starts(&self, text: &str) -> Vec<usize>;
    /// The number of tokens of `text` (special tokens and prefixes not included).
    fn count(&self, text: &str) -> usize {
        self.starts(text).len()
    }
}

impl std::fmt::Debug for dyn TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenCounter({})", self.name())
    }
}

/// Unicode scalar values.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharCounter;

impl TokenCounter for CharCounter {
    fn name(&self) -> String {
        "chars".into()
    }
    fn starts(&self, text: &str) -> Vec<usize> {
        text.char_indices().map(|(i, _)| i).collect()
    }
    fn count(&self, text: &str) -> usize {
        text.chars().count()
    }
}

/// The model-free estimate ([`estimate::count`]): what token sizes, budgets and costs count
/// when no model's tokenizer is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateCounter;

impl TokenCounter for EstimateCounter {
    fn name(&self) -> String {
        "estimate".into()
    }
    fn starts(&self, text: &str) -> Vec<usize> {
        estimate::spans(text).map(|(s, _)| s).collect()
    }
    fn count(&self, text: &str) -> usize {
        estimate::count(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_and_estimate_count_what_they_say() {
        assert_eq!(CharCounter.count("né 北京"), 5);
        assert_eq!(CharCounter.starts("né"), vec![0, 1]);
        assert_eq!(EstimateCounter.count("Hello, world!"), 4);
        assert_eq!(EstimateCounter.starts("Hello, world!"), vec![0, 5, 7, 12]);
    }
}
