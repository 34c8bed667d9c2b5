//! From placed glyphs to the stored text of a PDF (see the folder's docs for its form): rows
//! of glyphs become lines, a gutter found in the glyphs' x positions splits a page into two
//! columns read one after the other, lines repeated at the top or bottom of pages (digits
//! aside) and bare page numbers are dropped, lines join into paragraphs by their spacing and
//! indents (hyphenated line ends joined), and lines set larger than the body text become
//! headings, one level per size. Lines set in a monospaced font are code: never headings,
//! kept line by line. Rows of cells in aligned columns are tables (cells placed apart, or
//! separated by drawn vertical rules): one line per row, cells separated by tabs; a table
//! that runs on at the top of the next page (same columns, its head row repeated or not) is
//! one table with its head row once. A block that is not a heading but starts with `#` is
//! escaped (see `crate::chunk::readers::pdf`).

use std::collections::{HashMap, HashSet};

use super::page::{Glyph, Page, Rule};
use crate::chunk::readers::pdf::{escaped, PAGE_BREAK};

/// Lines at each end of a page looked at for running headers, footers and page numbers.
const MARGIN_LINES: usize = 2;
/// A gap this many font sizes wide inside a row splits it into pieces placed apart.
const PIECE_GAP: f64 = 1.5;
/// A gap this many font sizes wide between two glyphs of a line is a space.
const SPACE_GAP: f64 = 0.18;
/// Lines this much larger than the body text are headings.
const HEADING_RATIO: f64 = 1.15;
/// The fewest rows of a table of two columns without rules between them: two pieces side by
/// side on a row or two are as likely the lines of two columns of text.
const TWO_CELL_ROWS: usize = 3;
/// Two columns at least this many font sizes wide, most of whose lines end within
/// [`FULL_LINE`] font sizes of their right edge, are running text, not a table.
const PROSE_WIDTH: f64 = 15.0;
const FULL_LINE: f64 = 4.0;
/// The width of a monospaced character, in font sizes (Courier's), for a code line's indent.
const MONO_ADVANCE: f64 = 0.6;

/// Each column's left and right edge, by page and flow.
type Edges = HashMap<(usize, (usize, usize)), (f64, f64)>;

/// One line of text, in a column of one page.
#[derive(Debug, Clone)]
struct Line {
    page: usize,
    /// Where it is read: the band of the page (bands are separated by lines across both
    /// columns) and the column (0 left or only, 1 right, 2 across).
    flow: (usize, usize),
    x0: f64,
    x1: f64,
    y: f64,
    size: f64,
    text: String,
    /// A table row's cells, left and right edges (empty for running text).
    cells: Vec<(f64, f64)>,
    /// Set in a monospaced font throughout.
    code: bool,
}

/// A run of glyphs on one row with no wide gap inside, or a whole table row.
struct Piece {
    x0: f64,
    x1: f64,
    y: f64,
    size: f64,
    glyphs: Vec<Glyph>,
    /// A table row's cells: edges and text (empty for running text).
    cells: Vec<(f64, f64, String)>,
    /// Every glyph in it monospaced.
    mono: bool,
    /// A drawn vertical rule separates it from the piece before it on its row.
    ruled: bool,
}

impl Piece {
    /// Its text; a table row's cells separated by tabs.
    fn text(&self) -> String {
        if self.cells.is_empty() {
            return piece_text(&self.glyphs);
        }
        let cells: Vec<&str> = self.cells.iter().map(|c| c.2.as_str()).collect();
        cells.join("\t")
    }
}

/// The stored text of these pages.
pub(super) fn text(pages: &[Page]) -> String {
    let mut lines: Vec<Line> = Vec::new();
    let mut carried: Option<Vec<(f64, f64)>> = None;
    for (index, page) in pages.iter().enumerate() {
        let (page_lines, ends_in) = page_lines(index, page, carried.as_deref());
        lines.extend(page_lines);
        carried = ends_in;
    }
    drop_margins(&mut lines, pages.len());
    let blocks = blocks(&lines);
    render(&blocks, pages.len())
}

/// The lines of one page in reading order, and the columns of the table the page ends in
/// (see [`tables`] for `carried`).
fn page_lines(
    page: usize,
    source: &Page,
    carried: Option<&[(f64, f64)]>,
) -> (Vec<Line>, Option<Vec<(f64, f64)>>) {
    let (pieces, ends_in) = tables(pieces(&source.glyphs, &source.rules), carried);
    // Table cells are narrow pieces side by side: they would pass for columns of text.
    let text_pieces: Vec<&Piece> = pieces.iter().filter(|p| p.cells.is_empty()).collect();
    let gutter = gutter(&text_pieces);
    let column = |p: &Piece| match gutter {
        None => 0,
        // A table row is read whole, across the columns.
        Some(_) if !p.cells.is_empty() => 2,
        Some(g) if p.x1 <= g => 0,
        Some(g) if p.x0 >= g => 1,
        Some(_) => 2,
    };
    // Top to bottom; a piece across the gutter closes a band, read left column then right.
    let mut order: Vec<(usize, usize, &Piece)> = Vec::new();
    let mut band = 0;
    for piece in &pieces {
        let c = column(piece);
        if c == 2 {
            band += 1;
        }
        order.push((band, c, piece));
        if c == 2 {
            band += 1;
        }
    }
    order.sort_by_key(|a| (a.0, a.1));
    let mut lines: Vec<Line> = Vec::new();
    for (band, c, piece) in order {
        let same_row = |l: &Line| {
            l.flow == (band, c)
                && l.cells.is_empty()
                && piece.cells.is_empty()
                && (l.y - piece.y).abs() < 0.3 * l.size.max(piece.size)
        };
        match lines.last_mut() {
            Some(line) if same_row(line) => {
                // Code keeps its spacing: as many spaces as characters fit the gap.
                let spaces = if line.code && piece.mono {
                    let gap = (piece.x0 - line.x1) / (MONO_ADVANCE * line.size);
                    gap.round().clamp(1.0, 80.0) as usize
                } else {
                    1
                };
                line.x1 = line.x1.max(piece.x1);
                line.size = line.size.max(piece.size);
                line.code &= piece.mono;
                line.text.push_str(&" ".repeat(spaces));
                line.text.push_str(&piece.text());
            }
            _ => lines.push(Line {
                page,
                flow: (band, c),
                x0: piece.x0,
                x1: piece.x1,
                y: piece.y,
                size: piece.size,
                text: piece.text(),
                cells: piece.cells.iter().map(|c| (c.0, c.1)).collect(),
                code: piece.mono && piece.cells.is_empty(),
            }),
        }
    }
    lines.retain(|l| !l.text.trim().is_empty());
    (lines, ends_in)
}

/// The page's glyphs grouped in rows (top to bottom, by baseline) and cut at wide gaps and
/// at the vertical `rules` drawn between glyphs.
fn pieces(glyphs: &[Glyph], rules: &[Rule]) -> Vec<Piece> {
    let mut rules = rules.to_vec();
    rules.sort_by(|a, b| a.x.total_cmp(&b.x));
    let mut sorted: Vec<&Glyph> = glyphs.iter().collect();
    sorted.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x.total_cmp(&b.x)));
    let mut rows: Vec<Vec<&Glyph>> = Vec::new();
    for g in sorted {
        match rows.last_mut() {
            Some(row)
                if row
                    .first()
                    .is_some_and(|f| (f.y - g.y).abs() < 0.3 * f.size.max(g.size)) =>
            {
                row.push(g);
            }
            _ => rows.push(vec![g]),
        }
    }
    let mut out = Vec::new();
    for mut row in rows {
        row.sort_by(|a, b| a.x.total_cmp(&b.x));
        let mut current: Option<Piece> = None;
        for g in row {
            let ink = g.text != " ";
            let ruled = current
                .as_ref()
                .is_some_and(|p| ruled_between(&rules, p.x1, g));
            match current.as_mut() {
                Some(p) if g.x - p.x1 < PIECE_GAP * p.size.max(g.size) && !ruled => {
                    if ink {
                        p.x1 = p.x1.max(g.x + g.width);
                        p.size = p.size.max(g.size);
                        p.mono &= g.mono;
                    }
                    p.glyphs.push(g.clone());
                }
                _ if !ink => {}
                _ => {
                    out.extend(current.take());
                    current = Some(Piece {
                        x0: g.x,
                        x1: g.x + g.width,
                        y: g.y,
                        size: g.size,
                        glyphs: vec![g.clone()],
                        cells: Vec::new(),
                        mono: g.mono,
                        ruled,
                    });
                }
            }
        }
        out.extend(current);
    }
    out
}

/// Whether a vertical rule stands between the end `x` of a piece and the glyph `g`, across
/// `g`'s line (`rules` sorted by x).
fn ruled_between(rules: &[Rule], x: f64, g: &Glyph) -> bool {
    let slack = 0.05 * g.size;
    let middle = g.y + 0.3 * g.size;
    let from = rules.partition_point(|r| r.x < x - slack);
    rules[from..]
        .iter()
        .take_while(|r| r.x <= g.x + slack)
        .any(|r| r.bottom <= middle && middle <= r.top)
}

/// `pieces` (rows top to bottom, each left to right) with every table row made one piece:
/// a table is consecutive rows of the same number of pieces (two or more, not all code),
/// each piece overlapping the same column of every other row; two rows are enough with
/// three or more columns or with rules drawn between the cells, two columns without rules
/// take [`TWO_CELL_ROWS`]; two columns of running text or a list's markers beside its items
/// are not a table. Rows at the top of the page (below at most its running header) in the
/// `carried` columns of a table that ended the page before go on with it, however few.
/// Also the columns of the table this page ends in (above at most its footer), if one does.
fn tables(
    pieces: Vec<Piece>,
    carried: Option<&[(f64, f64)]>,
) -> (Vec<Piece>, Option<Vec<(f64, f64)>>) {
    let mut rows: Vec<Vec<Piece>> = Vec::new();
    for piece in pieces {
        match rows.last_mut() {
            Some(row) if row.first().is_some_and(|f| same_baseline(f, &piece)) => row.push(piece),
            _ => rows.push(vec![piece]),
        }
    }
    let fits = |columns: &[(f64, f64)], row: &[Piece]| {
        let edges: Vec<(f64, f64)> = row.iter().map(|p| (p.x0, p.x1)).collect();
        let size = row.iter().map(|p| p.size).fold(0.0, f64::max);
        let code = row.iter().all(|p| p.mono);
        row.len() >= 2 && !code && aligned(columns, &edges, slack(columns, &edges, size))
    };
    let mut out = Vec::new();
    let mut at = 0;
    let mut last: Option<(usize, Vec<(f64, f64)>)> = None;
    while at < rows.len() {
        // The longest run of aligned rows of enough cells from here.
        let mut columns: Vec<(f64, f64)> = rows[at].iter().map(|p| (p.x0, p.x1)).collect();
        let mut end = at;
        while end < rows.len() && fits(&columns, &rows[end]) {
            for (c, p) in columns.iter_mut().zip(&rows[end]) {
                *c = (c.0.min(p.x0), c.1.max(p.x1));
            }
            end += 1;
        }
        let run = &rows[at..end];
        let goes_on = at <= MARGIN_LINES
            && last.is_none()
            && !run.is_empty()
            && carried.is_some_and(|c| run.iter().all(|row| fits(c, row)));
        if !goes_on && !is_table(run) {
            out.append(&mut rows[at]);
            at += 1;
            continue;
        }
        for row in &rows[at..end] {
            let cells: Vec<(f64, f64, String)> = row
                .iter()
                .map(|p| (p.x0, p.x1, piece_text(&p.glyphs)))
                .collect();
            let first = &row[0];
            out.push(Piece {
                x0: first.x0,
                x1: row.iter().map(|p| p.x1).fold(first.x1, f64::max),
                y: first.y,
                size: row.iter().map(|p| p.size).fold(first.size, f64::max),
                glyphs: Vec::new(),
                cells,
                mono: false,
                ruled: false,
            });
        }
        last = Some((end, columns));
        at = end;
    }
    let ends_in = last.filter(|(end, _)| rows.len() - end <= MARGIN_LINES);
    (out, ends_in.map(|(_, columns)| columns))
}

/// Whether aligned rows `run` (see [`tables`]) are a table.
fn is_table(run: &[Vec<Piece>]) -> bool {
    let cells = run.first().map_or(0, Vec::len);
    let ruled = run.iter().all(|row| row.iter().skip(1).all(|p| p.ruled));
    match cells {
        _ if run.len() < 2 => false,
        2 => (ruled || run.len() >= TWO_CELL_ROWS) && !prose_columns(run) && !list_markers(run),
        _ => true,
    }
}

/// Whether rows of two pieces are two columns of running text: each column at least
/// [`PROSE_WIDTH`] font sizes wide, most of its lines reaching within [`FULL_LINE`] font
/// sizes of its right edge (justified or ragged text; a table's cells end where their
/// text does).
fn prose_columns(run: &[Vec<Piece>]) -> bool {
    (0..2).all(|c| {
        let cells: Vec<&Piece> = run.iter().filter_map(|row| row.get(c)).collect();
        let size = cells.iter().map(|p| p.size).fold(0.0, f64::max);
        let left = cells.iter().map(|p| p.x0).fold(f64::INFINITY, f64::min);
        let right = cells.iter().map(|p| p.x1).fold(f64::NEG_INFINITY, f64::max);
        let full = cells
            .iter()
            .filter(|p| p.x1 >= right - FULL_LINE * size)
            .count();
        right - left >= PROSE_WIDTH * size && 2 * full > cells.len()
    })
}

/// Whether every row's first piece is a list marker: a list with a hanging indent.
fn list_markers(run: &[Vec<Piece>]) -> bool {
    run.iter().all(|row| {
        row.first()
            .is_some_and(|p| is_marker(&piece_text(&p.glyphs)))
    })
}

/// A list item's marker: a bullet, or a short number or letter closed by `.` or `)`
/// (`1.`, `b)`, `(iv)`).
fn is_marker(text: &str) -> bool {
    let mut chars = text.chars();
    let bullet = matches!(
        (chars.next(), chars.next()),
        (
            Some('•' | '◦' | '▪' | '‣' | '⁃' | '∙' | '·' | '-' | '–' | '—' | '*' | '+'),
            None
        )
    );
    let numbered = text
        .strip_suffix(['.', ')'])
        .map(|n| n.strip_prefix('(').unwrap_or(n))
        .is_some_and(|n| {
            (1..=4).contains(&n.chars().count()) && n.chars().all(char::is_alphanumeric)
        });
    bullet || numbered
}

/// How far a row's `cells` may stray from their `columns` and still be in them: half a
/// font size, less where the cells or the columns stand closer (cells a rule separates may
/// be a few points apart).
fn slack(columns: &[(f64, f64)], cells: &[(f64, f64)], size: f64) -> f64 {
    let gap = |edges: &[(f64, f64)]| {
        edges
            .windows(2)
            .map(|w| w[1].0 - w[0].1)
            .fold(f64::INFINITY, f64::min)
    };
    (0.5 * size).min(0.4 * gap(columns).min(gap(cells)).max(0.0))
}

fn same_baseline(a: &Piece, b: &Piece) -> bool {
    (a.y - b.y).abs() < 0.3 * a.size.max(b.size)
}

/// Whether `cells` (left and right edges) are one in each of `columns`: as many, each
/// overlapping its column (with `slack`) and no other.
fn aligned(columns: &[(f64, f64)], cells: &[(f64, f64)], slack: f64) -> bool {
    let overlaps = |c: &(f64, f64), x: &(f64, f64)| x.0 < c.1 + slack && x.1 > c.0 - slack;
    columns.len() == cells.len()
        && cells.iter().enumerate().all(|(i, x)| {
            columns
                .iter()
                .enumerate()
                .all(|(j, c)| overlaps(c, x) == (i == j))
        })
}

/// The text of a piece's glyphs (in x order): a space where a space glyph or a gap is.
fn piece_text(glyphs: &[Glyph]) -> String {
    let mut text = String::new();
    let mut end: Option<f64> = None;
    let mut space = false;
    for g in glyphs {
        if g.text == " " {
            space = true;
            continue;
        }
        let gap = end.is_some_and(|e| g.x - e > SPACE_GAP * g.size);
        if (space || gap) && !text.is_empty() && !text.ends_with(' ') {
            text.push(' ');
        }
        text.push_str(&g.text);
        end = Some(end.map_or(g.x + g.width, |e: f64| e.max(g.x + g.width)));
        space = false;
    }
    text.trim_end().to_string()
}

/// The x of the gutter between two columns, if the page has two: the widest stretch in the
/// middle half of the text's width that few narrow pieces cross (pieces as wide as the two
/// columns, such as titles, do not count), with at least three pieces on each side.
fn gutter(pieces: &[&Piece]) -> Option<f64> {
    let left = pieces.iter().map(|p| p.x0).min_by(f64::total_cmp)?;
    let right = pieces.iter().map(|p| p.x1).max_by(f64::total_cmp)?;
    let width = right - left;
    let narrow: Vec<&Piece> = pieces
        .iter()
        .copied()
        .filter(|p| p.x1 - p.x0 < 0.55 * width)
        .collect();
    if narrow.len() < 6 || width <= 0.0 {
        return None;
    }
    let mut sizes: Vec<f64> = narrow.iter().map(|p| p.size).collect();
    sizes.sort_by(f64::total_cmp);
    let size = sizes.get(sizes.len() / 2).copied().unwrap_or(0.0);
    // Coverage is a step function: walk its steps in the middle half.
    let mut events: Vec<(f64, i32)> = narrow
        .iter()
        .flat_map(|p| [(p.x0, 1), (p.x1, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (lo, hi) = (left + 0.25 * width, left + 0.75 * width);
    let allowed = (narrow.len() / 20) as i32;
    let mut best: Option<(f64, f64)> = None;
    let mut open: Option<f64> = None;
    let mut cover = 0;
    for (x, delta) in events {
        let was_low = cover <= allowed;
        cover += delta;
        let low = cover <= allowed;
        let x = x.clamp(lo, hi);
        match (was_low, low) {
            (false, true) => open = Some(x),
            (true, false) => {
                if let Some(start) = open.take() {
                    if best.is_none_or(|(s, e)| x - start > e - s) {
                        best = Some((start, x));
                    }
                }
            }
            _ => {}
        }
    }
    let (start, end) = best?;
    let mid = (start + end) / 2.0;
    let sides = (
        narrow.iter().filter(|p| p.x1 <= mid).count(),
        narrow.iter().filter(|p| p.x0 >= mid).count(),
    );
    // A last page may hold only a few lines in its right column.
    (end - start >= 0.5 * size && sides.0 >= 3 && sides.1 >= 3).then_some(mid)
}

/// A line's text with its digits made one sign, to match running headers with page numbers.
fn margin_key(text: &str) -> String {
    let mut key = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !key.ends_with('#') {
                key.push('#');
            }
        } else if !c.is_whitespace() {
            key.extend(c.to_lowercase());
        }
    }
    key
}

/// A page number alone: `7`, `- 7 -`, `Page 7`, `7 of 12`, `vii`.
fn is_page_number(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c == '-' || c == '–' || c.is_whitespace());
    let t = t.to_lowercase();
    let t = t.strip_prefix("page").unwrap_or(&t).trim();
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 6 && s.chars().all(|c| c.is_ascii_digit()))
            || (1..=100).any(|n| roman(n) == s)
    };
    match t.split_once(" of ").or_else(|| t.split_once('/')) {
        Some((a, b)) => number(a.trim()) && number(b.trim()),
        None => number(t),
    }
}

/// `n` (1 to 399) in lowercase Roman numerals.
fn roman(mut n: usize) -> String {
    const DIGITS: [(usize, &str); 9] = [
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ];
    let mut out = String::new();
    for (value, digits) in DIGITS {
        while n >= value {
            out.push_str(digits);
            n -= value;
        }
    }
    out
}

/// Drops running headers and footers (a line among the first or last [`MARGIN_LINES`] of
/// pages that is the same, digits aside, on at least two pages and half of them) and page
/// numbers standing alone there.
fn drop_margins(lines: &mut Vec<Line>, page_count: usize) {
    // The margin lines of each page: the top and bottom ones by height.
    let mut margin: HashSet<usize> = HashSet::new();
    let mut by_page: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        by_page.entry(l.page).or_default().push(i);
    }
    for indexes in by_page.values_mut() {
        indexes.sort_by(|&a, &b| lines[b].y.total_cmp(&lines[a].y));
        margin.extend(indexes.iter().take(MARGIN_LINES));
        margin.extend(indexes.iter().rev().take(MARGIN_LINES));
    }
    let mut pages_of: HashMap<String, HashSet<usize>> = HashMap::new();
    for &i in &margin {
        let key = margin_key(&lines[i].text);
        pages_of.entry(key).or_default().insert(lines[i].page);
    }
    let running = |key: &str| {
        pages_of
            .get(key)
            .is_some_and(|p| p.len() >= 2 && p.len() * 2 >= page_count)
    };
    let mut index = 0;
    lines.retain(|l| {
        let i = index;
        index += 1;
        // A table's head row repeated on each page is the table's to join, not a header.
        let furniture = is_page_number(&l.text) || running(&margin_key(&l.text));
        !(margin.contains(&i) && l.cells.is_empty() && furniture)
    });
}

/// A block of the stored text: a heading, a paragraph or a table, as lines with their pages.
struct Block {
    heading: Option<usize>,
    /// A table's columns (empty for other blocks): its rows are lines of the text.
    columns: Vec<(f64, f64)>,
    /// Code: its lines are lines of the text, indented as set, from `left`.
    code: bool,
    left: f64,
    lines: Vec<(usize, String)>,
}

/// The body text size: the size most characters are set in (to a quarter point).
fn body_size(lines: &[Line]) -> f64 {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for l in lines {
        *counts.entry((l.size * 4.0).round() as i64).or_default() += l.text.chars().count();
    }
    let mode = counts.into_iter().max_by_key(|&(size, n)| (n, -size));
    mode.map_or(0.0, |(size, _)| size as f64 / 4.0)
}

/// Lines into headings and paragraphs.
fn blocks(lines: &[Line]) -> Vec<Block> {
    let body = body_size(lines);
    let is_heading =
        |l: &Line| !l.code && l.size >= HEADING_RATIO * body && l.text.chars().count() <= 200;
    // One heading level per size, the largest first.
    let mut sizes: Vec<i64> = lines
        .iter()
        .filter(|l| is_heading(l))
        .map(|l| (l.size * 4.0).round() as i64)
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    let level = |l: &Line| {
        let key = (l.size * 4.0).round() as i64;
        sizes.iter().position(|&s| s == key).map(|p| (p + 1).min(6))
    };
    let pitch = line_pitch(lines, body);
    // Each column's left and right edge, for indents and short last lines.
    let mut edges: Edges = HashMap::new();
    for l in lines.iter().filter(|l| l.cells.is_empty()) {
        let e = edges.entry((l.page, l.flow)).or_insert((l.x0, l.x1));
        *e = (e.0.min(l.x0), e.1.max(l.x1));
    }
    let mut out: Vec<Block> = Vec::new();
    let mut previous: Option<&Line> = None;
    for line in lines {
        let table = !line.cells.is_empty();
        let heading = if is_heading(line) && !table {
            level(line)
        } else {
            None
        };
        let joins = match (previous, out.last()) {
            (Some(prev), Some(block)) if table || !block.columns.is_empty() => {
                table && table_goes_on(block, prev, line)
            }
            (Some(prev), Some(block)) if line.code || block.code => {
                let below = prev.y - line.y < 2.0 * line.size.max(prev.size);
                line.code && block.code && same_flow(prev, line) && below
            }
            (Some(prev), Some(block)) => match (block.heading, heading) {
                (Some(a), Some(b)) => {
                    a == b && same_flow(prev, line) && prev.y - line.y < 2.0 * prev.size
                }
                (None, None) => continues(prev, line, pitch, &edges),
                _ => false,
            },
            _ => false,
        };
        previous = Some(line);
        match out.last_mut() {
            Some(block) if joins => {
                // The head row repeated where the table runs on to a new page is left out.
                let page_turn = block.lines.last().is_some_and(|(p, _)| *p != line.page);
                let head = block.lines.first().map(|(_, h)| h.as_str());
                if page_turn && head == Some(line.text.as_str()) {
                    continue;
                }
                for (c, &(x0, x1)) in block.columns.iter_mut().zip(&line.cells) {
                    *c = (c.0.min(x0), c.1.max(x1));
                }
                let indent = if block.code {
                    let columns = (line.x0 - block.left) / (MONO_ADVANCE * line.size);
                    columns.round().clamp(0.0, 80.0) as usize
                } else {
                    0
                };
                let text = format!("{}{}", " ".repeat(indent), line.text);
                block.lines.push((line.page, text));
            }
            _ => out.push(Block {
                heading,
                columns: line.cells.clone(),
                code: line.code,
                left: line.x0,
                lines: vec![(line.page, line.text.clone())],
            }),
        }
    }
    out
}

/// Whether table row `line` goes on the table `block`, whose last row is `prev` (the line
/// before it): the next row below on the same page, or the first row of the next page (the
/// table ended the page before), in the same columns.
fn table_goes_on(block: &Block, prev: &Line, line: &Line) -> bool {
    let below = line.page == prev.page && prev.y > line.y && prev.y - line.y < 3.0 * line.size;
    let slack = slack(&block.columns, &line.cells, line.size);
    (below || line.page == prev.page + 1) && aligned(&block.columns, &line.cells, slack)
}

fn same_flow(a: &Line, b: &Line) -> bool {
    a.page == b.page && a.flow == b.flow && b.y < a.y
}

/// The usual distance between the baselines of consecutive body lines.
fn line_pitch(lines: &[Line], body: f64) -> f64 {
    let mut gaps: Vec<f64> = lines
        .windows(2)
        .filter(|w| same_flow(&w[0], &w[1]) && (w[0].size - body).abs() < 0.5)
        .map(|w| w[0].y - w[1].y)
        .collect();
    gaps.sort_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied().unwrap_or(1.2 * body)
}

/// Whether body line `line` goes on the paragraph `prev` is the last line of.
fn continues(prev: &Line, line: &Line, pitch: f64, edges: &Edges) -> bool {
    let edge = |l: &Line| {
        edges
            .get(&(l.page, l.flow))
            .copied()
            .unwrap_or((l.x0, l.x1))
    };
    let (left, right) = edge(line);
    let indented = line.x0 > left + line.size;
    let sentence_end = prev.text.ends_with(['.', '!', '?', ':']);
    if !same_flow(prev, line) {
        // Into the next column or page: on, unless the paragraph was over.
        return !sentence_end && !indented;
    }
    let (prev_left, prev_right) = edge(prev);
    let spaced = prev.y - line.y > 1.3 * pitch;
    let short_end = sentence_end && prev.x1 < prev_right.min(right) - 2.0 * prev.size;
    let indent_starts = indented && prev.x0 <= prev_left + 0.5 * prev.size;
    !(spaced || short_end || indent_starts)
}

/// Joins a block's lines: a word hyphenated at a line end is made whole again.
fn joined(a: &str, b: &str) -> Option<String> {
    let stem = a.strip_suffix('\u{ad}').or_else(|| {
        let stem = a.strip_suffix(['-', '\u{2010}'])?;
        let before = stem.chars().next_back()?;
        let after = b.chars().next()?;
        (before.is_alphabetic() && after.is_lowercase()).then_some(stem)
    })?;
    Some(format!("{stem}{b}"))
}

/// The stored text of the blocks of `page_count` pages.
fn render(blocks: &[Block], page_count: usize) -> String {
    let mut out = String::new();
    let mut page = 0;
    let breaks_to = |out: &mut String, page: &mut usize, to: usize| {
        while *page < to {
            out.push(PAGE_BREAK);
            *page += 1;
        }
    };
    for block in blocks {
        let Some((first_page, first)) = block.lines.first() else {
            continue;
        };
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        breaks_to(&mut out, &mut page, *first_page);
        if let Some(level) = block.heading {
            out.push_str(&"#".repeat(level));
            out.push(' ');
        }
        let mut text = match block.heading {
            None if block.columns.is_empty() => escaped(first).into_owned(),
            _ => first.clone(),
        };
        for (line_page, line) in &block.lines[1..] {
            if !block.columns.is_empty() || block.code {
                // A table: one row a line, a page break before the first row of a page;
                // code: one line a line.
                out.push_str(&text);
                out.push('\n');
                breaks_to(&mut out, &mut page, *line_page);
                text = line.clone();
            } else if *line_page != page {
                // The paragraph runs on to the next page: the break goes where the page
                // turns, after the word a hyphen split.
                let (head, tail) = line.split_once(' ').unwrap_or((line.as_str(), ""));
                match joined(&text, head) {
                    Some(whole) => {
                        out.push_str(&whole);
                        text = tail.to_string();
                    }
                    None => {
                        out.push_str(&text);
                        text = line.clone();
                    }
                }
                out.push('\n');
                breaks_to(&mut out, &mut page, *line_page);
            } else if text.is_empty() {
                text = line.clone();
            } else {
                text = joined(&text, line).unwrap_or_else(|| format!("{text} {line}"));
            }
        }
        out.push_str(&text);
    }
    breaks_to(&mut out, &mut page, page_count.saturating_sub(1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::tree::BlockKind;

    fn glyphs(x: f64, y: f64, size: f64, text: &str) -> Vec<Glyph> {
        text.chars()
            .enumerate()
            .map(|(i, c)| Glyph {
                x: x + i as f64 * 0.5 * size,
                y,
                width: 0.5 * size,
                size,
                text: if c == ' ' { " ".into() } else { c.to_string() },
                mono: false,
            })
            .collect()
    }

    /// `glyphs` in a monospaced font.
    fn code(x: f64, y: f64, size: f64, text: &str) -> Vec<Glyph> {
        let mut out = glyphs(x, y, size, text);
        for g in &mut out {
            g.mono = true;
        }
        out
    }

    /// The stored text of one page of rows, each a list of `(x, cell)` set at 10 points.
    fn page_of(rows: &[&[(f64, &str)]], rules: Vec<Rule>) -> String {
        let mut page = Page {
            rules,
            ..Page::default()
        };
        for (i, row) in rows.iter().enumerate() {
            for (x, cell) in row.iter() {
                page.glyphs
                    .extend(glyphs(*x, 700.0 - 12.0 * i as f64, 10.0, cell));
            }
        }
        text(&[page])
    }

    #[test]
    fn two_cells_side_by_side_are_a_table_only_in_several_rows() {
        let rows: [&[(f64, &str)]; 3] = [
            &[(50.0, "Key"), (200.0, "Value")],
            &[(50.0, "alpha"), (200.0, "first letter")],
            &[(50.0, "omega"), (200.0, "last letter")],
        ];
        assert_eq!(
            page_of(&rows, Vec::new()),
            "Key\tValue\nalpha\tfirst letter\nomega\tlast letter"
        );
        // Two rows of two pieces: as likely two lines of two columns.
        assert!(!page_of(&rows[..2], Vec::new()).contains('\t'));
        // Drawn rules between the cells make two rows enough.
        let rule = Rule {
            x: 190.0,
            bottom: 680.0,
            top: 712.0,
        };
        assert_eq!(
            page_of(&rows[..2], vec![rule]),
            "Key\tValue\nalpha\tfirst letter"
        );
        // A list's markers beside its items are no table.
        let list: [&[(f64, &str)]; 3] = [
            &[(50.0, "1."), (80.0, "the first item")],
            &[(50.0, "2."), (80.0, "the second item")],
            &[(50.0, "3."), (80.0, "the third item")],
        ];
        assert!(!page_of(&list, Vec::new()).contains('\t'));
        assert!(is_marker("•") && is_marker("(iv)") && is_marker("b)") && is_marker("10."));
        assert!(!is_marker("Key") && !is_marker("v1.2.") && !is_marker("--"));
    }

    #[test]
    fn a_two_column_table_goes_on_at_the_next_page_however_few_rows_are_there() {
        let row = |page: &mut Page, y: f64, key: &str, value: &str| {
            page.glyphs.extend(glyphs(50.0, y, 10.0, key));
            page.glyphs.extend(glyphs(200.0, y, 10.0, value));
        };
        for repeat in [false, true] {
            let mut first = Page::default();
            first
                .glyphs
                .extend(glyphs(50.0, 700.0, 10.0, "The keys and their values:"));
            for (i, (k, v)) in [("Key", "Value"), ("a", "one"), ("b", "two"), ("c", "three")]
                .iter()
                .enumerate()
            {
                row(&mut first, 676.0 - 12.0 * i as f64, k, v);
            }
            let mut next = Page::default();
            let mut y = 700.0;
            if repeat {
                row(&mut next, y, "Key", "Value");
                y -= 12.0;
            }
            row(&mut next, y, "d", "four");
            next.glyphs
                .extend(glyphs(50.0, y - 30.0, 10.0, "After the table."));
            assert_eq!(
                text(&[first, next.clone()]),
                "The keys and their values:\n\nKey\tValue\na\tone\nb\ttwo\nc\tthree\n\u{c}d\tfour\n\nAfter the table.",
                "repeat {repeat}"
            );
            // Without the table before it, a row or two of two pieces is text.
            assert!(!text(&[next]).contains('\t'));
        }
    }

    #[test]
    fn cells_set_tight_are_a_table_where_rules_separate_them() {
        // Cells two points apart: one piece each row, unless the rules between them cut it.
        let rows: [&[(f64, &str)]; 3] = [
            &[(50.0, "Rule"), (82.0, "Offset"), (114.0, "Bytes")],
            &[(50.0, "r01"), (82.0, "0x04"), (114.0, "01 02")],
            &[(50.0, "r02"), (82.0, "0x08"), (114.0, "02 04")],
        ];
        assert!(!page_of(&rows, Vec::new()).contains('\t'));
        let rules = [48.0, 81.0, 113.0, 142.0]
            .map(|x| Rule {
                x,
                bottom: 670.0,
                top: 712.0,
            })
            .to_vec();
        assert_eq!(
            page_of(&rows, rules),
            "Rule\tOffset\tBytes\nr01\t0x04\t01 02\nr02\t0x08\t02 04"
        );
    }

    #[test]
    fn code_lines_stay_lines_and_no_block_reads_as_a_heading_by_its_hash() {
        let mut page = Page::default();
        page.glyphs.extend(glyphs(50.0, 700.0, 16.0, "Setup"));
        page.glyphs.extend(glyphs(50.0, 670.0, 10.0, "Run this:"));
        // Code set larger than the body is still code.
        page.glyphs
            .extend(code(50.0, 640.0, 12.0, "# make the cache"));
        page.glyphs.extend(code(50.0, 626.0, 12.0, "make"));
        page.glyphs.extend(code(86.0, 612.0, 12.0, "--all"));
        page.glyphs
            .extend(glyphs(50.0, 580.0, 10.0, "#3 on the list."));
        page.glyphs
            .extend(glyphs(50.0, 550.0, 10.0, "\\# kept as set."));
        let text = text(&[page]);
        assert_eq!(
            text,
            "# Setup\n\nRun this:\n\n\\# make the cache\nmake\n     --all\n\n\\#3 on the list.\n\n\\\\# kept as set."
        );
        let tree = crate::chunk::readers::pdf::read(&text);
        let headings: Vec<&BlockKind> = tree
            .walk()
            .map(|b| &b.kind)
            .filter(|k| matches!(k, BlockKind::Heading { .. }))
            .collect();
        assert_eq!(headings.len(), 1, "{text}");
    }

    #[test]
    fn hyphens_join_only_split_words() {
        assert_eq!(joined("exam-", "ple").as_deref(), Some("example"));
        assert_eq!(joined("exam\u{ad}", "Ple").as_deref(), Some("examPle"));
        assert_eq!(joined("well-", "Known"), None);
        assert_eq!(joined("1990-", "now"), None);
        assert_eq!(joined("plain", "text"), None);
    }

    #[test]
    fn page_numbers_alone() {
        for yes in ["7", "- 7 -", "Page 7", "page 3 of 12", "vii", "3/9"] {
            assert!(is_page_number(yes), "{yes}");
        }
        for no in ["7 dwarves", "Page seven", "", "civil"] {
            assert!(!is_page_number(no), "{no}");
        }
        assert_eq!(margin_key("Report 2024, page 12"), "report#,page#");
    }

    #[test]
    fn two_columns_read_left_then_right() {
        let mut page = Page::default();
        for i in 0..8 {
            let y = 700.0 - 12.0 * i as f64;
            // Lines of running text as long as the column is wide (22 font sizes).
            page.glyphs.extend(glyphs(
                50.0,
                y,
                10.0,
                &format!("left {i} words of running text in a column"),
            ));
            page.glyphs.extend(glyphs(
                320.0,
                y,
                10.0,
                &format!("right {i} words of running text in a column"),
            ));
        }
        let text = text(&[page]);
        let left = text.find("left 7").unwrap();
        let right = text.find("right 0").unwrap();
        assert!(left < right, "{text}");
    }
}
