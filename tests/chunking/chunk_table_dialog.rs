//! The CSV/TSV and dialog readers: a CSV of a few hundred rows (quoted fields, commas and
//! line breaks inside quotes), a Markdown table longer than a child, and a support ticket
//! thread. Every chunk's embedded text starts
//! with the table header, rows and turns are never cut, everything is covered, and the
//! generated inputs keep the span contract.

use folio::chunk::{
    chunk_document, ChildStrategy, ChunkSpec, Chunked, EmbedTexts, ParentStrategy, SizeUnit,
    SourceFormat, Span,
};
use folio_testkit::chunks::{self, check_any_format, check_spans_and_order, specs};
use proptest::prelude::*;

const REGIONS: &[&str] = &["eu-west", "us-east", "ap-south", "sa-east"];

/// 300 orders: an id, a customer with a comma in quotes, a region, an amount, and every
/// tenth row a note with a line break inside quotes.
fn orders() -> String {
    let mut csv = String::from("order_id,customer,region,amount_eur,note\n");
    for i in 0..300u32 {
        let note = if i % 10 == 0 {
            format!("\"call back\nbefore {}:00\"", 8 + i % 9)
        } else {
            String::new()
        };
        csv.push_str(&format!(
            "{},\"Müller, {}\",{},{}.{:02},{}\n",
            1000 + i,
            i * 7 % 97,
            REGIONS[(i % 4) as usize],
            (i * 37) % 500,
            i % 100,
            note
        ));
    }
    csv
}

fn spec(target: usize) -> ChunkSpec {
    ChunkSpec {
        child: ChildStrategy::Structure { target, overlap: 0 },
        parent: ParentStrategy::Section { max: target * 4 },
        heading_depth: 2,
        ..ChunkSpec::default()
    }
}

/// The rows: every record after the header, as the test itself finds them.
fn rows(csv: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut start = csv.find('\n').map_or(0, |i| i + 1);
    let mut quoted = false;
    let first = start;
    for (i, c) in csv.char_indices().skip_while(|(i, _)| *i < first) {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => {
                out.push(Span { start, end: i });
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

fn inside(out: &Chunked, span: Span) -> bool {
    out.children
        .iter()
        .any(|c| c.span.start <= span.start && span.end <= c.span.end)
}

#[test]
fn csv_row_groups_repeat_the_header_and_keep_rows_whole() {
    let csv = orders();
    let header = "order_id | customer | region | amount_eur | note";
    for target in [200, 500, 1500] {
        let out = chunk_document(&csv, SourceFormat::Csv, &spec(target));
        check_spans_and_order(&csv, &out).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.children.len() > 300 * 40 / target / 2,
            "{target}: too few chunks"
        );
        let embed = EmbedTexts::new(&csv, SourceFormat::Csv);
        for c in &out.children {
            assert_eq!(c.section_path, vec![header.to_string()]);
            let text = embed.get(&c.section_path, c.span, 2);
            assert!(text.starts_with(&format!("{header}\n\n")), "{text:?}");
            assert!(!csv[c.span.start..c.span.end].contains("order_id"));
            let rows = csv[c.span.start..c.span.end].matches("Müller").count();
            assert!(rows >= 1 && (c.span.end - c.span.start <= target * 2 || rows == 1));
        }
        for row in rows(&csv) {
            assert!(
                inside(&out, row),
                "{target}: row {:?} cut",
                &csv[row.start..row.end]
            );
        }
    }
    let tsv = csv.replace(',', "\t");
    let out = chunk_document(&tsv, SourceFormat::Tsv, &spec(500));
    assert!(out.children.iter().all(|c| c.section_path.len() == 1));
}

/// A Markdown page with a 120-row table between two paragraphs of one section, and a small
/// table in the next.
fn plans_page() -> String {
    let mut md = String::from(
        "# Pricing\n\nWhat each plan costs.\n\n## Plans\n\nEvery plan is billed monthly.\n\n\
         | plan | seats | price (EUR) |\n|---|---:|---:|\n",
    );
    for i in 0..120u32 {
        md.push_str(&format!(
            "| {} {} | {} | {}.{:02} |\n",
            ["Team", "Business", "Scale"][(i % 3) as usize],
            i,
            5 + i % 50,
            19 + i * 3,
            i % 100
        ));
    }
    md.push_str("\nPrices exclude VAT.\n\n## Extras\n\n| extra | price |\n|---|---|\n| SSO | 5 |\n| Audit log | 3 |\n");
    md
}

#[test]
fn markdown_tables_longer_than_a_child_go_in_row_groups_under_their_head_row() {
    let md = plans_page();
    let head = "plan | seats | price (EUR)";
    let table_start = md.find("| plan").unwrap();
    let table_end = md.find("\nPrices exclude").unwrap();
    let body: Vec<Span> = md[table_start..table_end]
        .lines()
        .scan(table_start, |pos, line| {
            let span = Span {
                start: *pos,
                end: *pos + line.len(),
            };
            *pos += line.len() + 1;
            Some(span)
        })
        .skip(2)
        .collect();
    assert_eq!(body.len(), 120);
    for target in [200, 500, 1000] {
        let out = chunk_document(&md, SourceFormat::Markdown, &spec(target));
        check_spans_and_order(&md, &out).unwrap_or_else(|e| panic!("{e}"));
        let embed = EmbedTexts::new(&md, SourceFormat::Markdown);
        let in_table: Vec<_> = out
            .children
            .iter()
            .filter(|c| c.span.start < table_end && c.span.end > table_start)
            .collect();
        assert!(in_table.len() > 1, "{target}: the table was not cut");
        for c in &in_table {
            // No table chunk without its head row: in the path, so in the embedded text.
            assert_eq!(c.section_path, ["Pricing", "Plans", head], "{target}");
            assert!(embed.get(&c.section_path, c.span, 3).contains(head));
            // A row group holds table rows only.
            assert!(c.span.start >= table_start && c.span.end <= table_end);
        }
        // Rows are never cut, and the chunks cover the table.
        for row in &body {
            assert!(
                inside(&out, *row),
                "{target}: row {:?} cut",
                &md[row.start..row.end]
            );
        }
        assert!(inside(
            &out,
            Span {
                start: table_start,
                end: table_start + 28
            }
        ));
        // The table's section ends with it.
        let after = md.find("Prices exclude").unwrap();
        let c = out
            .children
            .iter()
            .find(|c| c.span.start <= after && after < c.span.end);
        assert_eq!(c.unwrap().section_path, ["Pricing", "Plans"], "{target}");
        // A table that fits stays whole, in its section.
        let sso = md.find("| extra").unwrap();
        let c = out
            .children
            .iter()
            .find(|c| c.span.start <= sso && sso < c.span.end)
            .unwrap();
        assert!(md[c.span.start..c.span.end].contains("| Audit log | 3 |"));
        assert_eq!(c.section_path, ["Pricing", "Extras"]);
    }
    // With children longer than the table, it is kept whole as before.
    let out = chunk_document(&md, SourceFormat::Markdown, &spec(8000));
    let c = out
        .children
        .iter()
        .find(|c| c.span.start <= table_start && table_start < c.span.end)
        .unwrap();
    assert!(c.span.end >= table_end);
    assert_eq!(c.section_path, ["Pricing", "Plans"]);
}

/// A table exactly as long as a child (its line break after it and its pipes not counted)
/// fits and stays one child; one character longer, it is cut into rows. (Found by
/// `chunk_props`: the line break after the table was counted, and the head row became a
/// parent of its own.)
#[test]
fn a_table_as_long_as_a_child_stays_whole() {
    let md = "| h1 | h2 |\n|---|---|\n| a a a aa   | aaa          a  a  |\n|  aaa a aa    |  |\n\n";
    let table_len = chunks::markdown_facts(md).size(md, 0, md.trim_end().len(), SizeUnit::Chars);
    // Three pipes a row and the delimiter row's nine characters are syntax.
    assert_eq!(table_len, md.trim_end().chars().count() - 18);
    for (target, whole) in [(table_len, true), (table_len - 1, false)] {
        let spec = ChunkSpec {
            child: ChildStrategy::Structure { target, overlap: 1 },
            parent: ParentStrategy::Section { max: 0 },
            heading_depth: 2,
            ..ChunkSpec::default()
        };
        let out = chunks::chunk_and_check(md, SourceFormat::Markdown, &spec).unwrap();
        assert_eq!(out.children.len() == 1, whole, "target {target}: {out:?}");
    }
}

const TICKET: &str = r#"{"speaker": "customer:ana", "time": "2024-05-01T09:02:00Z", "topic": "Login fails", "text": "Since this morning I cannot log in. The page says 'session expired' right after I enter my password."}
{"speaker": "agent:bo", "time": "2024-05-01T09:10:00Z", "topic": "Login fails", "text": "Sorry about that. Which browser are you using, and does a private window work?"}
{"speaker": "customer:ana", "time": "2024-05-01T09:14:00Z", "topic": "Login fails", "text": "Firefox 125. A private window works."}
{"speaker": "agent:bo", "time": "2024-05-01T09:20:00Z", "topic": "Login fails", "text": "Then an old cookie is the cause. Please clear the cookies for our domain and log in again."}
{"speaker": "customer:ana", "time": "2024-05-01T09:31:00Z", "topic": "Invoice copy", "text": "That worked, thanks! While I have you: can I get a copy of the April invoice?"}
{"speaker": "agent:bo", "time": "2024-05-01T09:35:00Z", "topic": "Invoice copy", "text": "Of course. Invoices are under Account > Billing; I have also emailed the April one to you."}
{"speaker": "customer:ana", "time": "2024-05-01T09:40:00Z", "topic": "Invoice copy", "text": "Got it. You can close the ticket."}
"#;

#[test]
fn ticket_thread_is_cut_at_whole_turns_by_topic() {
    for target in [120, 300, 2000] {
        let out = chunk_document(TICKET, SourceFormat::Dialog, &spec(target));
        check_spans_and_order(TICKET, &out).unwrap_or_else(|e| panic!("{e}"));
        let embed = EmbedTexts::new(TICKET, SourceFormat::Dialog);
        for c in &out.children {
            let text = &TICKET[c.span.start..c.span.end];
            assert!(text.starts_with('{') && text.ends_with('}'), "{text:?}");
            let topic = c.section_path.first().cloned().unwrap_or_default();
            for line in text.lines() {
                assert!(
                    line.contains(&format!("\"topic\": \"{topic}\"")),
                    "{line} not in {topic}"
                );
            }
            let embedded = embed.get(&c.section_path, c.span, 1);
            assert!(embedded.starts_with(&format!("{topic}\n\n")));
            assert!(embedded.contains(" (2024-05-01T09:"), "{embedded:?}");
        }
        let turns = TICKET.lines().count();
        let covered: usize = out
            .children
            .iter()
            .map(|c| TICKET[c.span.start..c.span.end].lines().count())
            .sum();
        assert_eq!(covered, turns);
    }
    let out = chunk_document(TICKET, SourceFormat::Dialog, &spec(2000));
    let topics: Vec<&str> = out
        .children
        .iter()
        .map(|c| c.section_path[0].as_str())
        .collect();
    assert_eq!(topics, vec!["Login fails", "Invoice copy"]);
}

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        "[0-9]{1,6}",
        Just("\"a, b\"".to_string()),
        Just("\"x\ny\"".to_string()),
        Just("\"say \"\"hi\"\"\"".to_string()),
        Just("é北".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn generated_tables_keep_the_contract(
        rows in prop::collection::vec(prop::collection::vec(field(), 1..5), 0..30),
        tab in any::<bool>(),
    ) {
        let sep = if tab { "\t" } else { "," };
        let text: String = rows.iter().map(|r| r.join(sep) + "\n").collect();
        let format = if tab { SourceFormat::Tsv } else { SourceFormat::Csv };
        let checked = check_any_format(&text, format);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    #[test]
    fn generated_dialogs_keep_the_contract(
        turns in prop::collection::vec(("[a-z]{1,5}", "[a-zé北 .]{0,60}", prop::option::of("[a-c]")), 0..20),
        junk in "[a-z{}\"]{0,10}",
    ) {
        let mut text = String::new();
        for (speaker, words, topic) in &turns {
            let topic = topic.as_ref().map(|t| format!(", \"topic\": \"{t}\"")).unwrap_or_default();
            text.push_str(&format!("{{\"speaker\": \"{speaker}\", \"text\": \"{words}\"{topic}}}\n"));
        }
        let turns_end = text.len();
        text.push_str(&junk);
        for spec in specs() {
            let out = chunk_document(&text, SourceFormat::Dialog, &spec);
            prop_assert!(check_spans_and_order(&text, &out).is_ok(), "{:?}", check_spans_and_order(&text, &out));
            if matches!(spec.child, ChildStrategy::Structure { .. }) {
                // Whole turns only: every chunk starts and ends at a line bound.
                for c in out.children.iter().filter(|c| c.span.end <= turns_end) {
                    let before = &text[..c.span.start];
                    prop_assert!(before.is_empty() || before.ends_with('\n'));
                    prop_assert!(text[c.span.end..].is_empty() || text[c.span.end..].starts_with('\n'));
                }
            }
        }
        let checked = check_any_format(&text, SourceFormat::Dialog);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }
}
