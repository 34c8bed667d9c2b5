//! A reader's block tree laid out: each block's bounds and zones on a [`Builder`], then the
//! running-text bounds (sentences, clauses, words) everywhere cuts are allowed.

use super::layout::{trim, Builder, Layout, Strength};
use super::prose::{self, CODE, MARKDOWN, PLAIN};
use super::readers;
use super::tree::{Block, BlockKind, Markup, Prose, Tree};

/// The layout of `text` as its reader's `tree` describes it, every table kept whole.
#[cfg(test)]
pub(crate) fn from_tree<'a>(text: &'a str, tree: &Tree) -> Layout<'a> {
    from_tree_cut(text, tree, usize::MAX, None)
}

/// The layout of `text` as its reader's `tree` describes it, sized in characters, or in the
/// tokens that start at `units` (see [`Builder::units`]). A table that carries its head
/// row and is longer than `table_limit` is cut between rows instead of kept
/// whole, under a section of its own that the head row opens: every row group then has the
/// head row in its section path (and so in its embedded text), as a CSV file's row groups
/// have their header.
pub(crate) fn from_tree_cut<'a>(
    text: &'a str,
    tree: &Tree,
    table_limit: usize,
    units: Option<Vec<usize>>,
) -> Layout<'a> {
    let mut b = Builder::new(text);
    for span in &tree.skipped {
        b.skip(*span);
    }
    for m in &tree.markup {
        b.markup(*m);
    }
    for span in &tree.syntax {
        b.syntax(*span);
    }
    if let Some(starts) = units {
        b.units(starts);
    }
    for span in &tree.keep {
        b.soft(span.start, span.end);
    }
    for block in &tree.blocks {
        add_block(&mut b, tree, block, true, false, table_limit);
    }
    let breaks = match tree.prose {
        Prose::Plain => PLAIN,
        Prose::Markup => MARKDOWN,
        Prose::Code => CODE,
    };
    // Running-text bounds everywhere except inside code blocks, tables and markup.
    let mut from = 0;
    for z in b.hard_zones() {
        if z.start > from {
            prose::scan(text, from, z.start, breaks, &mut b);
        }
        from = from.max(z.end);
    }
    prose::scan(text, from, text.len(), breaks, &mut b);
    cap_after_colons(text, &tree.markup, &mut b);
    b.build()
}

/// Text ending in a colon introduces what follows ("for example:" and a list), as the
/// prose scan says for a colon at a line end; between markup (`…example:</p>\n<ul><li>`) the
/// bounds up to the next visible character are no stronger than a line break either.
fn cap_after_colons(text: &str, markup: &[Markup], b: &mut Builder<'_>) {
    for (i, m) in markup.iter().enumerate() {
        let before = text[..m.span.start].trim_end_matches(prose::is_closer);
        if !before.ends_with([':', '：']) {
            continue;
        }
        // The next visible character: past whitespace and the markup runs that follow.
        let mut to = m.span.end;
        for next in &markup[i + 1..] {
            if !text[to..next.span.start].trim().is_empty() {
                break;
            }
            to = next.span.end;
        }
        let to = to + (text[to..].len() - text[to..].trim_start().len());
        b.cap_range(before.len(), to, Strength::Line);
    }
}

/// The bounds and zones of one block and the blocks inside it. `top`: not inside another
/// block (so a heading opens a section); `in_list`: inside a list (so block bounds are only
/// as strong as item bounds, and a list's items stay together).
fn add_block(
    b: &mut Builder<'_>,
    tree: &Tree,
    block: &Block,
    top: bool,
    in_list: bool,
    table_limit: usize,
) {
    let (start, end) = (block.span.start, block.span.end);
    let bound = if in_list {
        Strength::Item
    } else {
        Strength::Block
    };
    let mut inner_list = in_list;
    match &block.kind {
        BlockKind::Heading { level, title } => {
            // In plain text a heading is a line: the line break after it is its bound.
            if tree.prose == Prose::Markup {
                b.cut(start, bound);
                b.cut(end, bound);
            }
            b.glue(start, end);
            if top {
                b.heading(start, end, *level, title.clone());
            }
        }
        // A head row inside the table heads the row groups of a table too long to keep whole
        // (deeper than any heading, so it ends at the table's end).
        BlockKind::Table { header: Some(head) }
            if top
                && head.start >= start
                && head.end <= end
                // Trimmed (a reader's table span may end with the line break after it),
                // markup not counted.
                && trim(b.text, start, end)
                    .is_some_and(|t| b.visible_size(t.start, t.end) > table_limit) =>
        {
            b.cut(start, bound);
            let title = readers::head_title(b.text, tree, *head);
            b.heading(head.start, head.end, usize::MAX, title);
            // The head row stays with what follows it up to the first row (Markdown's
            // delimiter row).
            let first_row = block.children.get(1).map_or(head.end, |row| row.span.start);
            b.hard(head.start, first_row);
            b.end_sections(end, usize::MAX);
        }
        BlockKind::Table { header: Some(head) } if head.start >= start => {
            b.cut(start, bound);
            b.cut(end, bound);
            b.hard(start, end);
        }
        BlockKind::Code | BlockKind::Table { header: None } => {
            b.cut(start, bound);
            b.cut(end, bound);
            b.hard(start, end);
        }
        BlockKind::Item => {
            b.cut(start, Strength::Item);
            b.cut(end, Strength::Item);
            glue_marker(b, start, end);
        }
        BlockKind::Quote => {
            b.cut(start, bound);
            b.cut(end, bound);
            glue_marker(b, start, end);
        }
        BlockKind::List => {
            b.cut(start, bound);
            b.cut(end, bound);
            inner_list = true;
        }
        BlockKind::Row | BlockKind::Turn { .. } => {
            b.cut(start, Strength::Item);
            b.cut(end, Strength::Item);
            b.hard(start, end);
        }
        BlockKind::Table { header: Some(_) } | BlockKind::Paragraph | BlockKind::Rule => {
            b.cut(start, bound);
            b.cut(end, bound);
        }
        BlockKind::PageBreak { .. } => b.cut(start, Strength::Line),
        BlockKind::Symbol { .. } | BlockKind::Statement | BlockKind::Import => {
            let open = top.then_some((start, 1));
            add_code(b, block, open, Strength::Block, table_limit);
            // What follows a top-level item (loose statements, comments) is in no item.
            if top && matches!(block.kind, BlockKind::Symbol { .. }) {
                b.end_sections(end, 1);
            }
            return;
        }
    }
    for child in &block.children {
        add_block(b, tree, child, false, inner_list, table_limit);
    }
}

/// The bounds and zones of a piece of source code and of the code inside it. Every piece is
/// a soft zone, so it is cut only when it alone is longer than a child, and then at its
/// strongest inner bounds first (its statements, then theirs, then lines). `open`: where and
/// at which level an item opens its section (top-level items, and the inner items of an
/// item longer than `limit`); `bound`: the strength of the cuts at its ends.
fn add_code(
    b: &mut Builder<'_>,
    block: &Block,
    open: Option<(usize, usize)>,
    bound: Strength,
    limit: usize,
) {
    let (start, end) = (block.span.start, block.span.end);
    b.cut(start, bound);
    b.cut(end, bound);
    b.soft(start, end);
    if let BlockKind::Symbol { signature, .. } = &block.kind {
        // Too long with the comments above it, an item is first cut from them.
        if signature.start > start {
            b.cut(signature.start, Strength::Section);
        }
    }
    let mut inner_level = None;
    if let (BlockKind::Symbol { title, .. }, Some((at, level))) = (&block.kind, open) {
        b.heading(at, at, level, title.clone());
        if b.visible_size(start, end) > limit {
            inner_level = Some(level + 1);
        }
    }
    // The statements of an item's body are cut between before those of their own bodies,
    // and an item inside a statement is cut from it before it is cut itself.
    let bound = match (&block.kind, open) {
        (_, Some(_)) => Strength::Block,
        (BlockKind::Symbol { .. }, None) => Strength::Line,
        _ => Strength::Item,
    };
    let Some(level) = inner_level else {
        for child in &block.children {
            add_code(b, child, None, bound, limit);
        }
        return;
    };
    let is_symbol = |b: &Block| matches!(b.kind, BlockKind::Symbol { .. });
    let symbols: Vec<&Block> = block.children.iter().filter(|c| is_symbol(c)).collect();
    let mut seen = 0;
    for child in &block.children {
        if !is_symbol(child) {
            add_code(b, child, None, bound, limit);
            continue;
        }
        let first = seen == 0;
        seen += 1;
        let next = symbols.get(seen).map_or(end, |s| s.span.start);
        // The declaration above the first inner item (`impl Store {`, a docstring) goes
        // with it when both fit a child, rather than being a chunk of its own.
        let glued = first && b.visible_size(start, child.span.end) <= limit;
        let at = if glued { start } else { child.span.start };
        add_code(b, child, Some((at, level)), bound, limit);
        // What follows up to the next inner item (fields, statements) belongs to the outer
        // item again; closing brackets stay with this one.
        if b.text[child.span.end..next]
            .chars()
            .any(char::is_alphanumeric)
        {
            b.end_sections(child.span.end, level);
        }
    }
}

/// Keeps a list or quote marker (`-`, `1.`, `>`) with the first word after it.
fn glue_marker(b: &mut Builder<'_>, start: usize, end: usize) {
    let text = b.text;
    let marker = text[start..end]
        .find(char::is_whitespace)
        .map_or(end, |i| start + i);
    b.glue(start, marker);
}
