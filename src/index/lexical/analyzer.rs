//! Text → terms, the same way for documents and queries.
//!
//! The text is NFKC-normalised (full-width letters, ligatures and compatibility forms
//! become the plain ones) and cut at Unicode word bounds (UAX #29); each word is
//! lowercased, dropped if it is a stop word of the language (the Snowball-derived NLTK
//! lists) and stemmed by the language's Snowball stemmer. Chinese has no spaces between
//! words, and word bounds would make every Han character a word: for
//! [`LexicalLanguage::Chinese`] and [`LexicalLanguage::Auto`], runs of Han characters go to
//! jieba's dictionary segmenter in search mode (a long word also yields the dictionary
//! words inside it: `北京大学` gives `北京`, `大学` and `北京大学`, so a query for either
//! part finds it). Han terms are not stemmed and no stop words are dropped from them:
//! the Chinese stop-word lists hold content words, and BM25's IDF already weighs common
//! words down.
//!
//! Stored segments hold these terms, so what this module does to a text is part of the
//! file format: a change to it (or to the stemmers', stop lists' or dictionary's
//! versions) needs the index rebuilt.

use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use super::language::LexicalLanguage;

/// Terms longer than this many bytes are dropped (Lucene's default limit): such "words"
/// are encoded blobs or hashes that no query repeats, and the segment codec stores a term's
/// length in one byte.
pub const MAX_TERM_BYTES: usize = 255;

/// Cuts texts into terms for one [`LexicalLanguage`]; see the module documentation.
pub struct Analyzer {
    language: LexicalLanguage,
    /// Applied to words outside Han runs: `None` for no stemming.
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
    /// Whether Han runs go to the dictionary segmenter.
    segments_han: bool,
}

impl Analyzer {
    /// The analyzer of `language`. Cheap: jieba's dictionary is loaded once per process,
    /// the first time a Han run is segmented.
    pub fn new(language: LexicalLanguage) -> Analyzer {
        let (words_as, segments_han) = match language {
            LexicalLanguage::Auto => (LexicalLanguage::English, true),
            LexicalLanguage::Chinese => (LexicalLanguage::Plain, true),
            other => (other, false),
        };
        let rules = snowball(words_as);
        Analyzer {
            language,
            stemmer: rules.map(|(algorithm, _)| Stemmer::create(algorithm)),
            stop_words: rules
                .and_then(|(_, code)| stop_words::lookup(code))
                .unwrap_or_default()
                .iter()
                .copied()
                .collect(),
            segments_han,
        }
    }

    /// The language this analyzer was made for.
    pub fn language(&self) -> LexicalLanguage {
        self.language
    }

    /// The terms of `text`, in text order, repeats kept (they are term frequencies).
    pub fn terms(&self, text: &str) -> Vec<String> {
        let normalized: String = text.nfkc().collect();
        let mut terms = Vec::new();
        if self.segments_han {
            for (han, run) in script_runs(&normalized) {
                if han {
                    let words = jieba().cut_for_search(run, true);
                    // The run holds only Han characters: nothing to fold or skip.
                    terms.extend(words.into_iter().map(|token| token.word.to_owned()));
                } else {
                    self.push_words(run, &mut terms);
                }
            }
        } else {
            self.push_words(&normalized, &mut terms);
        }
        terms.retain(|term| term.len() <= MAX_TERM_BYTES);
        terms
    }

    /// The words of a normalised run: lowercased, stop words dropped, stemmed.
    fn push_words(&self, run: &str, terms: &mut Vec<String>) {
        for word in run.unicode_words() {
            let folded = word.to_lowercase();
            if self.stop_words.contains(folded.as_str()) {
                continue;
            }
            let term = match &self.stemmer {
                Some(stemmer) => stemmer.stem(&folded).into_owned(),
                None => folded,
            };
            if !term.is_empty() {
                terms.push(term);
            }
        }
    }
}

impl fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Analyzer")
            .field("language", &self.language)
            .finish_non_exhaustive()
    }
}

/// The Snowball stemmer and stop-word list (its ISO 639-1 code) of a stemmed language.
fn snowball(language: LexicalLanguage) -> Option<(Algorithm, &'static str)> {
    Some(match language {
        LexicalLanguage::Auto | LexicalLanguage::Plain | LexicalLanguage::Chinese => return None,
        LexicalLanguage::English => (Algorithm::English, "en"),
        LexicalLanguage::German => (Algorithm::German, "de"),
        LexicalLanguage::French => (Algorithm::French, "fr"),
        LexicalLanguage::Spanish => (Algorithm::Spanish, "es"),
        LexicalLanguage::Italian => (Algorithm::Italian, "it"),
        LexicalLanguage::Portuguese => (Algorithm::Portuguese, "pt"),
        LexicalLanguage::Dutch => (Algorithm::Dutch, "nl"),
        LexicalLanguage::Swedish => (Algorithm::Swedish, "sv"),
        LexicalLanguage::Norwegian => (Algorithm::Norwegian, "no"),
        LexicalLanguage::Danish => (Algorithm::Danish, "da"),
        LexicalLanguage::Finnish => (Algorithm::Finnish, "fi"),
        LexicalLanguage::Russian => (Algorithm::Russian, "ru"),
        LexicalLanguage::Greek => (Algorithm::Greek, "el"),
        LexicalLanguage::Hungarian => (Algorithm::Hungarian, "hu"),
        LexicalLanguage::Romanian => (Algorithm::Romanian, "ro"),
        LexicalLanguage::Turkish => (Algorithm::Turkish, "tr"),
        LexicalLanguage::Arabic => (Algorithm::Arabic, "ar"),
        LexicalLanguage::Tamil => (Algorithm::Tamil, "ta"),
    })
}

/// The process's segmenter: building it parses the bundled dictionary (about 350,000
/// words), so it is built once, on first use.
fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Whether `c` is a Han ideograph (or the iteration marks written among them).
fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3005 | 0x3007      // 々 (iteration mark), 〇 (ideographic zero)
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x3FFFF) // extensions B to H, compatibility supplement
}

/// `text` cut into maximal runs of Han and of other characters, in order, each with
/// whether it is Han.
fn script_runs(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let han = is_han(rest.chars().next()?);
        let end = rest
            .char_indices()
            .find(|&(_, c)| is_han(c) != han)
            .map_or(rest.len(), |(at, _)| at);
        let (run, after) = rest.split_at(end);
        rest = after;
        Some((han, run))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(language: LexicalLanguage, text: &str) -> Vec<String> {
        Analyzer::new(language).terms(text)
    }

    #[test]
    fn english_folds_stems_and_drops_stop_words() {
        let found = terms(
            LexicalLanguage::English,
            "The Runner was RUNNING and running",
        );
        assert_eq!(found, ["runner", "run", "run"]);
        // The same words unstemmed and kept under Plain.
        let plain = terms(LexicalLanguage::Plain, "The Runner was RUNNING");
        assert_eq!(plain, ["the", "runner", "was", "running"]);
    }

    #[test]
    fn other_languages_use_their_own_stemmer_and_stop_words() {
        // "und" and "die" are German stop words, not English ones.
        let german = terms(LexicalLanguage::German, "Die Häuser und die Bäume");
        let english = terms(LexicalLanguage::English, "Die Häuser und die Bäume");
        assert!(!german.contains(&"und".to_owned()) && !german.contains(&"die".to_owned()));
        assert!(english.contains(&"und".to_owned()));
        assert_eq!(german.len(), 2);
        // Snowball German folds the plural umlaut and ending: Häuser → haus.
        assert_eq!(german[0], "haus");
    }

    #[test]
    fn nfkc_folds_compatibility_forms() {
        // Full-width letters and the "fi" ligature are the plain words.
        assert_eq!(
            terms(LexicalLanguage::Plain, "ＦＯＬＩＯ ﬁle"),
            terms(LexicalLanguage::Plain, "folio file")
        );
    }

    #[test]
    fn chinese_is_segmented_into_dictionary_words() {
        let found = terms(LexicalLanguage::Chinese, "我们在北京大学学习");
        for word in ["我们", "北京", "大学", "北京大学", "学习"] {
            assert!(
                found.contains(&word.to_owned()),
                "{word} missing from {found:?}"
            );
        }
        assert!(found.iter().any(|t| t.chars().count() > 1));
        // A European analyzer cuts Han text into single characters (UAX #29).
        let english = terms(LexicalLanguage::English, "我们在北京大学学习");
        assert!(english.iter().all(|t| t.chars().count() == 1));
    }

    #[test]
    fn auto_segments_han_runs_and_treats_the_rest_as_english() {
        let found = terms(LexicalLanguage::Auto, "Running 北京大学 the tests");
        assert!(found.contains(&"北京".to_owned()));
        assert!(found.contains(&"run".to_owned()));
        assert!(found.contains(&"test".to_owned()));
        assert!(!found.contains(&"the".to_owned()));
        // Deterministic, and a query analysed the same way finds the same terms.
        assert_eq!(
            found,
            terms(LexicalLanguage::Auto, "Running 北京大学 the tests")
        );
        // Chinese keeps the non-Han words unstemmed.
        let chinese = terms(LexicalLanguage::Chinese, "Running 北京大学");
        assert!(chinese.contains(&"running".to_owned()));
    }

    #[test]
    fn texts_without_words_give_no_terms() {
        for language in LexicalLanguage::ALL {
            for text in ["", "   \t\n ", "...!? -- ;;", "，。！「」"] {
                let found = terms(language, text);
                assert!(found.is_empty(), "{language}: {text:?} gave {found:?}");
            }
        }
        for language in [LexicalLanguage::English, LexicalLanguage::Auto] {
            assert!(terms(language, "The of AND").is_empty());
        }
    }

    #[test]
    fn overlong_words_are_dropped() {
        let long = "x".repeat(MAX_TERM_BYTES + 1);
        let fits = "y".repeat(MAX_TERM_BYTES);
        let found = terms(LexicalLanguage::Plain, &format!("{long} {fits}"));
        assert_eq!(found, [fits]);
    }
}
