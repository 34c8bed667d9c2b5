//! The chunker over every example of the CommonMark spec, and over the spec itself: no text
//! lost, no code block or table cut (see `folio_testkit::chunks::check`).
//!
//! `tests/data/commonmark-spec-0.31.2.txt` is the CommonMark spec 0.31.2 by John MacFarlane,
//! licensed CC-BY-SA 4.0 (see `tests/data/commonmark-spec.LICENSE`), from the
//! `commonmark-spec` npm package.

use folio::chunk::SourceFormat;
use folio_testkit::chunks::{chunk_and_check, markdown_facts, specs};

const SPEC: &str = include_str!("../data/commonmark-spec-0.31.2.txt");
const FENCE: &str = "````````````````````````````````";

/// The Markdown input of each example (`→` stands for a tab).
fn examples(spec: &str) -> Vec<String> {
    let open = format!("{FENCE} example");
    let mut out = Vec::new();
    let mut lines = spec.lines();
    while let Some(line) = lines.next() {
        if line != open {
            continue;
        }
        let mut input = String::new();
        for line in lines.by_ref().take_while(|l| *l != ".") {
            input.push_str(line);
            input.push('\n');
        }
        out.push(input.replace('→', "\t"));
        lines.by_ref().find(|l| *l == FENCE);
    }
    out
}

#[test]
fn every_spec_example_keeps_the_contract() {
    let examples = examples(SPEC);
    assert_eq!(examples.len(), 652, "the 0.31.2 spec has 652 examples");
    let mut failures = Vec::new();
    for (n, input) in examples.iter().enumerate() {
        for spec in specs() {
            for format in [SourceFormat::Markdown, SourceFormat::Text] {
                if let Err(e) = chunk_and_check(input, format, &spec) {
                    failures.push(format!(
                        "example {}: {format:?} {spec:?}: {e}\n{input:?}",
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

#[test]
fn the_whole_spec_keeps_the_contract() {
    let facts = markdown_facts(SPEC);
    assert!(
        facts.front_matter.is_some(),
        "the spec starts with YAML front matter"
    );
    assert!(facts.blocks.len() > 600, "the examples are code blocks");
    for spec in specs() {
        let out = chunk_and_check(SPEC, SourceFormat::Markdown, &spec)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        assert!(out
            .children
            .iter()
            .all(|c| !SPEC[c.span.start..c.span.end].starts_with("title: CommonMark")));
    }
}
