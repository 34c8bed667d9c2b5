//! The language an index's lexical leg analyses its texts in: stored in the index record,
//! so each variant's code (its bincode variant index) and name are fixed for good.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How an index's texts (and its queries) are cut into terms: see [`super::Analyzer`].
///
/// Stored as its variant index (bincode) or its [`name`](LexicalLanguage::name) (JSON):
/// new variants go last, and none is ever renamed or reordered.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    bincode::Encode,
    bincode::Decode,
)]
#[serde(rename_all = "lowercase")]
pub enum LexicalLanguage {
    /// Han runs by the Chinese segmenter, everything else as [`LexicalLanguage::English`]:
    /// decided per run of characters, so the same text always gives the same terms. An
    /// index's language unless it names another.
    #[default]
    Auto,
    /// Words case-folded only: no stemming, no stop words (identifiers, codes, names).
    Plain,
    /// Han runs by jieba's dictionary segmenter, other runs as [`LexicalLanguage::Plain`].
    Chinese,
    /// Snowball English stemmer and stop words.
    English,
    /// Snowball German stemmer and stop words.
    German,
    /// Snowball French stemmer and stop words.
    French,
    /// Snowball Spanish stemmer and stop words.
    Spanish,
    /// Snowball Italian stemmer and stop words.
    Italian,
    /// Snowball Portuguese stemmer and stop words.
    Portuguese,
    /// Snowball Dutch stemmer and stop words.
    Dutch,
    /// Snowball Swedish stemmer and stop words.
    Swedish,
    /// Snowball Norwegian stemmer and stop words.
    Norwegian,
    /// Snowball Danish stemmer and stop words.
    Danish,
    /// Snowball Finnish stemmer and stop words.
    Finnish,
    /// Snowball Russian stemmer and stop words.
    Russian,
    /// Snowball Greek stemmer and stop words.
    Greek,
    /// Snowball Hungarian stemmer and stop words.
    Hungarian,
    /// Snowball Romanian stemmer and stop words.
    Romanian,
    /// Snowball Turkish stemmer and stop words.
    Turkish,
    /// Snowball Arabic stemmer and stop words.
    Arabic,
    /// Snowball Tamil stemmer and stop words.
    Tamil,
}

impl LexicalLanguage {
    /// Every language, in stored order.
    pub const ALL: [LexicalLanguage; 21] = [
        Self::Auto,
        Self::Plain,
        Self::Chinese,
        Self::English,
        Self::German,
        Self::French,
        Self::Spanish,
        Self::Italian,
        Self::Portuguese,
        Self::Dutch,
        Self::Swedish,
        Self::Norwegian,
        Self::Danish,
        Self::Finnish,
        Self::Russian,
        Self::Greek,
        Self::Hungarian,
        Self::Romanian,
        Self::Turkish,
        Self::Arabic,
        Self::Tamil,
    ];

    /// The lowercase English name (`"german"`), as JSON and command lines spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Plain => "plain",
            Self::Chinese => "chinese",
            Self::English => "english",
            Self::German => "german",
            Self::French => "french",
            Self::Spanish => "spanish",
            Self::Italian => "italian",
            Self::Portuguese => "portuguese",
            Self::Dutch => "dutch",
            Self::Swedish => "swedish",
            Self::Norwegian => "norwegian",
            Self::Danish => "danish",
            Self::Finnish => "finnish",
            Self::Russian => "russian",
            Self::Greek => "greek",
            Self::Hungarian => "hungarian",
            Self::Romanian => "romanian",
            Self::Turkish => "turkish",
            Self::Arabic => "arabic",
            Self::Tamil => "tamil",
        }
    }

    /// The language a [`name`](LexicalLanguage::name) names (exactly, lowercase).
    pub fn from_name(name: &str) -> Option<LexicalLanguage> {
        Self::ALL
            .into_iter()
            .find(|language| language.name() == name)
    }
}

impl fmt::Display for LexicalLanguage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Index records store the language as its variant index: reordering the variants
    /// would change what old files mean.
    #[test]
    fn stored_codes_and_names_are_fixed() {
        let code = |l: LexicalLanguage| bincode::encode_to_vec(l, bincode::config::standard());
        for (index, language) in LexicalLanguage::ALL.into_iter().enumerate() {
            assert_eq!(code(language).unwrap(), [index as u8]);
            let json = serde_json::to_string(&language).unwrap();
            assert_eq!(json, format!("\"{}\"", language.name()));
            assert_eq!(LexicalLanguage::from_name(language.name()), Some(language));
        }
        assert_eq!(code(LexicalLanguage::Chinese).unwrap(), [2]);
        assert_eq!(code(LexicalLanguage::English).unwrap(), [3]);
        assert_eq!(LexicalLanguage::from_name("German"), None);
    }
}
