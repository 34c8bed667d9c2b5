//! The embedder of an index whose vectors the application computes (a LangChain or
//! LlamaIndex embedding, any model of the caller's): it fixes the dimension and the metric
//! and embeds no text. Its name, `vectors:DIM`, says everything about it, so a store
//! rebuilds it from an index's record without being given it.

use super::{EmbedError, Embedder, MAX_DIMENSION};
use crate::index::Metric;

/// The stored name's prefix: `vectors:384`.
const PREFIX: &str = "vectors:";

/// Vectors given by the application, `dimension` long, compared by cosine.
#[derive(Debug, Clone)]
pub struct GivenVectors {
    name: String,
    dimension: usize,
}

impl GivenVectors {
    /// The embedder of `dimension`-long vectors (1 to [`MAX_DIMENSION`]).
    pub fn new(dimension: usize) -> Result<GivenVectors, EmbedError> {
        if !(1..=MAX_DIMENSION).contains(&dimension) {
            return Err(EmbedError::Spec {
                spec: format!("{PREFIX}{dimension}"),
                reason: format!("vectors:DIM needs a dimension from 1 to {MAX_DIMENSION}"),
            });
        }
        Ok(GivenVectors {
            name: format!("{PREFIX}{dimension}"),
            dimension,
        })
    }

    /// The embedder named `name`, when it is one of these (`vectors:DIM`).
    pub fn from_name(name: &str) -> Option<GivenVectors> {
        let dimension = name.strip_prefix(PREFIX)?.parse().ok()?;
        GivenVectors::new(dimension).ok()
    }
}

impl Embedder for GivenVectors {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> String {
        "given by the application".into()
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    fn max_input_tokens(&self) -> usize {
        usize::MAX
    }

    fn embed(&self, _texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Err(EmbedError::VectorsOnly {
            embedder: self.name.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_rebuilds_the_embedder_and_text_is_refused() {
        let given = GivenVectors::new(6).unwrap();
        assert_eq!(given.name(), "vectors:6");
        let again = GivenVectors::from_name(given.name()).unwrap();
        assert_eq!(
            (again.dimension(), again.fingerprint()),
            (6, given.fingerprint())
        );
        assert!(GivenVectors::from_name("vectors:0").is_none());
        assert!(GivenVectors::from_name("hash:6").is_none());
        assert!(matches!(
            given.embed(&["a"]),
            Err(EmbedError::VectorsOnly { .. })
        ));
    }
}
