//! Near-duplicate detection between returned texts (boilerplate repeated across pages,
//! the same paragraph in two versions of a document).

use std::collections::HashSet;

/// Word 3-shingles of `text`, lowercased, as hashes.
fn shingles(text: &str) -> HashSet<u64> {
    use std::hash::{Hash, Hasher};
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    // Texts with few words (or CJK runs without spaces) fall back to character trigrams.
    let grams: Vec<String> = if words.len() >= 6 {
        words.windows(3).map(|w| w.join(" ")).collect()
    } else {
        let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        chars.windows(3).map(|w| w.iter().collect()).collect()
    };
    grams
        .into_iter()
        .map(|g| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            g.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// The shingles of a text, computed once however many texts it is compared with.
pub(crate) struct Shingles(HashSet<u64>);

impl Shingles {
    pub(crate) fn of(text: &str) -> Self {
        Shingles(shingles(text))
    }
}

/// Whether texts `a` and `b` (each with its [`Shingles`]) share at least `threshold` of
/// their shingles (Jaccard); texts without any are compared whole, spacing around them
/// aside.
pub(crate) fn near_duplicate(a: (&str, &Shingles), b: (&str, &Shingles), threshold: f32) -> bool {
    let (sa, sb) = (&a.1 .0, &b.1 .0);
    if sa.is_empty() || sb.is_empty() {
        return a.0.trim() == b.0.trim();
    }
    let inter = sa.intersection(sb).count();
    let union = sa.len() + sb.len() - inter;
    inter as f32 / union as f32 >= threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn similar(a: &str, b: &str, threshold: f32) -> bool {
        near_duplicate((a, &Shingles::of(a)), (b, &Shingles::of(b)), threshold)
    }

    #[test]
    fn same_text_with_other_spacing_is_a_duplicate() {
        let a = "Roll back a deploy with the release tool, then page the on-call engineer.";
        let b = "Roll back a deploy  with the release tool,\nthen page the on-call engineer.";
        assert!(similar(a, b, 0.9));
    }

    #[test]
    fn different_texts_are_not() {
        let a = "Roll back a deploy with the release tool, then page the on-call engineer.";
        let b = "Hotel stays are reimbursed up to 180 euros a night in most cities we visit.";
        assert!(!similar(a, b, 0.9));
    }
}
