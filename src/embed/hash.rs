//! The built-in embedder: deterministic feature hashing, no model files, works offline.
//!
//! A text becomes a bag of weighted features:
//! - words: Unicode-lowercased runs of letters and digits (a word-internal apostrophe is
//!   dropped, so `don't` is `dont`), with a light English plural/possessive stemmer
//!   (Harman's S-stemmer) on ASCII words; English stop words count at a reduced weight;
//! - character n-grams of each non-stop word, with `<` `>` word-boundary markers, at a low
//!   weight, so that `deploy` and `deployment` share features;
//! - CJK characters (see [`crate::tokens::is_cjk`]) as unigrams and, for adjacent
//!   characters, bigrams: CJK text has no spaces, and bigrams approximate its words.
//!
//! Each feature's weight is scaled by `1 + ln(tf)`, then added to one of `dimension`
//! buckets with a sign; bucket and sign come from one 64-bit hash of the feature that is
//! fixed by this file (not `std`'s randomly seeded hasher), so vectors are the same on every
//! platform and run. The sum is L2-normalised and compared by cosine.
//!
//! A text without any feature (empty, whitespace or punctuation only) embeds to the constant
//! unit vector `[1/√dim; dim]`: a zero vector has no cosine, and this one scores about 0
//! against real text (whose bucket signs are random) and 1 against other featureless text.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use rayon::prelude::*;

use super::{EmbedError, Embedder};
use crate::index::Metric;
use crate::tokens::is_cjk;

/// The dimension of [`HashEmbedder::default`].
pub const DEFAULT_DIMENSION: usize = 512;
/// The largest supported dimension (bucket selection uses 32-bit arithmetic; more buckets
/// than this buy nothing for a lexical embedder).
pub const MAX_DIMENSION: usize = 1 << 16;

/// Why a [`HashConfig`] was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HashConfigError {
    /// The dimension is 0 or too large.
    #[error("dimension {0} is out of range 1..={MAX_DIMENSION}")]
    Dimension(usize),
    /// A weight is negative or not finite.
    #[error("weight `{name}` must be finite and non-negative, got {value}")]
    Weight {
        /// The weight's field name.
        name: &'static str,
        /// Its value.
        value: f32,
    },
    /// The n-gram length is neither 0 nor in `2..=8`.
    #[error("n-gram length {0} is out of range 2..=8 (0 turns n-grams off)")]
    Ngram(usize),
}

/// The settings that shape a [`HashEmbedder`]'s vectors; all of them go into its fingerprint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HashConfig {
    /// The vectors' length.
    pub dimension: usize,
    /// Weight of a (stemmed) word.
    pub word_weight: f32,
    /// Weight of a stop word ("the", "is", ...); stop words get no n-grams.
    pub stop_word_weight: f32,
    /// Length of the character n-grams of a word, boundary markers included; 0 = none.
    pub ngram: usize,
    /// Weight of one character n-gram.
    pub ngram_weight: f32,
    /// Weight of one CJK character.
    pub cjk_unigram_weight: f32,
    /// Weight of a pair of adjacent CJK characters.
    pub cjk_bigram_weight: f32,
}

impl Default for HashConfig {
    fn default() -> Self {
        HashConfig {
            dimension: DEFAULT_DIMENSION,
            word_weight: 1.0,
            stop_word_weight: 0.2,
            ngram: 3,
            ngram_weight: 0.4,
            cjk_unigram_weight: 1.0,
            cjk_bigram_weight: 0.7,
        }
    }
}

impl HashConfig {
    fn validate(&self) -> Result<(), HashConfigError> {
        if !(1..=MAX_DIMENSION).contains(&self.dimension) {
            return Err(HashConfigError::Dimension(self.dimension));
        }
        if self.ngram != 0 && !(2..=8).contains(&self.ngram) {
            return Err(HashConfigError::Ngram(self.ngram));
        }
        let weights = [
            ("word_weight", self.word_weight),
            ("stop_word_weight", self.stop_word_weight),
            ("ngram_weight", self.ngram_weight),
            ("cjk_unigram_weight", self.cjk_unigram_weight),
            ("cjk_bigram_weight", self.cjk_bigram_weight),
        ];
        match weights
            .into_iter()
            .find(|(_, w)| !(w.is_finite() && *w >= 0.0))
        {
            Some((name, value)) => Err(HashConfigError::Weight { name, value }),
            None => Ok(()),
        }
    }
}

/// The default embedder: lexical feature hashing (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HashEmbedder {
    config: HashConfig,
}

impl HashEmbedder {
    /// The default settings with `dimension` buckets.
    pub fn new(dimension: usize) -> Result<Self, HashConfigError> {
        Self::with_config(HashConfig {
            dimension,
            ..HashConfig::default()
        })
    }

    /// An embedder with these settings, if they are valid.
    pub fn with_config(config: HashConfig) -> Result<Self, HashConfigError> {
        config.validate()?;
        Ok(HashEmbedder { config })
    }

    /// Its settings.
    pub fn config(&self) -> &HashConfig {
        &self.config
    }

    /// The embedder whose [`Embedder::fingerprint`] is `fingerprint`, e.g. as a store
    /// records it; `None` when it is not one this build writes.
    pub fn from_fingerprint(fingerprint: &str) -> Option<HashEmbedder> {
        let mut fields = fingerprint.split(';').map(|field| field.split_once('='));
        let mut value = |key: &str| match fields.next() {
            Some(Some((k, v))) if k == key => Some(v),
            _ => None,
        };
        let dimension = value("dim")?.parse().ok()?;
        let word_weight = value("word")?.parse().ok()?;
        let stop_word_weight = value("stop")?.parse().ok()?;
        let (ngram, ngram_weight) = value("ngram")?.split_once(':')?;
        let (cjk_unigram, cjk_bigram) = value("cjk")?.split_once(':')?;
        let embedder = HashEmbedder::with_config(HashConfig {
            dimension,
            word_weight,
            stop_word_weight,
            ngram: ngram.parse().ok()?,
            ngram_weight: ngram_weight.parse().ok()?,
            cjk_unigram_weight: cjk_unigram.parse().ok()?,
            cjk_bigram_weight: cjk_bigram.parse().ok()?,
        })
        .ok()?;
        // The fixed tail (weighting, stemming) must match too.
        (embedder.fingerprint() == fingerprint).then_some(embedder)
    }

    /// Embeds one text into `out` (`dimension` values, overwritten).
    fn embed_into(&self, text: &str, features: &mut Features, out: &mut [f32]) {
        features.collect(&self.config, text);
        out.fill(0.0);
        let dim = self.config.dimension as u64;
        for (hash, weight) in features.weighted() {
            // Multiply-shift maps the high 32 bits onto 0..dim without modulo bias; the
            // lowest bit, independent of those, picks the sign.
            let bucket = (((hash >> 32) * dim) >> 32) as usize;
            out[bucket] += if hash & 1 == 0 { weight } else { -weight };
        }
        let norm = out.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            out.iter_mut().for_each(|v| *v /= norm);
        } else {
            // No features, or (vanishingly rare) features cancelling out exactly.
            out.fill(1.0 / (self.config.dimension as f32).sqrt());
        }
    }
}

impl Embedder for HashEmbedder {
    fn name(&self) -> &str {
        "folio-hash-v1"
    }

    fn fingerprint(&self) -> String {
        let c = &self.config;
        format!(
            "dim={};word={};stop={};ngram={}:{};cjk={}:{};tf=1+ln;stem=s;empty=uniform",
            c.dimension,
            c.word_weight,
            c.stop_word_weight,
            c.ngram,
            c.ngram_weight,
            c.cjk_unigram_weight,
            c.cjk_bigram_weight
        )
    }

    fn dimension(&self) -> usize {
        self.config.dimension
    }

    fn metric(&self) -> Metric {
        Metric::Cosine
    }

    /// Nothing is truncated: every feature of the text counts.
    fn max_input_tokens(&self) -> usize {
        usize::MAX
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let dim = self.config.dimension;
        let mut out = vec![0.0; texts.len() * dim];
        out.par_chunks_mut(dim)
            .zip(texts.par_iter())
            .for_each_init(Features::default, |features, (row, text)| {
                self.embed_into(text, features, row)
            });
        Ok(out)
    }
}

/// Reusable buffers for one thread: the current word, its padded characters and the
/// features of the current text.
#[derive(Default)]
struct Features {
    word: String,
    padded: Vec<char>,
    tally: Tally,
}

/// How the tokenizer treats one character.
enum Class {
    /// A letter or digit of a word; ASCII ones arrive lowercased.
    Word(char),
    Cjk(char),
    Apostrophe,
    Break,
}

fn classify(c: char) -> Class {
    if c.is_ascii() {
        return match c {
            _ if c.is_ascii_alphanumeric() => Class::Word(c.to_ascii_lowercase()),
            '\'' => Class::Apostrophe,
            _ => Class::Break,
        };
    }
    // Full-width ASCII (ＡＢＣ１２３, common in CJK text) means the same as ASCII.
    if ('\u{FF01}'..='\u{FF5E}').contains(&c) {
        if let Some(ascii) = char::from_u32(c as u32 - 0xFEE0) {
            return classify(ascii);
        }
    }
    match c {
        '\u{2019}' => Class::Apostrophe,
        _ if !c.is_alphanumeric() => Class::Break,
        _ if is_cjk(c) => Class::Cjk(c),
        _ => Class::Word(c),
    }
}

// One seed per feature kind, so that a word and an n-gram with the same letters differ.
const SEED_WORD: u64 = 0x9E37_79B9_7F4A_7C15;
const SEED_NGRAM: u64 = 0xC2B2_AE3D_27D4_EB4F;
const SEED_CJK_UNIGRAM: u64 = 0x1656_67B1_9E37_79F9;
const SEED_CJK_BIGRAM: u64 = 0x27D4_EB2F_1656_67C5;

/// FxHash-style accumulation of 32-bit units, finished with the splitmix64 finaliser so
/// that every output bit depends on every input bit. Fixed here: vectors must not change
/// across platforms or Rust versions.
fn hash_units(seed: u64, units: impl IntoIterator<Item = u32>) -> u64 {
    let mut h = seed;
    for u in units {
        h = (h.rotate_left(5) ^ u64::from(u)).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

fn word_hash(parts: &[&str]) -> u64 {
    hash_units(
        SEED_WORD,
        parts.iter().flat_map(|p| p.bytes()).map(u32::from),
    )
}

impl Features {
    /// Tokenizes `text` into `self.tally`.
    fn collect(&mut self, config: &HashConfig, text: &str) {
        self.tally.clear();
        self.word.clear();
        let mut chars = text.chars().peekable();
        let mut prev_cjk = None;
        while let Some(c) = chars.next() {
            let class = classify(c);
            if let Class::Cjk(c) = class {
                self.end_word(config);
                let unigram = hash_units(SEED_CJK_UNIGRAM, [c as u32]);
                self.tally.add(unigram, config.cjk_unigram_weight);
                if let Some(p) = prev_cjk {
                    let bigram = hash_units(SEED_CJK_BIGRAM, [p as u32, c as u32]);
                    self.tally.add(bigram, config.cjk_bigram_weight);
                }
                prev_cjk = Some(c);
                continue;
            }
            prev_cjk = None;
            match class {
                Class::Word(c) if c.is_ascii() => self.word.push(c),
                Class::Word(c) => self.word.extend(c.to_lowercase()),
                // Inside a word (`don't`, `Biden's`) an apostrophe joins; elsewhere it breaks.
                Class::Apostrophe
                    if !self.word.is_empty()
                        && chars
                            .peek()
                            .is_some_and(|&d| matches!(classify(d), Class::Word(_))) => {}
                _ => self.end_word(config),
            }
        }
        self.end_word(config);
    }

    /// Turns the buffered word into features and clears it.
    fn end_word(&mut self, config: &HashConfig) {
        if self.word.is_empty() {
            return;
        }
        let hash = word_hash(&[&self.word]);
        if STOP_WORD_HASHES.binary_search(&hash).is_ok() {
            self.tally.add(hash, config.stop_word_weight);
            self.word.clear();
            return;
        }
        if config.ngram > 0 {
            self.padded.clear();
            self.padded.push('<');
            self.padded.extend(self.word.chars());
            self.padded.push('>');
            let seed = SEED_NGRAM ^ config.ngram as u64;
            for gram in self.padded.windows(config.ngram) {
                let gram_hash = hash_units(seed, gram.iter().map(|&c| c as u32));
                self.tally.add(gram_hash, config.ngram_weight);
            }
        }
        let stem_hash = match s_stem(&self.word) {
            (stem, "") if stem.len() == self.word.len() => hash,
            (stem, suffix) => word_hash(&[stem, suffix]),
        };
        self.tally.add(stem_hash, config.word_weight);
        self.word.clear();
    }

    /// Each distinct feature once, its weight scaled by `1 + ln(tf)`.
    fn weighted(&self) -> impl Iterator<Item = (u64, f32)> + '_ {
        self.tally
            .entries
            .iter()
            .map(|&(hash, weight, tf)| match tf {
                1 => (hash, weight),
                _ => (hash, weight * (1.0 + (tf as f32).ln())),
            })
    }
}

/// Distinct features with their weight and count, in first-seen order: the bucket sums then
/// run in the same order for the same text whatever was embedded before it, so a text's
/// vector is bit-exact in any batch.
#[derive(Default)]
struct Tally {
    index: HashMap<u64, usize, BuildHasherDefault<PreHashed>>,
    entries: Vec<(u64, f32, u32)>,
}

impl Tally {
    fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
    }

    /// Counts one occurrence; the seed is part of the hash, so one hash has one weight.
    fn add(&mut self, hash: u64, weight: f32) {
        match self.index.entry(hash) {
            Entry::Occupied(e) => self.entries[*e.get()].2 += 1,
            Entry::Vacant(e) => {
                e.insert(self.entries.len());
                self.entries.push((hash, weight, 1));
            }
        }
    }
}

/// The tally's keys are already well-mixed 64-bit hashes: use them as they are.
#[derive(Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; this fallback keeps the trait total.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Harman's S-stemmer ("How effective is suffixing?", 1991) on ASCII words of 4+ letters:
/// `-ies` → `-y`, `-es` → `-e`, `-s` → ``, with its exceptions; `'s` arrives here as `s`.
/// Returns the stem as a prefix of `word` and a suffix to append (no allocation).
fn s_stem(word: &str) -> (&str, &'static str) {
    let keep = (word, "");
    if word.len() < 4 || !word.is_ascii() || !word.ends_with('s') {
        return keep;
    }
    let cut = |n: usize, suffix| (&word[..word.len() - n], suffix);
    if word.ends_with("ies") && !(word.ends_with("eies") || word.ends_with("aies")) {
        return cut(3, "y");
    }
    if word.ends_with("es")
        && !(word.ends_with("aes") || word.ends_with("ees") || word.ends_with("oes"))
    {
        return cut(1, "");
    }
    if word.ends_with("us") || word.ends_with("ss") {
        return keep;
    }
    cut(1, "")
}

/// Common English function words.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The word hashes of [`STOP_WORDS`], sorted: a lookup compares integers, not strings.
static STOP_WORD_HASHES: LazyLock<Vec<u64>> = LazyLock::new(|| {
    let mut hashes: Vec<u64> = STOP_WORDS.iter().map(|w| word_hash(&[w])).collect();
    hashes.sort_unstable();
    hashes
});

#[cfg(test)]
mod tests {
    use super::*;

    fn embed_one(e: &HashEmbedder, text: &str) -> Vec<f32> {
        e.embed(&[text]).expect("hash embedding cannot fail")
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn stop_words_are_distinct_lowercase_words() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS
            .iter()
            .all(|w| w.bytes().all(|b| b.is_ascii_lowercase())));
        assert!(STOP_WORD_HASHES.windows(2).all(|h| h[0] < h[1]));
    }

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let e = HashEmbedder::default();
        let texts = [
            "How do I roll back a deploy?",
            "梵語的發展",
            "",
            "Zürich café ÉTÉ",
        ];
        let a = e.embed(&texts).unwrap();
        assert_eq!(a.len(), texts.len() * DEFAULT_DIMENSION);
        for row in a.chunks(DEFAULT_DIMENSION) {
            let norm: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        }
        assert_eq!(a, e.embed(&texts).unwrap());
    }

    #[test]
    fn hash_is_pinned() {
        // Changing the hash silently invalidates every stored vector: bump the name instead.
        assert_eq!(
            hash_units(SEED_WORD, "deploy".bytes().map(u32::from)),
            0xa8a4_92a0_4c68_b8da
        );
    }

    #[test]
    fn featureless_text_is_the_uniform_unit_vector() {
        let e = HashEmbedder::new(16).unwrap();
        let expected = vec![0.25; 16];
        for text in ["", "   \n", "?!… --- ()", "。，、"] {
            assert_eq!(embed_one(&e, text), expected, "{text:?}");
        }
    }

    #[test]
    fn related_texts_score_higher() {
        let e = HashEmbedder::default();
        let q = embed_one(&e, "how do I roll back a deploy");
        let good = embed_one(
            &e,
            "To roll back, run the deploy script with the previous release tag.",
        );
        let bad = embed_one(&e, "Hotel stays are reimbursed up to 180 EUR per night.");
        assert!(cosine(&q, &good) > cosine(&q, &bad) + 0.1);
    }

    #[test]
    fn plurals_possessives_and_case_match() {
        let e = HashEmbedder::new(4096).unwrap();
        let a = embed_one(&e, "Policies");
        assert!(cosine(&a, &embed_one(&e, "policy")) > 0.6);
        let b = embed_one(&e, "Biden's");
        assert!(cosine(&b, &embed_one(&e, "biden")) > 0.6);
        assert!(cosine(&embed_one(&e, "ZÜRICH"), &embed_one(&e, "zürich")) > 0.999);
    }

    #[test]
    fn cjk_characters_and_pairs_are_features() {
        let e = HashEmbedder::default();
        let q = embed_one(&e, "梵語的發展");
        let near = embed_one(&e, "要探討梵語的發展，可以考察");
        let far = embed_one(&e, "颱風在台灣東部登陸");
        assert!(cosine(&q, &near) > 0.5);
        assert!(cosine(&q, &far) < 0.2);
        // Full-width letters mean the same as ASCII ones.
        assert!(cosine(&embed_one(&e, "ＡＢＣ"), &embed_one(&e, "abc")) > 0.999);
    }

    #[test]
    fn s_stemmer_follows_harman() {
        for (word, stem) in [
            ("policies", "policy"),
            ("classes", "classe"),
            ("deploys", "deploy"),
            ("status", "status"),
            ("glass", "glass"),
            ("toes", "toe"),
            ("bus", "bus"),
            ("bidens", "biden"),
            ("北京s", "北京s"),
        ] {
            let (prefix, suffix) = s_stem(word);
            assert_eq!(format!("{prefix}{suffix}"), stem, "{word}");
        }
    }

    #[test]
    fn bad_configs_are_refused() {
        assert_eq!(HashEmbedder::new(0), Err(HashConfigError::Dimension(0)));
        assert!(HashEmbedder::new(MAX_DIMENSION + 1).is_err());
        let nan = HashConfig {
            ngram_weight: f32::NAN,
            ..HashConfig::default()
        };
        assert!(matches!(
            HashEmbedder::with_config(nan),
            Err(HashConfigError::Weight {
                name: "ngram_weight",
                ..
            })
        ));
        let ngram = HashConfig {
            ngram: 1,
            ..HashConfig::default()
        };
        assert_eq!(
            HashEmbedder::with_config(ngram),
            Err(HashConfigError::Ngram(1))
        );
    }

    #[test]
    fn fingerprints_parse_back_to_the_same_embedder() {
        let configs = [
            HashConfig::default(),
            HashConfig {
                dimension: 2048,
                ngram: 0,
                word_weight: 0.75,
                ..HashConfig::default()
            },
        ];
        for config in configs {
            let embedder = HashEmbedder::with_config(config).unwrap();
            let parsed = HashEmbedder::from_fingerprint(&embedder.fingerprint());
            assert_eq!(parsed, Some(embedder));
        }
        let default = HashEmbedder::default().fingerprint();
        for bad in [
            String::new(),
            default.replace("dim=512", "dim=0"),
            default.replace("tf=1+ln", "tf=raw"),
            default.replace("ngram=3:0.4", "ngram=3"),
            format!("{default};extra=1"),
        ] {
            assert_eq!(HashEmbedder::from_fingerprint(&bad), None, "{bad}");
        }
    }

    #[test]
    fn fingerprint_changes_with_settings() {
        let a = HashEmbedder::default().fingerprint();
        let b = HashEmbedder::new(256).unwrap().fingerprint();
        assert_ne!(a, b);
        assert!(a.starts_with("dim=512;"));
    }
}
