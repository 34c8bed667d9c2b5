//! Parents: the reading units handed to a model, each holding one or more children.

use super::layout::{Layout, Strength};
use super::pack::Packing;
use super::pieces::Span;
use super::spec::ParentStrategy;

/// Parent spans in source order, trimmed and disjoint, sized in the layout's unit; `None` for
/// [`ParentStrategy::Child`] (each child is then its own parent).
pub(crate) fn spans(layout: &Layout<'_>, strategy: ParentStrategy) -> Option<Vec<Span>> {
    let spans = match strategy {
        ParentStrategy::Section { max } | ParentStrategy::SectionIn { max, .. } => layout
            .sections
            .iter()
            .flat_map(|s| Packing::new(layout, s.span, max, Strength::Sentence).spans(max))
            .map(|(span, _)| span)
            .collect(),
        ParentStrategy::Fixed { size } | ParentStrategy::FixedIn { size, .. } => layout
            .regions
            .iter()
            .flat_map(|r| Packing::windows(layout, *r, size, Strength::Sentence).spans(size))
            .map(|(s, _)| s)
            .collect(),
        ParentStrategy::Child => return None,
    };
    Some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::readers::{markdown, text};
    use crate::chunk::tree_layout::from_tree;

    fn texts(text: &str, spans: &[Span]) -> Vec<String> {
        spans
            .iter()
            .map(|s| text[s.start..s.end].to_string())
            .collect()
    }

    #[test]
    fn section_parents_split_long_sections_at_blocks() {
        let text = "# A\n\nfirst para.\n\nsecond para.\n\n# B\n\nshort.";
        let layout = from_tree(text, &markdown::read(text));
        let got = spans(&layout, ParentStrategy::Section { max: 20 }).unwrap_or_default();
        assert_eq!(
            texts(text, &got),
            vec!["# A\n\nfirst para.", "second para.", "# B\n\nshort."]
        );
        let whole = spans(&layout, ParentStrategy::Section { max: 2000 }).unwrap_or_default();
        assert_eq!(
            texts(text, &whole),
            vec!["# A\n\nfirst para.\n\nsecond para.", "# B\n\nshort."]
        );
    }

    #[test]
    fn oversized_code_gets_a_parent_of_its_own() {
        let code = format!("```\n{}\n```", "x = 1\n".repeat(10));
        let text = format!("Intro text here.\n\n{code}\n\nOutro text here.");
        let layout = from_tree(&text, &markdown::read(&text));
        let got = spans(&layout, ParentStrategy::Section { max: 30 }).unwrap_or_default();
        assert_eq!(
            texts(&text, &got),
            vec![
                "Intro text here.".to_string(),
                code,
                "Outro text here.".to_string()
            ]
        );
    }

    #[test]
    fn fixed_parents_prefer_paragraph_bounds_near_the_size() {
        let text = "Aaa aaa aaa.\n\nBbb bbb. Ccc ccc ccc ccc ccc.\n\nDdd.";
        let layout = from_tree(text, &text::read(text));
        let got = spans(&layout, ParentStrategy::Fixed { size: 30 }).unwrap_or_default();
        assert_eq!(
            texts(text, &got),
            vec!["Aaa aaa aaa.\n\nBbb bbb.", "Ccc ccc ccc ccc ccc.\n\nDdd."]
        );
        let got = spans(&layout, ParentStrategy::Fixed { size: 24 }).unwrap_or_default();
        assert_eq!(
            texts(text, &got),
            vec!["Aaa aaa aaa.", "Bbb bbb.", "Ccc ccc ccc ccc ccc.", "Ddd."]
        );
        assert!(spans(&layout, ParentStrategy::Child).is_none());
    }
}
