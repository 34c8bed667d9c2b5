//! The HTML reader on a saved documentation page (navigation, header, cookie banner, sidebar,
//! footer, scripts) and on generated pages: section paths from `h1`-`h6`, nothing of the
//! page chrome in any chunk, code and tables whole, the content covered, spans valid.

use folio::chunk::{chunk_document, ChunkSpec, Chunked, EmbedTexts, SourceFormat, Span};
use folio_testkit::chunks::{check_any_format, check_spans_and_order, specs};
use proptest::prelude::*;

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Deploy guide</title>
  <style>.nav { color: red }</style>
  <script>window.analytics = "TRACKER-SCRIPT";</script>
</head>
<body>
  <div id="cookie-consent" class="banner">
    <p>We use COOKIE-BANNER cookies to improve this site. <button>Accept</button></p>
  </div>
  <header class="site-header">
    <a href="/">SITE-LOGO Docs</a>
    <form action="/search"><input name="q" placeholder="SEARCH-BOX"></form>
  </header>
  <nav aria-label="Primary">
    <ul><li><a href="/a">NAV-LINK Home</a></li><li><a href="/b">NAV-LINK Guides</a></li></ul>
  </nav>
  <div class="layout">
    <aside class="sidebar"><h3>SIDEBAR-TITLE On this page</h3><ul><li>SIDEBAR-ITEM</li></ul></aside>
    <main id="content">
      <article>
        <h1>Deploying &amp; rolling back</h1>
        <p>This guide explains how a release reaches production. Every deploy is a
           <em>release</em> built from one commit.</p>
        <h2>Before you start</h2>
        <p>You need access to the release tool and the on-call rota.</p>
        <ul>
          <li>An account in the deploy group.</li>
          <li>The <code>release</code> command, version 4 or newer.</li>
        </ul>
        <h2>Deploying</h2>
        <p>Run the command below from the repository root.</p>
        <pre><code>release deploy --env production
release status --watch</code></pre>
        <h3>Environments</h3>
        <table>
          <tr><th>Name</th><th>Region</th><th>Approval</th></tr>
          <tr><td>staging</td><td>eu-west</td><td>none</td></tr>
          <tr><td>production</td><td>eu-west, us-east</td><td>two reviewers</td></tr>
        </table>
        <h2>Rolling back</h2>
        <p>Rolling back is one command: <code>release rollback</code>. It restores the previous
           release within a minute. Caf&eacute; staff & night shifts are paged automatically.</p>
        <script>trackScroll("INLINE-SCRIPT")</script>
        <noscript>NOSCRIPT-TEXT</noscript>
      </article>
    </main>
  </div>
  <footer><p>FOOTER-TEXT Copyright 2024</p><nav>FOOTER-NAV</nav></footer>
</body>
</html>
"#;

const NOISE: &[&str] = &[
    "TRACKER-SCRIPT",
    "COOKIE-BANNER",
    "SITE-LOGO",
    "SEARCH-BOX",
    "NAV-LINK",
    "SIDEBAR-TITLE",
    "SIDEBAR-ITEM",
    "INLINE-SCRIPT",
    "NOSCRIPT-TEXT",
    "FOOTER-TEXT",
    "FOOTER-NAV",
    ".nav {",
];

/// Sentences of the content: each must lie inside some child.
const CONTENT: &[&str] = &[
    "Deploying &amp; rolling back",
    "This guide explains how a release reaches production.",
    "You need access to the release tool and the on-call rota.",
    "An account in the deploy group.",
    "Run the command below from the repository root.",
    "Rolling back is one command:",
    "paged automatically.",
];

fn texts<'a>(page: &'a str, out: &Chunked) -> Vec<&'a str> {
    out.children
        .iter()
        .map(|c| &page[c.span.start..c.span.end])
        .collect()
}

/// Whether every visible byte of `span` (not whitespace, not inside a tag) lies in some child.
fn covered(page: &str, out: &Chunked, span: Span) -> bool {
    let mut in_tag = false;
    page[span.start..span.end]
        .char_indices()
        .filter(|&(_, c)| {
            in_tag = (in_tag || c == '<') && c != '>';
            !in_tag && c != '>' && !c.is_whitespace()
        })
        .all(|(i, _)| {
            let at = span.start + i;
            out.children
                .iter()
                .any(|c| c.span.start <= at && at < c.span.end)
        })
}

fn check_page(page: &str, spec: &ChunkSpec) -> Chunked {
    let out = chunk_document(page, SourceFormat::Html, spec);
    if let Err(e) = check_spans_and_order(page, &out) {
        panic!("{spec:?}: {e}");
    }
    for (c, text) in out.children.iter().zip(texts(page, &out)) {
        for noise in NOISE {
            assert!(!text.contains(noise), "{spec:?}: {noise} in {text:?}");
        }
        let parent = &out.parents[c.parent];
        assert!(!page[parent.span.start..parent.span.end].contains("NAV-LINK"));
    }
    out
}

#[test]
fn documentation_page_keeps_only_its_content() {
    for spec in specs() {
        let out = check_page(PAGE, &spec);
        for sentence in CONTENT {
            let start = PAGE.find(sentence).unwrap_or(0);
            let span = Span {
                start,
                end: start + sentence.len(),
            };
            assert!(
                covered(PAGE, &out, span),
                "{spec:?}: {sentence:?} not covered"
            );
        }
    }
}

#[test]
fn section_paths_follow_the_headings_under_the_title() {
    let out = check_page(PAGE, &ChunkSpec::default());
    let path_of = |needle: &str| {
        out.children
            .iter()
            .find(|c| PAGE[c.span.start..c.span.end].contains(needle))
            .map(|c| c.section_path.join(" / "))
            .unwrap_or_default()
    };
    let title = "Deploy guide / Deploying & rolling back";
    assert_eq!(path_of("reaches production"), title);
    assert_eq!(
        path_of("on-call rota"),
        format!("{title} / Before you start")
    );
    assert_eq!(
        path_of("release status --watch"),
        format!("{title} / Deploying")
    );
    assert_eq!(
        path_of("two reviewers"),
        format!("{title} / Deploying / Environments")
    );
    assert_eq!(
        path_of("within a minute"),
        format!("{title} / Rolling back")
    );
}

#[test]
fn code_and_tables_stay_whole_and_embed_without_tags() {
    let spec = ChunkSpec {
        child: folio::chunk::ChildStrategy::Structure {
            target: 40,
            overlap: 0,
        },
        ..ChunkSpec::default()
    };
    let out = check_page(PAGE, &spec);
    let whole = |start: usize, end_tag: &str| {
        let end = PAGE[start..]
            .find(end_tag)
            .map_or(0, |i| start + i + end_tag.len());
        out.children
            .iter()
            .any(|c| c.span.start <= start && end <= c.span.end)
    };
    let code = PAGE.find("<pre><code>release deploy").unwrap();
    assert!(whole(code, "</code></pre>"), "the code block was cut");
    let table = PAGE.find("<table>").unwrap();
    let mut rows = PAGE[table..].match_indices("<tr>").map(|(i, _)| table + i);
    assert!(rows.all(|row| whole(row, "</tr>")), "a row was cut");
    let embed = EmbedTexts::new(PAGE, SourceFormat::Html);
    for c in &out.children {
        let text = embed.get(&c.section_path, c.span, 2);
        assert!(!text.contains('<') && !text.contains("&amp;"), "{text:?}");
    }
    // The table (84 visible characters) is longer than a child: cut between rows, every
    // row group embedded under the head row.
    let rows = out
        .children
        .iter()
        .find(|c| PAGE[c.span.start..c.span.end].contains("two reviewers"))
        .map(|c| embed.get(&c.section_path, c.span, 2))
        .unwrap_or_default();
    assert!(
        rows.ends_with("Name | Region | Approval\nproduction eu-west, us-east two reviewers"),
        "{rows:?}"
    );
    let whole = check_page(PAGE, &ChunkSpec::default());
    let rows = whole
        .children
        .iter()
        .map(|c| embed.get(&[], c.span, 0))
        .find(|t| t.contains("two reviewers"))
        .unwrap_or_default();
    assert!(
        rows.contains("Name Region Approval\nstaging eu-west none"),
        "{rows:?}"
    );
}

/// A saved GOV.UK-style rates page: a cookie banner, header, navigation, breadcrumbs and
/// footer around a `main` whose 40-row table (head row in `thead`, `th` cells) is longer
/// than a child, and a small table that fits.
fn rates_page() -> String {
    let mut rows = String::new();
    for i in 0..40u32 {
        rows.push_str(&format!(
            "      <tr><td>{}L</td><td>&pound;{},{:03}</td><td>{}%</td><td>Band {}</td></tr>\n",
            1257 + i * 10,
            12 + i,
            (i * 37) % 1000,
            [20, 40, 45][(i % 3) as usize],
            i + 1
        ));
    }
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Tax codes and rates - GOV.UK</title>
<script>window.GOVUK = {{ "TRACKER-SCRIPT": 1 }};</script></head>
<body>
<div class="govuk-cookie-banner" role="region"><p>COOKIE-BANNER Cookies on GOV.UK</p><button>Accept</button></div>
<header class="govuk-header"><a href="/">SITE-LOGO GOV.UK</a></header>
<nav class="govuk-breadcrumbs"><ol><li><a href="/">NAV-LINK Home</a></li><li><a href="/tax">NAV-LINK Income Tax</a></li></ol></nav>
<main class="govuk-main-wrapper" id="main-content">
  <h1>Tax codes and rates</h1>
  <p>Your tax code tells your employer how much tax to take from your pay.</p>
  <h2>Codes by band</h2>
  <p>Each code below gives the Personal Allowance and the rate it is taxed at.</p>
  <table class="govuk-table">
    <caption>Tax codes for 2024 to 2025</caption>
    <thead><tr><th scope="col">Tax code</th><th scope="col">Personal Allowance</th><th scope="col">Rate</th><th scope="col">Band</th></tr></thead>
    <tbody>
{rows}    </tbody>
  </table>
  <p>Codes ending in M or N are for the Marriage Allowance.</p>
  <h2>Emergency codes</h2>
  <table class="govuk-table">
    <tr><th>Code</th><th>When</th></tr>
    <tr><td>1257L W1</td><td>You started a new job</td></tr>
  </table>
</main>
<footer class="govuk-footer"><p>FOOTER-TEXT Crown copyright</p></footer>
</body></html>
"#
    )
}

#[test]
fn html_tables_longer_than_a_child_go_in_row_groups_under_their_head_row() {
    let page = rates_page();
    let head = "Tax code | Personal Allowance | Rate | Band";
    let table = Span {
        start: page.find("<table").unwrap(),
        end: page.find("</table>").unwrap() + "</table>".len(),
    };
    let tr = |from: usize| page[from..].find("<tr>").map(|i| from + i);
    let mut rows = Vec::new();
    let mut at = table.start;
    while let Some(start) = tr(at).filter(|&s| s < table.end) {
        let end = start + page[start..].find("</tr>").unwrap() + "</tr>".len();
        rows.push(Span { start, end });
        at = end;
    }
    assert_eq!(rows.len(), 41);
    let embed = EmbedTexts::new(&page, SourceFormat::Html);
    for target in [150, 300, 500, 1000] {
        let spec = ChunkSpec {
            child: folio::chunk::ChildStrategy::Structure { target, overlap: 0 },
            ..ChunkSpec::default()
        };
        let out = check_page(&page, &spec);
        let in_table: Vec<_> = out
            .children
            .iter()
            .filter(|c| c.span.start < rows[40].end && c.span.end > rows[0].start)
            .collect();
        assert!(in_table.len() > 1, "{target}: the table was not cut");
        for c in &in_table {
            // No table chunk without its head row: it opens the embedded text (after the
            // heading path), whether the chunk holds it or not.
            assert_eq!(
                c.section_path,
                [
                    "Tax codes and rates - GOV.UK",
                    "Tax codes and rates",
                    "Codes by band",
                    head
                ],
                "{target}"
            );
            let text = embed.get(&c.section_path, c.span, 2);
            let (prefix, body) = text.split_once("\n\n").unwrap_or_default();
            assert_eq!(prefix, "Tax codes and rates - GOV.UK > Tax codes and rates");
            assert!(
                body.starts_with(head) || body.starts_with("Tax code Personal Allowance Rate Band"),
                "{target}: {text:?}"
            );
            assert_eq!(text.matches("Personal Allowance").count(), 1, "{text:?}");
            assert!(!text.contains('<') && !text.contains("&pound;"), "{text:?}");
            // A row group holds table rows only.
            assert!(
                c.span.start >= rows[0].start && c.span.end <= table.end,
                "{target}"
            );
        }
        // Rows are never cut, and the chunks cover every row.
        for row in &rows {
            let holders = out
                .children
                .iter()
                .filter(|c| c.span.start <= row.start && row.end <= c.span.end)
                .count();
            assert_eq!(holders, 1, "{target}: row {:?}", &page[row.start..row.end]);
        }
        // The text after the table is back in its section; the small table stays whole.
        let after = page.find("Codes ending in M").unwrap();
        let c = out
            .children
            .iter()
            .find(|c| c.span.start <= after && after < c.span.end);
        assert_eq!(
            c.unwrap().section_path,
            [
                "Tax codes and rates - GOV.UK",
                "Tax codes and rates",
                "Codes by band"
            ],
            "{target}"
        );
        let small = page.find("<tr><th>Code</th>").unwrap();
        let c = out
            .children
            .iter()
            .find(|c| c.span.start <= small && small < c.span.end)
            .unwrap();
        assert!(page[c.span.start..c.span.end].contains("You started a new job</td></tr>"));
    }
    // With children longer than the table, it is kept whole.
    let spec = ChunkSpec {
        child: folio::chunk::ChildStrategy::Structure {
            target: 8000,
            overlap: 0,
        },
        ..ChunkSpec::default()
    };
    let out = check_page(&page, &spec);
    assert!(out
        .children
        .iter()
        .any(|c| c.span.start <= rows[0].start && rows[40].end <= c.span.end));
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}",
        Just("é".to_string()),
        Just("北京".to_string()),
        Just("&amp;".to_string()),
        Just("<b>bold</b>".to_string()),
        Just("<code>x = 1</code>".to_string()),
    ]
}

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..12).prop_map(|w| format!("{}.", w.join(" ")))
}

/// A block of content (marked so it can be found) or of chrome (which must vanish).
fn block() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        4 => sentence().prop_map(|s| (format!("<p>{s}</p>"), true)),
        2 => (1..7u8, sentence()).prop_map(|(l, s)| (format!("<h{l}>{s}</h{l}>"), true)),
        2 => prop::collection::vec(sentence(), 1..4).prop_map(|items| {
            let lis: String = items.iter().map(|i| format!("<li>{i}")).collect();
            (format!("<ul>{lis}</ul>"), true)
        }),
        1 => sentence().prop_map(|s| (format!("<pre>{s}\n  {s}</pre>"), true)),
        1 => sentence().prop_map(|s| (format!("<table><tr><th>h</th></tr><tr><td>{s}</td></tr></table>"), true)),
        1 => sentence().prop_map(|s| (format!("<div><section>{s}</section></div>"), true)),
        1 => Just(("<nav><a href='/'>CHROME</a></nav>".to_string(), false)),
        1 => Just(("<footer>CHROME</footer>".to_string(), false)),
        1 => Just(("<script>var a = '<p>CHROME</p>';</script>".to_string(), false)),
        1 => Just(("<div class='cookie-notice'>CHROME</div>".to_string(), false)),
        1 => Just(("<!-- a comment -->".to_string(), false)),
    ]
}

fn page() -> impl Strategy<Value = (String, bool)> {
    (prop::collection::vec(block(), 0..14), any::<bool>()).prop_map(|(blocks, main)| {
        let body: String = blocks.iter().map(|(b, _)| format!("{b}\n")).collect();
        let body = if main {
            format!("<header>CHROME</header><main>{body}</main><footer>CHROME</footer>")
        } else {
            body
        };
        (
            format!("<html><head><title>T</title></head><body>{body}</body></html>"),
            main,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn generated_pages_keep_the_contract((page, _) in page()) {
        for spec in specs() {
            let out = chunk_document(&page, SourceFormat::Html, &spec);
            prop_assert!(check_spans_and_order(&page, &out).is_ok(), "{:?}", check_spans_and_order(&page, &out));
            for c in &out.children {
                let text = &page[c.span.start..c.span.end];
                prop_assert!(!text.contains("CHROME"), "{spec:?}: {text:?}");
            }
            // Every paragraph's text lies in the chunks.
            let mut from = 0;
            while let Some(i) = page[from..].find("<p>") {
                let start = from + i + 3;
                let end = page[start..].find("</p>").map_or(start, |j| start + j);
                if !page[start..end].contains("CHROME") {
                    let span = Span { start, end };
                    prop_assert!(covered(&page, &out, span), "{spec:?}: {:?} not covered", &page[start..end]);
                }
                from = end;
            }
            prop_assert_eq!(chunk_document(&page, SourceFormat::Html, &spec), out);
        }
    }

    #[test]
    fn any_text_read_as_html_keeps_spans_valid(text in "(<[a-z/ =']{0,8}>?|[a-z &;.]{0,6}|\u{4e00}|é|\n){0,40}") {
        let checked = check_any_format(&text, SourceFormat::Html);
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }
}

/// A paragraph that ends in a colon introduces what follows: the HTML reader keeps it with
/// its list as the Markdown reader does, though tags stand between them, so the same page
/// cuts into the same pieces in both formats.
#[test]
fn a_line_ending_in_a_colon_stays_with_its_list_in_html_as_in_markdown() {
    let intro = "Some decisions need everyone's consent, for example:";
    let before = "You make all day to day decisions about the child, such as schooling.";
    let after = "If you cannot get consent, you can ask the court to decide instead.";
    let items = ["changing the child's surname", "taking the child abroad"];
    let markdown = format!(
        "{before}\n\n{intro}\n\n- {}\n- {}\n\n{after}\n",
        items[0], items[1]
    );
    let html = format!(
        "<p>{before}</p>\n<p>{intro}</p>\n<ul>\n<li>{}</li>\n<li>{}</li>\n</ul>\n<p>{after}</p>\n",
        items[0], items[1]
    );
    // A piece's words, without tags or list markers.
    let words = |piece: &str| -> String {
        let mut in_tag = false;
        let text: String = piece
            .chars()
            .filter(|&c| {
                in_tag = (in_tag || c == '<') && c != '>';
                !in_tag && c != '>'
            })
            .collect();
        let words = text.split_whitespace().filter(|w| *w != "-");
        words.collect::<Vec<_>>().join(" ")
    };
    for target in (60..=200).step_by(10) {
        let spec = ChunkSpec {
            child: folio::chunk::ChildStrategy::Structure { target, overlap: 0 },
            ..ChunkSpec::default()
        };
        let cut = |text: &str, format| {
            let out = chunk_document(text, format, &spec);
            texts(text, &out).into_iter().map(words).collect::<Vec<_>>()
        };
        let from_markdown = cut(&markdown, SourceFormat::Markdown);
        assert_eq!(cut(&html, SourceFormat::Html), from_markdown, "at {target}");
        // Three pieces (before, the intro with its list, after) where two do not fit.
        if (110..=120).contains(&target) {
            let with_intro = from_markdown.iter().find(|t| t.contains(intro)).unwrap();
            assert!(
                with_intro.contains(items[1]),
                "at {target}: {from_markdown:#?}"
            );
        }
    }
}

/// What a page looks like around its content when a generator made it: a permalink glyph
/// in each heading, a table of contents inside the content, a stray end tag.
const GENERATED: &str = r##"<html><head><title>Tides</title></head><body>
<div class="body" role="main">
<section id="tides"><h1>Tides<a class="headerlink" href="#tides" title="Link">¶</a></h1>
<div class="toctree-wrapper"><ul>
<li><a href="setup.html">Setting up</a></li>
<li><a href="tables.html">Tide tables</a><ul><li><a href="tables.html#spring">Spring tides</a></li></ul></li>
<li><a href="alerts.html">Low-water alerts</a></li>
</ul></div>
<p>Spring tides come two days after a full moon.</p></span></em>
<ul><li>Keep the <a href="gauge.html">gauge</a> dry and the log on paper.</li>
<li>Calibrate at slack water.</li><li>Report <a href="x.html">faults</a> at once.</li></ul>
</section></div></body></html>"##;

#[test]
fn generated_pages_lose_permalinks_link_lists_and_stray_end_tags() {
    let visible = folio::chunk::visible_text_of(GENERATED, SourceFormat::Html);
    assert!(
        visible.contains("Spring tides come two days after a full moon."),
        "{visible}"
    );
    assert!(
        visible.contains("Keep the gauge dry"),
        "a list with links and words stays"
    );
    assert!(!visible.contains('¶'), "{visible}");
    assert!(
        !visible.contains("Setting up"),
        "a list of links only is navigation: {visible}"
    );
    assert!(
        !visible.contains("</span>") && !visible.contains("</em>"),
        "{visible}"
    );
    let out = chunk_document(GENERATED, SourceFormat::Html, &ChunkSpec::default());
    let first = out.children.first().expect("a child");
    assert_eq!(first.section_path.last().map(String::as_str), Some("Tides"));
    for child in &out.children {
        let text = EmbedTexts::new(GENERATED, SourceFormat::Html).body(child.span);
        assert!(!text.contains('¶') && !text.contains("</span>"), "{text}");
    }
}

#[test]
fn a_page_asking_not_to_be_indexed_has_no_chunks() {
    let page = r#"<html><head><meta name="robots" content="noindex"></head>
        <body><main><h1>Print</h1><p>Every chapter again.</p></main></body></html>"#;
    let out = chunk_document(page, SourceFormat::Html, &ChunkSpec::default());
    assert!(out.children.is_empty() && out.parents.is_empty());
    assert_eq!(folio::chunk::visible_text_of(page, SourceFormat::Html), "");
}

#[test]
fn a_child_starting_right_after_a_tag_is_sized_without_overflow() {
    // Markup before a short child outnumbered its characters: a subtraction overflowed.
    for page in ["<p>. b</p>", "<div>&#169;. &amp; <a href=\"x\">A</a>"] {
        let out = chunk_document(page, SourceFormat::Html, &ChunkSpec::default());
        assert!(!out.children.is_empty(), "{page}");
    }
}

#[test]
fn late_chunking_reads_the_visible_text_of_a_page() {
    let out = chunk_document(PAGE, SourceFormat::Html, &ChunkSpec::default());
    let spans: Vec<(usize, usize)> = out
        .children
        .iter()
        .map(|c| (c.span.start, c.span.end))
        .collect();
    let (input, placed) = folio::chunk::late_input(PAGE, SourceFormat::Html, &spans);
    assert!(
        !input.contains('<') && !input.contains("TRACKER-SCRIPT"),
        "{input}"
    );
    assert_eq!(placed.len(), spans.len());
    let reader = EmbedTexts::new(PAGE, SourceFormat::Html);
    for (&(start, end), &(from, to)) in spans.iter().zip(&placed) {
        assert_eq!(&input[from..to], reader.body(Span { start, end }));
    }
    let markdown = "# A\n\nSome text.\n";
    let (same, at) = folio::chunk::late_input(markdown, SourceFormat::Markdown, &[(0, 3)]);
    assert_eq!((same.as_ref(), at), (markdown, vec![(0, 3)]));
}
