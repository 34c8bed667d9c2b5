//! End-to-end examples of `chunk_document`: what each kind of input turns into.

use folio::chunk::{
    ChildStrategy, ChunkSpec, Chunked, EmbedForm, EmbedTexts, ParentStrategy, SizeUnit,
    SourceFormat, Span,
};
use folio_testkit::chunks::{chunk_and_check, specs};

fn spec(target: usize, overlap: usize, parent: ParentStrategy) -> ChunkSpec {
    ChunkSpec {
        child: ChildStrategy::Structure { target, overlap },
        parent,
        heading_depth: 2,
        ..ChunkSpec::default()
    }
}

fn run(text: &str, format: SourceFormat, spec: &ChunkSpec) -> Chunked {
    chunk_and_check(text, format, spec).unwrap_or_else(|e| panic!("{e}\nin {text:?}"))
}

fn children<'a>(text: &'a str, out: &Chunked) -> Vec<&'a str> {
    out.children
        .iter()
        .map(|c| &text[c.span.start..c.span.end])
        .collect()
}

fn parents<'a>(text: &'a str, out: &Chunked) -> Vec<&'a str> {
    out.parents
        .iter()
        .map(|p| &text[p.span.start..p.span.end])
        .collect()
}

fn owned(path: &[&str]) -> Vec<String> {
    path.iter().map(|s| s.to_string()).collect()
}

const GUIDE: &str = "---
title: Guide
tags: [a, b]
---

Welcome to the guide.

# Guide

Folio stores vectors.

## Install

Run the installer. Then restart.

- first step
- second step
  - nested step

### Linux

Use the package.

## Use

Search it.
";

#[test]
fn markdown_sections_paths_and_front_matter() {
    let out = run(GUIDE, SourceFormat::Markdown, &ChunkSpec::default());
    assert_eq!(
        children(GUIDE, &out),
        vec![
            "Welcome to the guide.",
            "# Guide\n\nFolio stores vectors.",
            "## Install\n\nRun the installer. Then restart.\n\n- first step\n- second step\n  - nested step",
            "### Linux\n\nUse the package.",
            "## Use\n\nSearch it.",
        ]
    );
    let paths: Vec<Vec<String>> = out
        .children
        .iter()
        .map(|c| c.section_path.clone())
        .collect();
    assert_eq!(
        paths,
        vec![
            owned(&[]),
            owned(&["Guide"]),
            owned(&["Guide", "Install"]),
            owned(&["Guide", "Install", "Linux"]),
            owned(&["Guide", "Use"]),
        ]
    );
    // Section parents: one per section here, each child its own section's parent.
    assert_eq!(parents(GUIDE, &out), children(GUIDE, &out));
    assert!(!GUIDE[out.children[0].span.start..].starts_with("title"));
}

#[test]
fn a_heading_with_nothing_under_it_joins_the_next_section() {
    let text = "# Your rights\n\n## When\n\nYou are a worker.\n\n## Fees\n\nNo fees.";
    let out = run(text, SourceFormat::Markdown, &ChunkSpec::default());
    assert_eq!(
        children(text, &out),
        vec![
            "# Your rights\n\n## When\n\nYou are a worker.",
            "## Fees\n\nNo fees."
        ]
    );
    assert_eq!(
        out.children[0].section_path,
        owned(&["Your rights", "When"])
    );
}

#[test]
fn heading_starts_the_first_child_of_a_long_section() {
    let text =
        "# Title\n\nFirst sentence is here. Second sentence is here. Third sentence is here.";
    let out = run(
        text,
        SourceFormat::Markdown,
        &spec(40, 0, ParentStrategy::Section { max: 2000 }),
    );
    let got = children(text, &out);
    assert!(got[0].starts_with("# Title\n\nFirst"), "{got:?}");
    assert!(
        got.iter()
            .skip(1)
            .all(|c| c.starts_with(|c: char| c.is_uppercase())),
        "{got:?}"
    );
}

#[test]
fn oversized_code_fence_stays_whole_and_a_long_table_goes_in_row_groups() {
    let code = format!(
        "```rust\n{}```",
        "let value = compute(1, 2, 3);\n".repeat(8)
    );
    let table = format!(
        "| key | value |\n|-----|-------|\n{}",
        "| alpha | beta gamma delta |\n".repeat(6)
    );
    let text = format!("# Data\n\nSome intro.\n\n{code}\n\nBetween them.\n\n{table}\nAfter.");
    let out = run(
        &text,
        SourceFormat::Markdown,
        &spec(60, 0, ParentStrategy::Section { max: 120 }),
    );
    let got = children(&text, &out);
    assert!(got.contains(&code.as_str()), "{got:?}");
    let flagged: Vec<&str> = out
        .children
        .iter()
        .filter(|c| c.oversized)
        .map(|c| &text[c.span.start..c.span.end])
        .collect();
    assert_eq!(flagged, vec![code.as_str()]);
    // The table is longer than a child: row groups (rows whole, as the checker above
    // verified) under its head row.
    let table_start = text.find("| key").unwrap();
    let groups: Vec<_> = out
        .children
        .iter()
        .filter(|c| c.span.start >= table_start && c.span.end <= table_start + table.len())
        .collect();
    assert!(groups.len() > 1, "{got:?}");
    for c in groups {
        assert_eq!(c.section_path, owned(&["Data", "key | value"]));
    }
    // Each oversized block is a parent of its own too.
    assert!(parents(&text, &out).contains(&code.as_str()));
}

#[test]
fn indented_code_is_never_cut() {
    let code = "    fn main() {\n        println!(\"one two three four five\");\n    }";
    let text = format!("Intro line here.\n\n{code}\n\nOutro.");
    let out = run(
        &text,
        SourceFormat::Markdown,
        &spec(20, 0, ParentStrategy::Child),
    );
    assert!(
        children(&text, &out).contains(&code.trim_start()),
        "{:?}",
        children(&text, &out)
    );
}

#[test]
fn lists_are_packed_by_items() {
    let items: Vec<String> = (1..=12)
        .map(|i| format!("- item number {i} of the list"))
        .collect();
    let text = format!("Shopping:\n\n{}\n\nDone.", items.join("\n"));
    let out = run(
        &text,
        SourceFormat::Markdown,
        &spec(100, 0, ParentStrategy::Section { max: 2000 }),
    );
    for child in children(&text, &out) {
        let lines_whole = child.lines().all(|l| {
            l == "Shopping:" || l == "Done." || l.is_empty() || items.iter().any(|i| i == l)
        });
        assert!(lines_whole, "child cuts an item: {child:?}");
    }
}

#[test]
fn chinese_paragraphs_without_spaces() {
    let para = "梵语是印度的古典语言，也是印度教的礼仪语言。它的语法由波你尼系统整理，影响深远。现存文献数量极多，涵盖宗教、哲学与科学。";
    let text = format!("{para}\n\n{para}");
    for format in [SourceFormat::Text, SourceFormat::Markdown] {
        let out = run(
            &text,
            format,
            &spec(30, 0, ParentStrategy::Section { max: 100 }),
        );
        for child in children(&text, &out) {
            assert!(child.chars().count() <= 30);
            assert!(
                child.ends_with('。') || child.ends_with('，') || child.ends_with('、'),
                "{child:?}"
            );
        }
    }
}

#[test]
fn multibyte_text_with_overlap() {
    let text =
        "Zürich ist schön. Ça va très bien! Ελληνικά κείμενα εδώ. Последнее предложение тут.";
    let out = run(
        text,
        SourceFormat::Text,
        &spec(40, 15, ParentStrategy::Child),
    );
    assert!(out.children.len() > 1);
    assert!(children(text, &out).iter().all(|c| c.chars().count() <= 40));
}

#[test]
fn plain_text_paragraphs_then_sentences() {
    let text = "Short paragraph one.\n\nShort paragraph two.\n\nA longer paragraph follows here. It has three sentences. This is the last one.";
    let out = run(
        text,
        SourceFormat::Text,
        &spec(60, 0, ParentStrategy::Section { max: 2000 }),
    );
    assert_eq!(
        children(text, &out),
        vec![
            "Short paragraph one.\n\nShort paragraph two.",
            // Balanced rather than a tiny tail.
            "A longer paragraph follows here.",
            "It has three sentences. This is the last one.",
        ]
    );
    assert!(out.children.iter().all(|c| c.section_path.is_empty()));
}

#[test]
fn wikitext_headings_give_paths() {
    let text = " = Game = \n Intro . \n = = Plot = = \n The plot . \n";
    let out = run(text, SourceFormat::Text, &ChunkSpec::default());
    let paths: Vec<Vec<String>> = out
        .children
        .iter()
        .map(|c| c.section_path.clone())
        .collect();
    assert_eq!(paths, vec![owned(&["Game"]), owned(&["Game", "Plot"])]);
}

#[test]
fn fixed_baselines() {
    let text = "naïve café — 北京欢迎你。 words and more words";
    let chars = ChunkSpec {
        child: ChildStrategy::Fixed {
            size: 7,
            overlap: 2,
            unit: SizeUnit::Chars,
        },
        parent: ParentStrategy::Child,
        heading_depth: 0,
        ..ChunkSpec::default()
    };
    let out = run(text, SourceFormat::Text, &chars);
    assert_eq!(children(text, &out)[..2], ["naïve c", "café —"]);
    let tokens = ChunkSpec {
        child: ChildStrategy::Fixed {
            size: 3,
            overlap: 0,
            unit: SizeUnit::Tokens,
        },
        ..chars
    };
    let out = run(text, SourceFormat::Markdown, &tokens);
    assert_eq!(
        children(text, &out)[..3],
        ["naïve café —", "北京欢", "迎你。"]
    );
}

#[test]
fn fixed_parents_hold_section_split_children() {
    let out = run(
        GUIDE,
        SourceFormat::Markdown,
        &spec(300, 0, ParentStrategy::Fixed { size: 120 }),
    );
    assert!(out.parents.len() > 1);
    assert!(children(GUIDE, &out)
        .iter()
        .all(|c| !c[1..].contains("\n#")));
}

#[test]
fn edge_inputs_give_nothing_or_one_child() {
    for text in ["", "   \n\t ", "---\na: 1\n---\n"] {
        for spec in specs() {
            let out = run(text, SourceFormat::Markdown, &spec);
            assert!(
                out.children.is_empty() && out.parents.is_empty(),
                "{text:?}"
            );
        }
    }
    let toml = "+++\ntitle = \"t\"\n+++\n\nBody text.";
    let out = run(toml, SourceFormat::Markdown, &ChunkSpec::default());
    assert_eq!(children(toml, &out), vec!["Body text."]);
    let out = run("x", SourceFormat::Text, &ChunkSpec::default());
    assert_eq!(children("x", &out), vec!["x"]);
}

#[test]
fn every_spec_keeps_the_contract_on_the_guide() {
    for spec in specs() {
        run(GUIDE, SourceFormat::Markdown, &spec);
        run(GUIDE, SourceFormat::Text, &spec);
    }
}

#[test]
fn embed_text_prefixes_the_first_headings() {
    let path = owned(&["Guide", "Install", "Linux"]);
    let texts = EmbedTexts::new("body", SourceFormat::Text).with_form(EmbedForm::PathPrefix);
    let embed_text = |path: &[String], depth| texts.get(path, Span { start: 0, end: 4 }, depth);
    assert_eq!(embed_text(&path, 2), "Guide > Install\n\nbody");
    assert_eq!(embed_text(&path, 5), "Guide > Install > Linux\n\nbody");
    assert_eq!(embed_text(&path, 0), "body");
    assert_eq!(embed_text(&[], 2), "body");
}

/// A GOV.UK-style page: short sections, one subsection, one section longer than a child.
const SHORT_SECTIONS: &str = "# Guide\n\nIntro.\n\n## A\n\naaa.\n\n## B\n\nbbb.\n\n### B1\n\nb1.\n\n## C\n\nThe first sentence of C. The second sentence of C. The third one.";

#[test]
fn short_sibling_sections_are_packed_under_their_parent() {
    let out = run(
        SHORT_SECTIONS,
        SourceFormat::Markdown,
        &spec(40, 0, ParentStrategy::Child),
    );
    let got = children(SHORT_SECTIONS, &out);
    assert_eq!(
        got[..2],
        [
            "# Guide\n\nIntro.\n\n## A\n\naaa.",
            "## B\n\nbbb.\n\n### B1\n\nb1."
        ]
    );
    // A packed child's path is its sections' common path: the parent whose text and
    // subsections it holds. The long section is cut as before, under its own path.
    let paths: Vec<Vec<String>> = out
        .children
        .iter()
        .map(|c| c.section_path.clone())
        .collect();
    assert_eq!(paths[..2], [owned(&["Guide"]), owned(&["Guide", "B"])]);
    assert!(got.len() > 3 && got[2].starts_with("## C"));
    assert!(paths[2..].iter().all(|p| *p == owned(&["Guide", "C"])));
    // No heading is embedded twice: the path's headings leave the text, the others keep
    // their titles without `#`.
    let embed = EmbedTexts::new(SHORT_SECTIONS, SourceFormat::Markdown);
    let texts: Vec<String> = out
        .children
        .iter()
        .map(|c| embed.get(&c.section_path, c.span, 2))
        .collect();
    assert_eq!(texts[0], "Guide\n\nIntro.\n\nA\n\naaa.");
    assert_eq!(texts[1], "Guide > B\n\nbbb.\n\nB1\n\nb1.");
    assert_eq!(
        texts[2],
        format!("Guide > C\n\n{}", &got[2]["## C\n\n".len()..])
    );
    assert!(texts[3].starts_with("Guide > C\n\n"), "{:?}", texts[3]);
    // One level: the deeper path's heading stays in the text, without `#`.
    assert_eq!(
        embed.get(&out.children[1].section_path, out.children[1].span, 1),
        "Guide\n\nB\n\nbbb.\n\nB1\n\nb1."
    );
    // A section of its own when long enough: under 2/5 of the target only are packed.
    let wide = run(
        SHORT_SECTIONS,
        SourceFormat::Markdown,
        &spec(30, 0, ParentStrategy::Child),
    );
    assert_eq!(children(SHORT_SECTIONS, &wide)[0], "# Guide\n\nIntro.");
    // The form of indexes written by store formats 1 to 6: the headings the text holds
    // leave the prefix, the text stays whole, and whole sections that fit are packed.
    let old = ChunkSpec {
        embed_form: EmbedForm::PathPrefix,
        ..spec(30, 0, ParentStrategy::Child)
    };
    let packed = run(SHORT_SECTIONS, SourceFormat::Markdown, &old);
    let got = children(SHORT_SECTIONS, &packed);
    assert_eq!(got[0], "# Guide\n\nIntro.\n\n## A\n\naaa.");
    let embed =
        EmbedTexts::new(SHORT_SECTIONS, SourceFormat::Markdown).with_form(EmbedForm::PathPrefix);
    let texts: Vec<String> = packed
        .children
        .iter()
        .map(|c| embed.get(&c.section_path, c.span, 2))
        .collect();
    assert_eq!(texts[0], got[0]);
    assert_eq!(texts[1], format!("Guide\n\n{}", got[1]));
    // Section parents keep each section apart.
    let out = run(
        SHORT_SECTIONS,
        SourceFormat::Markdown,
        &spec(40, 0, ParentStrategy::Section { max: 2000 }),
    );
    assert_eq!(children(SHORT_SECTIONS, &out)[1], "## A\n\naaa.");
}

#[test]
fn packing_never_crosses_a_parent_boundary() {
    // B2 and C are both short, but B2 is under B and C is B's sibling; B's text and B2
    // are apart too, since B1 between them is too long to pack.
    let text = "## B\n\nbbb.\n\n### B1\n\nThe first sentence of B1. The second sentence of B1.\n\n### B2\n\nb2.\n\n## C\n\nccc.\n\n## D\n\nddd.";
    let out = run(
        text,
        SourceFormat::Markdown,
        &spec(40, 0, ParentStrategy::Child),
    );
    let got = children(text, &out);
    assert_eq!(got[0], "## B\n\nbbb.");
    assert!(got.contains(&"### B2\n\nb2."), "{got:?}");
    assert_eq!(got.last(), Some(&"## C\n\nccc.\n\n## D\n\nddd."));
    assert_eq!(
        out.children.last().unwrap().section_path,
        Vec::<String>::new()
    );
}

/// A child sized in tokens: its embedded text (heading prefix included) is at most the
/// target; a prefix longer than half the target counts only up to half of it, so the child's
/// own text keeps half the target rather than a token or two (nothing is flagged).
#[test]
fn token_targets_count_the_heading_prefix_up_to_half() {
    let text = "# Refunds and returns policy\n\n## Digital goods bought online\n\n\
                You can ask for your money back within fourteen days of the purchase. \
                We pay it back to the card you used. Keep the receipt until then.\n";
    let spec = |target| ChunkSpec {
        child: ChildStrategy::StructureIn {
            target,
            overlap: 0,
            unit: SizeUnit::Tokens,
        },
        parent: ParentStrategy::Child,
        heading_depth: 2,
        ..ChunkSpec::default()
    };
    let texts = EmbedTexts::new(text, SourceFormat::Markdown);
    // "Refunds and returns policy > Digital goods bought online": 9 tokens of the estimate.
    let prefix = 9;
    for target in [24, 12, 6, 1] {
        let out = run(text, SourceFormat::Markdown, &spec(target));
        let half = target - target / 2;
        let mut longest_prefixed = 0;
        for c in &out.children {
            let embedded = texts.get(&c.section_path, c.span, 2);
            let (all, own) = (
                folio::tokens::count(&embedded),
                folio::tokens::count(&texts.body(c.span)),
            );
            assert!(!c.oversized, "{target}: {embedded:?}");
            assert!(
                all <= target || own <= half,
                "{target}: {all}/{own} {embedded:?}"
            );
            if all == own + prefix {
                longest_prefixed = longest_prefixed.max(own);
            }
        }
        // The children under both headings carry the prefix, counted whole while it takes
        // at most half the target (24); past that, counted whole, it would leave them
        // `target - 9` tokens (none at all below 10), and they keep half the target.
        let body = target.saturating_sub(prefix).max(half);
        assert!(longest_prefixed > 0 && longest_prefixed <= body, "{target}");
        if prefix > target / 2 {
            assert!(longest_prefixed > target.saturating_sub(prefix), "{target}");
        }
    }
}
