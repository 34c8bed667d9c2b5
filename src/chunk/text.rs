//! The layout of plain text: paragraphs, lines, sentences, words; WikiText-style heading
//! lines (` = Title = `, ` = = Section = = `) open sections.

use super::layout::{Builder, Layout};
use super::prose::{self, PLAIN};

pub(crate) fn layout(text: &str) -> Layout<'_> {
    let mut b = Builder::new(text);
    prose::scan(text, 0, text.len(), PLAIN, &mut b);
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        if let Some((level, title)) = wiki_heading(line) {
            let start = line_start + (line.len() - line.trim_start().len());
            let end = line_start + line.trim_end().len();
            b.heading(start, end, level, title.to_string());
            b.glue(start, end);
        }
        line_start += line.len();
    }
    b.build()
}

/// A WikiText heading line: `= Title =` at level 1, `= = Title = =` at level 2, and so on.
fn wiki_heading(line: &str) -> Option<(usize, &str)> {
    let mut rest = line.trim();
    if rest.len() > 200 {
        return None;
    }
    let mut level = 0;
    while let Some(inner) = rest.strip_prefix("= ") {
        rest = inner;
        level += 1;
    }
    for _ in 0..level {
        rest = rest.strip_suffix(" =")?;
    }
    let title = rest.trim();
    let plain = level > 0 && !title.is_empty() && !title.starts_with('=') && !title.ends_with('=');
    plain.then_some((level, title))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_wikitext_headings_only() {
        assert_eq!(
            wiki_heading(" = Valkyria Chronicles III = \n"),
            Some((1, "Valkyria Chronicles III"))
        );
        assert_eq!(
            wiki_heading(" = = = Gameplay = = = "),
            Some((3, "Gameplay"))
        );
        assert_eq!(wiki_heading("a = b = c"), None);
        assert_eq!(wiki_heading("= = ="), None);
        assert_eq!(wiki_heading("= x = ="), None);
    }

    #[test]
    fn wikitext_headings_make_sections() {
        let text = " = Game = \n Intro text . \n = = Plot = = \n The plot . \n";
        let layout = layout(text);
        let got: Vec<(&str, Vec<String>)> = layout
            .sections
            .iter()
            .map(|s| (&text[s.span.start..s.span.end], s.path.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("= Game = \n Intro text .", vec!["Game".to_string()]),
                (
                    "= = Plot = = \n The plot .",
                    vec!["Game".to_string(), "Plot".to_string()]
                ),
            ]
        );
    }
}
