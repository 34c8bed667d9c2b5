//! An embedder that counts no tokens of its own (a hosted service, a program over pipes)
//! given a tokenizer and the model's limit, so its chunks are counted, and those longer than
//! the model reads reported, split or refused as for the in-process models.

use std::sync::Arc;

use super::{EmbedError, Embedder, TokenCounter};
use crate::index::Metric;

/// `inner` with `counter` as its tokenizer and `max` tokens as its model's limit. The name,
/// fingerprint and vectors are `inner`'s: a store built without the tokenizer accepts it.
pub struct Counted {
    inner: Arc<dyn Embedder>,
    counter: Arc<dyn TokenCounter>,
    max: usize,
}

impl Counted {
    /// `inner` counted by `counter`, reading at most `max` tokens.
    pub fn new(inner: Arc<dyn Embedder>, counter: Arc<dyn TokenCounter>, max: usize) -> Counted {
        Counted {
            inner,
            counter,
            max,
        }
    }
}

impl Embedder for Counted {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn metric(&self) -> Metric {
        self.inner.metric()
    }

    fn max_input_tokens(&self) -> usize {
        self.max
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed(texts)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        self.inner.embed_queries(texts)
    }

    fn input_tokens(&self, texts: &[&str]) -> Option<Vec<usize>> {
        Some(texts.iter().map(|t| self.counter.count(t)).collect())
    }

    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        Some(self.counter.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashEmbedder;
    use crate::tokens::CharCounter;

    #[test]
    fn counts_with_the_tokenizer_and_embeds_as_the_inner_one() {
        let inner: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(16).unwrap());
        let counted = Counted::new(inner.clone(), Arc::new(CharCounter), 5);
        assert_eq!(counted.input_tokens(&["abc", "héllo!"]), Some(vec![3, 6]));
        assert_eq!(
            (counted.max_input_tokens(), counted.name()),
            (5, inner.name())
        );
        assert_eq!(
            counted.embed(&["x y"]).unwrap(),
            inner.embed(&["x y"]).unwrap()
        );
        assert_eq!(counted.token_counter().unwrap().name(), "chars");
    }
}
