//! An independent checker of the chunking contract, shared by the chunk tests and the fuzz
//! target. It re-derives code blocks, tables, front matter and top-level headings from
//! pulldown-cmark itself rather than trusting the chunker's own reading.

use folio::chunk::tree::BlockKind;
use folio::chunk::{
    chunk_document, embed_texts, ChildPiece, ChildStrategy, ChunkSpec, Chunked, EmbedTexts,
    ParentStrategy, SizeUnit, SourceFormat, Span,
};
use folio::tokens;
use pulldown_cmark::{Event, Options, Parser, Tag};

/// What pulldown-cmark says about a Markdown text.
#[derive(Default)]
pub struct MarkdownFacts {
    /// Front matter at the very start, dropped by the chunker.
    pub front_matter: Option<Span>,
    /// Code blocks and tables, trimmed of whitespace.
    pub blocks: Vec<Span>,
    /// Tables outside any container (trimmed), each with its head row (up to the first
    /// row) and rows: cut into row groups when longer than a child.
    pub tables: Vec<(Span, Vec<Span>)>,
    /// Headings that are not inside a container.
    pub headings: Vec<Span>,
    /// Their levels (1 to 6).
    pub heading_levels: Vec<usize>,
    /// Per byte, whether sizes in characters count it (empty: all of them). Markdown syntax
    /// is not counted: a non-whitespace character outside every piece of content pulldown-cmark
    /// reports (text, code, HTML, breaks, rules), such as `##`, `-`, `*`, `|` or a link target.
    pub counted: Vec<bool>,
}

impl MarkdownFacts {
    /// The size of `text[start..end]` in `unit` as the chunker counts it: characters with
    /// Markdown syntax left out, or (any token unit) every token of the estimate, since the
    /// model reads the syntax.
    pub fn size(&self, text: &str, start: usize, end: usize, unit: SizeUnit) -> usize {
        let counted = |at: usize| self.counted.get(start + at).is_none_or(|&c| c);
        match unit {
            SizeUnit::Chars => text[start..end]
                .char_indices()
                .filter(|&(i, _)| counted(i))
                .count(),
            _ => tokens::count(&text[start..end]),
        }
    }
}

pub fn markdown_facts(text: &str) -> MarkdownFacts {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut facts = MarkdownFacts::default();
    let mut depth = 0usize;
    let mut top_table = false;
    let mut content = vec![false; text.len()];
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        if !matches!(event, Event::Start(_) | Event::End(_)) {
            content[range.clone()].fill(true);
        }
        match event {
            Event::Start(tag) => {
                match tag {
                    Tag::MetadataBlock(_) if text[..range.start].trim().is_empty() => {
                        facts.front_matter = Some(Span {
                            start: 0,
                            end: range.end,
                        });
                    }
                    Tag::CodeBlock(_) | Tag::Table(_) => {
                        let span = trimmed(text, span_of(&range));
                        facts.blocks.extend(span);
                        if let (Tag::Table(_), 0, Some(span)) = (&tag, depth, span) {
                            facts.tables.push((span, Vec::new()));
                            top_table = true;
                        }
                    }
                    Tag::TableHead | Tag::TableRow if top_table => {
                        if let (Some(row), Some((_, rows))) =
                            (trimmed(text, span_of(&range)), facts.tables.last_mut())
                        {
                            // The head row reaches to the first row (over the delimiter row).
                            if let [head] = rows.as_mut_slice() {
                                head.end = text[..row.start].trim_end().len();
                            }
                            rows.push(row);
                        }
                    }
                    Tag::Heading { level, .. } if depth == 0 => {
                        facts.headings.push(Span {
                            start: range.start,
                            end: range.end,
                        });
                        facts.heading_levels.push(level as usize);
                    }
                    _ => {}
                }
                depth += 1;
            }
            Event::End(pulldown_cmark::TagEnd::Table) => {
                depth -= 1;
                top_table = false;
            }
            Event::End(_) => depth -= 1,
            _ => {}
        }
    }
    facts.counted = content;
    for (i, c) in text.char_indices() {
        facts.counted[i] |= c.is_whitespace();
    }
    facts
}

fn span_of(range: &std::ops::Range<usize>) -> Span {
    Span {
        start: range.start,
        end: range.end,
    }
}

/// Extracted PDF text is plain text with `#` heading lines, page breaks and tables of
/// tab-separated rows; the tables are the ones its reader finds (`tests/chunking/chunk_pdf.rs` checks
/// which those are), so the chunker is held to keeping their rows whole.
fn pdf_facts(text: &str) -> MarkdownFacts {
    let mut facts = MarkdownFacts::default();
    for block in folio::chunk::readers::pdf::read(text).walk() {
        if let (BlockKind::Table { .. }, Some(span)) = (&block.kind, trimmed(text, block.span)) {
            let rows = block
                .children
                .iter()
                .filter(|row| matches!(row.kind, BlockKind::Row))
                .filter_map(|row| trimmed(text, row.span))
                .collect();
            facts.blocks.push(span);
            facts.tables.push((span, rows));
        }
    }
    facts
}

fn trimmed(text: &str, span: Span) -> Option<Span> {
    let s = &text[span.start..span.end];
    let start = span.start + (s.len() - s.trim_start().len());
    let end = span.start + s.trim_end().len();
    (start < end).then_some(Span { start, end })
}

fn chars(text: &str, start: usize, end: usize) -> usize {
    text[start..end].chars().count()
}

pub fn check_span(text: &str, span: Span, what: &str) -> Result<(), String> {
    let ok = span.start < span.end
        && span.end <= text.len()
        && text.is_char_boundary(span.start)
        && text.is_char_boundary(span.end);
    if !ok {
        return Err(format!(
            "{what} {span:?} is empty, out of range or not on char boundaries"
        ));
    }
    if trimmed(text, span) != Some(span) {
        return Err(format!(
            "{what} {span:?} is not trimmed: {:?}",
            &text[span.start..span.end]
        ));
    }
    Ok(())
}

/// Chunks `text` and checks the result; also checks that a second run gives the same.
pub fn chunk_and_check(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
) -> Result<Chunked, String> {
    let out = chunk_document(text, format, spec);
    check(text, format, spec, &out)?;
    if chunk_document(text, format, spec) != out {
        return Err("two runs differ".into());
    }
    Ok(out)
}

/// Checks every invariant of the chunking contract on `out`.
pub fn check(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
    out: &Chunked,
) -> Result<(), String> {
    let mut facts = match format {
        SourceFormat::Markdown => markdown_facts(text),
        SourceFormat::Pdf => pdf_facts(text),
        // Source code has no block that is never cut: every piece falls back to lines.
        SourceFormat::Text
        | SourceFormat::Rust
        | SourceFormat::Python
        | SourceFormat::JavaScript
        | SourceFormat::TypeScript
        | SourceFormat::Tsx
        | SourceFormat::Go => MarkdownFacts::default(),
        other => return Err(format!("{other:?} has checks of its own")),
    };
    // A table longer than a structure child is cut between rows: its rows are the blocks.
    let mut cut_tables = Vec::new();
    if let Some((target, _, unit)) = spec.child.structure() {
        for (table, rows) in &facts.tables {
            if facts.size(text, table.start, table.end, unit) > target {
                facts.blocks.retain(|b| b != table);
                facts.blocks.extend(rows);
                cut_tables.push(*table);
            }
        }
        facts.blocks.sort_by_key(|b| b.start);
    }
    check_spans_and_order(text, out)?;
    check_parents(text, spec, out, &facts)?;
    check_coverage(text, spec, out, &facts)?;
    let long = check_sizes(text, format, spec, out, &facts)?;
    if spec.child.structure().is_some() {
        check_structure(text, out, &facts)?;
        let tree = SectionTree::new(text, &facts, &cut_tables);
        for (c, long) in out.children.iter().zip(long) {
            tree.check_packed(text, long, c)?;
        }
    }
    Ok(())
}

pub fn check_spans_and_order(text: &str, out: &Chunked) -> Result<(), String> {
    for p in &out.parents {
        check_span(text, p.span, "parent")?;
    }
    for c in &out.children {
        check_span(text, c.span, "child")?;
        let parent = out
            .parents
            .get(c.parent)
            .ok_or(format!("child {:?} has no parent {}", c.span, c.parent))?;
        if c.span.start < parent.span.start || c.span.end > parent.span.end {
            return Err(format!(
                "child {:?} outside its parent {:?}",
                c.span, parent.span
            ));
        }
    }
    for pair in out.children.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.span.start <= a.span.start || b.span.end <= a.span.end || b.parent < a.parent {
            return Err(format!(
                "children out of order: {:?} then {:?}",
                a.span, b.span
            ));
        }
    }
    Ok(())
}

fn check_parents(
    text: &str,
    spec: &ChunkSpec,
    out: &Chunked,
    facts: &MarkdownFacts,
) -> Result<(), String> {
    let max = match spec.parent {
        ParentStrategy::Child => {
            let same = out.parents.len() == out.children.len()
                && out
                    .children
                    .iter()
                    .enumerate()
                    .all(|(i, c)| c.parent == i && out.parents[i].span == c.span);
            return if same {
                Ok(())
            } else {
                Err("with Child parents, each child must be its own parent".into())
            };
        }
        _ => spec.parent.size().map_or(0, |(max, _)| max),
    };
    let unit = spec.parent.size().map_or(SizeUnit::Chars, |(_, unit)| unit);
    for pair in out.parents.windows(2) {
        if pair[1].span.start < pair[0].span.end {
            return Err(format!(
                "parents overlap: {:?} and {:?}",
                pair[0].span, pair[1].span
            ));
        }
    }
    for p in &out.parents {
        let holds_block = facts
            .blocks
            .iter()
            .any(|b| p.span.start <= b.start && b.end <= p.span.end);
        if facts.size(text, p.span.start, p.span.end, unit) > max.max(1) && !holds_block {
            return Err(format!(
                "parent {:?} longer than {max} {unit:?} without a code block or table",
                p.span
            ));
        }
    }
    Ok(())
}

/// Every non-whitespace byte outside the front matter is covered (exactly once without
/// overlap); nothing in the front matter is; consecutive children share at most the overlap.
fn check_coverage(
    text: &str,
    spec: &ChunkSpec,
    out: &Chunked,
    facts: &MarkdownFacts,
) -> Result<(), String> {
    let mut count = vec![0u32; text.len()];
    for c in &out.children {
        for n in &mut count[c.span.start..c.span.end] {
            *n += 1;
        }
    }
    let overlap = spec.child.overlap();
    let skip = facts.front_matter.map_or(0, |f| f.end);
    for (i, c) in text.char_indices() {
        let n = count[i];
        let wanted = if i < skip || c.is_whitespace() {
            i >= skip || n == 0
        } else if overlap == 0 {
            n == 1
        } else {
            n >= 1
        };
        if !wanted {
            return Err(format!("byte {i} ({c:?}) covered {n} times"));
        }
    }
    for pair in out.children.windows(2) {
        let (a, b) = (pair[0].span, pair[1].span);
        if b.start >= a.end {
            continue;
        }
        // Fixed windows count every character; structure-aware children as sizes do.
        let shared = match spec.child {
            ChildStrategy::Fixed { unit, .. } => size(text, b.start, a.end, unit),
            _ => facts.size(text, b.start, a.end, spec.child.unit()),
        };
        if shared > overlap {
            return Err(format!(
                "children {a:?} and {b:?} share {shared} > {overlap}"
            ));
        }
    }
    Ok(())
}

/// The size of `text[start..end]` in `unit`, every character counted: characters, or (any
/// token unit, as `chunk_document` counts them) the estimate.
fn size(text: &str, start: usize, end: usize, unit: SizeUnit) -> usize {
    match unit {
        SizeUnit::Chars => chars(text, start, end),
        _ => tokens::count(&text[start..end]),
    }
}

/// Checks every child's size; says, per child, whether it is longer than a structure-aware
/// child may be (in tokens: its embedded text, heading prefix included), unless flagged.
fn check_sizes(
    text: &str,
    format: SourceFormat,
    spec: &ChunkSpec,
    out: &Chunked,
    facts: &MarkdownFacts,
) -> Result<Vec<bool>, String> {
    let embedded = embed_texts(text, format, out, spec);
    let texts = EmbedTexts::new(text, format);
    let mut longs = Vec::with_capacity(out.children.len());
    for (c, embedded) in out.children.iter().zip(&embedded) {
        let slice = &text[c.span.start..c.span.end];
        match spec.child.structure() {
            Some((target, _, SizeUnit::Chars)) => {
                let long =
                    facts.size(text, c.span.start, c.span.end, SizeUnit::Chars) > target.max(1);
                if long != c.oversized {
                    return Err(format!(
                        "child {:?} oversized flag {} but long {long}",
                        c.span, c.oversized
                    ));
                }
                check_oversized(c, slice, facts)?;
                longs.push(long);
            }
            Some((target, ..)) => {
                // The packer counts the document's tokens, a child is checked alone: one
                // longer than the target must be flagged, a flagged one may fit after all.
                // The embedded text is at most the target, or (a heading prefix longer
                // than half the target) the child's own text at most half of it.
                let (all, own) = (tokens::count(embedded), tokens::count(&texts.body(c.span)));
                let t = target.max(1);
                let long = all > t && own > t - t / 2;
                if long && !c.oversized {
                    return Err(format!(
                        "child {:?} has {all} tokens > {target} ({own} its own) and no flag: \
                         {embedded:?}",
                        c.span,
                    ));
                }
                // One token (or character) cannot be cut.
                if long && tokens::count(slice) > 1 && slice.chars().count() > 1 {
                    check_oversized(c, slice, facts)?;
                }
                longs.push(long);
            }
            None => {
                if let ChildStrategy::Fixed { size, unit, .. } = spec.child {
                    let n = self::size(text, c.span.start, c.span.end, unit);
                    if n > size.max(1) || c.oversized {
                        return Err(format!("fixed child {:?} has {n} units > {size}", c.span));
                    }
                }
                longs.push(false);
            }
        }
    }
    Ok(longs)
}

/// An oversized child holds a code block or table.
fn check_oversized(c: &ChildPiece, slice: &str, facts: &MarkdownFacts) -> Result<(), String> {
    let holds_block = facts
        .blocks
        .iter()
        .any(|b| c.span.start <= b.start && b.end <= c.span.end);
    if c.oversized && !holds_block {
        return Err(format!(
            "oversized child {:?} holds no code block or table: {slice:?}",
            c.span
        ));
    }
    Ok(())
}

/// Structure-aware children never cut a code block or table.
fn check_structure(text: &str, out: &Chunked, facts: &MarkdownFacts) -> Result<(), String> {
    let _ = text;
    for c in &out.children {
        for b in &facts.blocks {
            let disjoint = c.span.end <= b.start || b.end <= c.span.start;
            let inside = c.span.start <= b.start && b.end <= c.span.end;
            if !disjoint && !inside {
                return Err(format!("child {:?} cuts block {b:?}", c.span));
            }
        }
    }
    Ok(())
}

/// The heading tree of a Markdown text as pulldown-cmark gives it, with the tables cut into
/// row groups opening a section below everything (ended by the table's end).
pub struct SectionTree<'f> {
    facts: &'f MarkdownFacts,
    /// `(position, level)` where a section opens (a heading, a cut table's start: level
    /// `usize::MAX`), or, with `None`, where the cut table's section ends; in order.
    events: Vec<(usize, Option<usize>)>,
    /// Where sections start: the first content, every heading, the text after a cut table.
    starts: Vec<usize>,
    /// Where sections end (trimmed): before every heading or cut table, the last content.
    ends: Vec<usize>,
}

impl<'f> SectionTree<'f> {
    pub fn new(text: &str, facts: &'f MarkdownFacts, cut_tables: &[Span]) -> SectionTree<'f> {
        let mut events: Vec<(usize, Option<usize>)> = facts
            .headings
            .iter()
            .zip(&facts.heading_levels)
            .map(|(h, &level)| (h.start, Some(level)))
            .collect();
        let content = facts.front_matter.map_or(0, |f| f.end);
        let first = text.len() - text[content..].trim_start().len();
        let mut starts: Vec<usize> = facts.headings.iter().map(|h| h.start).collect();
        starts.push(first);
        let mut ends = vec![text.trim_end().len()];
        for t in cut_tables {
            events.push((t.start, Some(usize::MAX)));
            events.push((t.end, None));
            starts.push(text.len() - text[t.end..].trim_start().len());
        }
        for &(pos, _) in &events {
            ends.push(text[..pos].trim_end().len());
        }
        events.sort_by_key(|&(pos, level)| (pos, level.is_some()));
        SectionTree {
            facts,
            events,
            starts,
            ends,
        }
    }

    /// The stack of open sections (event indices) after the events before `pos`, and the
    /// least depth at which the events from `from` (up to `pos`) opened one.
    fn stack(&self, pos: usize, from: usize) -> (Vec<usize>, Option<usize>) {
        let mut stack: Vec<(usize, usize)> = Vec::new();
        let mut opened = None;
        for (i, &(at, level)) in self.events.iter().enumerate() {
            if at >= pos {
                break;
            }
            let level = level.unwrap_or(usize::MAX);
            while stack.last().is_some_and(|&(l, _)| l >= level) {
                stack.pop();
            }
            if self.events[i].1.is_some() {
                stack.push((level, i));
                if at >= from {
                    opened = Some(opened.map_or(stack.len(), |d: usize| d.min(stack.len())));
                }
            }
        }
        (stack.into_iter().map(|(_, i)| i).collect(), opened)
    }

    /// A child that crosses a heading (one not right at its start, under headings only)
    /// holds whole sections of one parent: it starts and ends at section bounds, is not
    /// longer than the target, holds the parent's own text and whole subsections of it
    /// only (it neither starts inside a subsection nor ends inside one that goes on after
    /// it), and its path is the parent's (as long).
    /// `long`: the child is longer than the target (see `check_sizes`).
    pub fn check_packed(&self, text: &str, long: bool, c: &ChildPiece) -> Result<(), String> {
        let span = c.span;
        let inner: Vec<usize> = self
            .facts
            .headings
            .iter()
            .map(|h| h.start)
            .filter(|&h| span.start < h && h < span.end)
            .filter(|&h| !only_headings(text, span.start, h, &self.facts.headings))
            .collect();
        let Some(&first_inner) = inner.first() else {
            return Ok(());
        };
        let fail = |why: &str| {
            Err(format!(
                "packed child {span:?} {why}: {:?}",
                &text[span.start..span.end]
            ))
        };
        if long {
            return fail("is longer than the target");
        }
        if !self.starts.contains(&span.start) || !self.ends.contains(&span.end) {
            return fail("does not hold whole sections");
        }
        // The first member: the sections up to the first inner heading (leading headings
        // joined), then one member per inner heading.
        let (first, opens) = self.stack(first_inner, span.start);
        let mut paths = vec![first];
        paths.extend(inner.iter().map(|&h| self.stack(h + 1, h).0));
        let common = paths
            .iter()
            .map(|p| p.iter().zip(&paths[0]).take_while(|(a, b)| a == b).count())
            .min()
            .unwrap_or(0);
        if !(paths[0].len() == common || opens.is_some_and(|d| d <= common + 1)) {
            return fail("starts inside a subsection");
        }
        // The next section (with the headings right above it that join it) must not open
        // below one of the child's subsections.
        let mut next = self
            .events
            .iter()
            .filter(|&&(at, l)| at >= span.end && l.is_some());
        if let Some(&(mut at, _)) = next.next() {
            let from = at;
            for &(following, _) in next {
                if !only_headings(text, at, following, &self.facts.headings) {
                    break;
                }
                at = following;
            }
            if self.stack(at + 1, from).1.is_some_and(|d| d > common + 1) {
                return fail("ends inside a subsection that goes on after it");
            }
        }
        if c.section_path.len() != common {
            return fail(&format!("has path {:?}, not its parent's", c.section_path));
        }
        Ok(())
    }
}

/// Whether `text[start..end]` holds nothing but heading text and whitespace.
fn only_headings(text: &str, start: usize, end: usize, headings: &[Span]) -> bool {
    let mut at = start;
    for h in headings.iter().filter(|h| h.end > start && h.start < end) {
        if h.start > at && !text[at..h.start].trim().is_empty() {
            return false;
        }
        at = at.max(h.end);
    }
    at >= end || text[at..end].trim().is_empty()
}

/// A spread of specs that exercise every strategy, tiny sizes included.
pub fn specs() -> Vec<ChunkSpec> {
    let spec = |child, parent| ChunkSpec {
        child,
        parent,
        heading_depth: 2,
        ..ChunkSpec::default()
    };
    vec![
        ChunkSpec::default(),
        spec(
            ChildStrategy::Structure {
                target: 40,
                overlap: 0,
            },
            ParentStrategy::Section { max: 120 },
        ),
        spec(
            ChildStrategy::Structure {
                target: 30,
                overlap: 10,
            },
            ParentStrategy::Fixed { size: 100 },
        ),
        spec(
            ChildStrategy::Structure {
                target: 1,
                overlap: 0,
            },
            ParentStrategy::Child,
        ),
        spec(
            ChildStrategy::Structure {
                target: 50,
                overlap: 20,
            },
            ParentStrategy::Child,
        ),
        spec(
            ChildStrategy::Fixed {
                size: 16,
                overlap: 4,
                unit: SizeUnit::Chars,
            },
            ParentStrategy::Section { max: 60 },
        ),
        spec(
            ChildStrategy::Fixed {
                size: 5,
                overlap: 2,
                unit: SizeUnit::Tokens,
            },
            ParentStrategy::Child,
        ),
    ]
}

/// The format-independent part of the contract, for any reader: under every spec, spans
/// valid, trimmed and ordered, the same chunks from a second run, and embedded texts made
/// without a panic.
pub fn check_any_format(text: &str, format: SourceFormat) -> Result<(), String> {
    let embed = folio::chunk::EmbedTexts::new(text, format);
    for spec in specs() {
        let out = chunk_document(text, format, &spec);
        check_spans_and_order(text, &out).map_err(|e| format!("{format:?} {spec:?}: {e}"))?;
        if chunk_document(text, format, &spec) != out {
            return Err(format!("{format:?} {spec:?}: two runs differ"));
        }
        for c in &out.children {
            let _ = embed.get(&c.section_path, c.span, spec.heading_depth);
        }
    }
    Ok(())
}
