//! The layout of one document, shared by every chunker: its sections (heading tree) and the
//! places where it may be cut, each with a strength, plus the zones a cut must not split.
//!
//! `tree_layout::from_tree` turns a reader's block tree into raw cut positions and zones on
//! a [`Builder`]; the packers then ask [`Layout::candidates`] for the cuts inside one range.

use super::pieces::Span;
use super::tree::Markup;

/// How strong a bound between two pieces of text is, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Strength {
    /// Between two characters of a word (a last resort).
    Char,
    /// Between words (for CJK text: between characters).
    Word,
    /// After a clause mark: `, ; :` and CJK `，、：`.
    Clause,
    /// After a sentence end: `. ! ?` and CJK `。！？；`.
    Sentence,
    /// A line break in plain text.
    Line,
    /// Between Markdown list items (and blocks inside a list).
    Item,
    /// Between paragraphs and other blocks.
    Block,
    /// Before a heading: a new section.
    Section,
}

/// A place where the text may be cut: the whitespace gap `[end, start)` between the content
/// before (ending at `end`) and the content after (starting at `start`). Both sides are
/// non-whitespace, so a piece between two cuts is trimmed and non-empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    pub end: usize,
    pub start: usize,
    pub strength: Strength,
    /// Held by a soft zone (a heading glued to its content, a list marker, inline code): used
    /// only where the pieces would otherwise be too long.
    pub held: bool,
}

/// A section: a heading and its content up to the next heading (or the text before the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// Trimmed, non-empty.
    pub span: Span,
    pub path: Vec<String>,
    /// The depth (1 is the top) of the shallowest heading that opens here, `None` where the
    /// section continues one opened before (the text before the first heading, after a cut
    /// table, after a skipped part). With several headings joined ("# A" right above "## B")
    /// it is the first one's.
    pub opens: Option<usize>,
}

/// A document's sections and cut candidates.
#[derive(Debug)]
pub(crate) struct Layout<'a> {
    pub text: &'a str,
    /// The parts of the text chunks may hold: everything but the skipped spans, trimmed, in
    /// order, each with visible content.
    pub regions: Vec<Span>,
    /// In order, disjoint, inside the regions, covering every visible byte of them.
    pub sections: Vec<Section>,
    /// Sorted, distinct, none inside a hard zone.
    cuts: Vec<Cut>,
    /// Code blocks and tables: sorted, disjoint content spans that are never cut.
    hard: Vec<Span>,
    /// Markup runs (sorted, disjoint).
    markup: Vec<Markup>,
    /// What sizes leave out, markup runs and source syntax (sorted, disjoint).
    uncounted: Vec<Span>,
    /// `uncounted_chars[i]`: the characters of the uncounted runs before run `i`.
    uncounted_chars: Vec<usize>,
    /// With token sizes: where the document's tokens start (sorted, none inside markup).
    /// Sizes then count the starts inside a range, two binary searches.
    units: Option<Vec<usize>>,
}

/// Collects what a format reader finds, then normalizes it into a [`Layout`].
pub(crate) struct Builder<'a> {
    pub(crate) text: &'a str,
    skipped: Vec<Span>,
    markup: Vec<Markup>,
    uncounted: Vec<Span>,
    raw: Vec<(usize, Strength)>,
    caps: Vec<(Span, Strength)>,
    hard: Vec<Span>,
    soft: Vec<Span>,
    headings: Vec<Heading>,
    units: Option<Vec<usize>>,
}

/// A heading that opens a section: its span, level (1 is the top) and plain text; without
/// a title, the end of every section of `level` or deeper (the text after a table that
/// had a section of its own).
struct Heading {
    start: usize,
    end: usize,
    level: usize,
    title: Option<String>,
}

impl<'a> Builder<'a> {
    pub fn new(text: &'a str) -> Self {
        Builder {
            text,
            skipped: Vec::new(),
            markup: Vec::new(),
            uncounted: Vec::new(),
            raw: Vec::new(),
            caps: Vec::new(),
            hard: Vec::new(),
            soft: Vec::new(),
            headings: Vec::new(),
            units: None,
        }
    }

    /// Sizes are counted in the tokens that start at `starts` (byte offsets of the whole
    /// text, sorted) instead of characters. Call after the markup is added: tokens inside
    /// markup are not counted, tokens of syntax are (the model reads them).
    pub fn units(&mut self, mut starts: Vec<usize>) {
        self.markup.sort_by_key(|m| m.span.start);
        starts.retain(|&pos| {
            let i = self.markup.partition_point(|m| m.span.end <= pos);
            self.markup.get(i).is_none_or(|m| m.span.start > pos)
        });
        self.units = Some(starts);
    }

    /// Keeps `span` (front matter, navigation) out of every chunk.
    pub fn skip(&mut self, span: Span) {
        self.skipped.push(span);
    }

    /// A markup run: never cut, not counted.
    pub fn markup(&mut self, markup: Markup) {
        self.hard.push(markup.span);
        self.uncounted.push(markup.span);
        self.markup.push(markup);
    }

    /// Source syntax (see [`Tree::syntax`](super::tree::Tree::syntax)): not counted in
    /// characters.
    pub fn syntax(&mut self, span: Span) {
        self.uncounted.push(span);
    }

    /// A possible cut at byte `pos` (anywhere in or next to a whitespace gap).
    pub fn cut(&mut self, pos: usize, strength: Strength) {
        self.raw.push((pos, strength));
    }

    /// Caps the strength of the cut at `pos` (whatever else is found there).
    pub fn cap(&mut self, pos: usize, strength: Strength) {
        self.cap_range(pos, pos, strength);
    }

    /// Caps the strength of every cut whose gap lies in `[from, to]`.
    pub fn cap_range(&mut self, from: usize, to: usize, strength: Strength) {
        self.caps.push((
            Span {
                start: from,
                end: to,
            },
            strength,
        ));
    }

    /// A span never cut (code block, table).
    pub fn hard(&mut self, start: usize, end: usize) {
        self.hard.push(Span { start, end });
    }

    /// A span cut only when nothing else fits.
    pub fn soft(&mut self, start: usize, end: usize) {
        self.soft.push(Span { start, end });
    }

    /// Keeps `[start, to)` together with the first character that follows it, so that e.g. a
    /// heading starts the piece holding the first words of its content (unless that piece
    /// would be too long).
    pub fn glue(&mut self, start: usize, to: usize) {
        let end = glue_end(self.text, to);
        self.soft(start, end);
    }

    /// The heading `[start, end)` opens a new section.
    pub fn heading(&mut self, start: usize, end: usize, level: usize, title: String) {
        self.headings.push(Heading {
            start,
            end,
            level,
            title: Some(title),
        });
        self.cut(start, Strength::Section);
    }

    /// Ends every section of `level` or deeper at `pos`: what follows belongs to the
    /// section around them again.
    pub fn end_sections(&mut self, pos: usize, level: usize) {
        self.headings.push(Heading {
            start: pos,
            end: pos,
            level,
            title: None,
        });
        self.cut(pos, Strength::Section);
    }

    /// The size of `[start, end)` outside the markup and syntax (added so far, in order): its
    /// characters, or its tokens (see [`Builder::units`]).
    pub fn visible_size(&self, start: usize, end: usize) -> usize {
        if let Some(units) = &self.units {
            return count_in(units, start, end);
        }
        let first = self.uncounted.partition_point(|span| span.end <= start);
        let inside: usize = self.uncounted[first..]
            .iter()
            .take_while(|span| span.start < end)
            .map(|span| {
                let (from, to) = (span.start.max(start), span.end.min(end));
                self.text[from..to].chars().count()
            })
            .sum();
        self.text[start..end].chars().count() - inside
    }

    /// The hard zones so far, trimmed, sorted and merged.
    pub fn hard_zones(&self) -> Vec<Span> {
        merge_zones(self.text, self.hard.clone())
    }

    pub fn build(self) -> Layout<'a> {
        let text = self.text;
        let mut markup = self.markup;
        markup.sort_by_key(|m| m.span.start);
        let mut uncounted = self.uncounted;
        uncounted.sort_by_key(|span| span.start);
        let uncounted_chars = uncounted
            .iter()
            .scan(0, |sum, span| {
                let before = *sum;
                *sum += text[span.start..span.end].chars().count();
                Some(before)
            })
            .collect();
        let hard = merge_zones(text, self.hard);
        let soft = merge_zones(text, self.soft);
        let mut layout = Layout {
            text,
            regions: Vec::new(),
            sections: Vec::new(),
            cuts: Vec::new(),
            hard,
            markup,
            uncounted,
            uncounted_chars,
            units: self.units,
        };
        layout.regions = complement(text, self.skipped)
            .into_iter()
            .filter(|r| layout.visible(*r))
            .collect();
        layout.sections = sections(&layout, &self.headings);
        layout.cuts = normalize_cuts(&layout, self.raw, &soft);
        apply_caps(&mut layout.cuts, &self.caps);
        layout
    }
}

/// The end of the first non-whitespace character at or after `pos` (or `pos` if none).
fn glue_end(text: &str, pos: usize) -> usize {
    let rest = &text[pos..];
    match rest.char_indices().find(|(_, c)| !c.is_whitespace()) {
        Some((i, c)) => pos + i + c.len_utf8(),
        None => pos,
    }
}

/// `[start, end)` without surrounding whitespace, if anything is left.
pub(crate) fn trim(text: &str, start: usize, end: usize) -> Option<Span> {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let kept = s.trim().len();
    (kept > 0).then(|| Span {
        start: start + lead,
        end: start + lead + kept,
    })
}

/// Trimmed zones, sorted, with overlapping ones merged (touching ones stay apart, so a cut
/// between two adjacent code blocks is still allowed).
fn merge_zones(text: &str, mut zones: Vec<Span>) -> Vec<Span> {
    zones.sort_by_key(|z| (z.start, z.end));
    let mut merged: Vec<Span> = Vec::with_capacity(zones.len());
    for z in zones.into_iter().filter_map(|z| trim(text, z.start, z.end)) {
        match merged.last_mut() {
            Some(last) if z.start < last.end => last.end = last.end.max(z.end),
            _ => merged.push(z),
        }
    }
    merged
}

/// Whether cutting at the gap `[end, start)` would leave part of a zone on each side.
fn splits(zones: &[Span], end: usize, start: usize) -> bool {
    let i = zones.partition_point(|z| z.start < end);
    i > 0 && start < zones[i - 1].end
}

/// Sections from the headings. A heading with nothing under it before the next heading
/// ("# Guide" right above "## Install") opens no section of its own but joins the next one,
/// so that it is not left as a chunk holding nothing but a title.
fn sections(layout: &Layout<'_>, headings: &[Heading]) -> Vec<Section> {
    let text = layout.text;
    // The text before the first heading; skipped parts fall out with the regions below.
    let mut starts = vec![(0, 0, Vec::new(), None)];
    let mut stack: Vec<(usize, String)> = Vec::new();
    for h in headings {
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            stack.pop();
        }
        let mut opens = None;
        if let Some(title) = &h.title {
            stack.push((h.level, title.clone()));
            opens = Some(stack.len());
        }
        starts.push((
            h.start,
            h.end,
            stack.iter().map(|(_, t)| t.clone()).collect(),
            opens,
        ));
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|(start, ..)| *start)
        .chain([text.len()])
        .collect();
    let last = ends.len() - 1;
    let mut sections = Vec::with_capacity(starts.len());
    let mut joined_from: Option<(usize, Option<usize>)> = None;
    for (i, ((start, heading_end, path, opens), end)) in starts.into_iter().zip(ends).enumerate() {
        let (start, mut opens) = match joined_from.take() {
            Some((from, Some(first))) => (from, Some(opens.map_or(first, |o| o.min(first)))),
            Some((from, None)) => (from, opens),
            None => (start, opens),
        };
        let Some(span) = trim(text, start, end) else {
            continue;
        };
        let rest = Span {
            start: heading_end.min(end),
            end,
        };
        if i < last && !layout.visible(rest) {
            joined_from = Some((span.start, opens));
            continue;
        }
        for region in &layout.regions {
            let (start, end) = (span.start.max(region.start), span.end.min(region.end));
            if let Some(piece) = (start < end).then(|| trim(text, start, end)).flatten() {
                if layout.visible(piece) {
                    sections.push(Section {
                        span: piece,
                        path: path.clone(),
                        opens: opens.take(),
                    });
                }
            }
        }
    }
    sections
}

/// The trimmed parts of `[0, text.len())` outside the `skipped` spans.
fn complement(text: &str, mut skipped: Vec<Span>) -> Vec<Span> {
    skipped.sort_by_key(|s| s.start);
    let mut out = Vec::new();
    let mut from = 0;
    for s in skipped {
        if s.start > from {
            out.extend(trim(text, from, s.start));
        }
        from = from.max(s.end);
    }
    if from < text.len() {
        out.extend(trim(text, from, text.len()));
    }
    out
}

/// Raw positions -> sorted, distinct gaps (strongest wins), dropping those at the edges of
/// the content and those that split a hard zone.
fn normalize_cuts(layout: &Layout<'_>, mut raw: Vec<(usize, Strength)>, soft: &[Span]) -> Vec<Cut> {
    let (text, hard) = (layout.text, &layout.hard);
    raw.sort_unstable();
    let mut cuts: Vec<Cut> = Vec::with_capacity(raw.len());
    for (pos, strength) in raw {
        let end = text[..pos].trim_end().len();
        let start = text.len() - text[pos..].trim_start().len();
        let inside = layout
            .regions
            .iter()
            .any(|r| r.start < end && start < r.end);
        if !inside || splits(hard, end, start) {
            continue;
        }
        match cuts.last_mut() {
            Some(last) if last.end == end && last.start == start => {
                last.strength = last.strength.max(strength)
            }
            _ => cuts.push(Cut {
                end,
                start,
                strength,
                held: splits(soft, end, start),
            }),
        }
    }
    cuts
}

/// Lowers the strength of the cuts whose gaps lie in a capped range (or hold a capped
/// position).
fn apply_caps(cuts: &mut [Cut], caps: &[(Span, Strength)]) {
    for &(range, cap) in caps {
        let first = cuts.partition_point(|c| c.start < range.start);
        for cut in cuts[first..].iter_mut().take_while(|c| c.end <= range.end) {
            cut.strength = cut.strength.min(cap);
        }
    }
}

/// The offsets of sorted `units` inside `[start, end)`.
fn count_in(units: &[usize], start: usize, end: usize) -> usize {
    let below = |pos: usize| units.partition_point(|&u| u < pos);
    below(end).saturating_sub(below(start))
}

impl Layout<'_> {
    /// The size of `[start, end)`, markup and syntax left out: its characters, or with
    /// token sizes its tokens.
    pub fn size(&self, start: usize, end: usize) -> usize {
        if let Some(units) = &self.units {
            return count_in(units, start, end);
        }
        let all = self.text[start..end].chars().count();
        if self.uncounted.is_empty() || start >= end {
            return all;
        }
        // Added before subtracting: the uncounted characters before `end` may outnumber
        // `all` (those before `start` count too), which overflows in a debug build.
        all + self.uncounted_chars_before(start) - self.uncounted_chars_before(end)
    }

    /// The uncounted characters before byte `pos` (a run holding `pos` counts in part).
    fn uncounted_chars_before(&self, pos: usize) -> usize {
        let i = self.uncounted.partition_point(|span| span.start < pos);
        let Some(last) = i.checked_sub(1) else {
            return 0;
        };
        let span = self.uncounted[last];
        let partial = self.text[span.start..span.end.min(pos)].chars().count();
        self.uncounted_chars[last] + partial
    }

    /// Whether byte `pos` lies inside a markup run.
    pub fn in_markup(&self, pos: usize) -> bool {
        let i = self.markup.partition_point(|m| m.span.end <= pos);
        self.markup.get(i).is_some_and(|m| m.span.start <= pos)
    }

    /// Whether `span` holds a non-whitespace character outside markup.
    pub fn visible(&self, span: Span) -> bool {
        let mut from = span.start;
        let first = self.markup.partition_point(|m| m.span.end <= span.start);
        for m in &self.markup[first..] {
            if m.span.start >= span.end {
                break;
            }
            if m.span.start > from && !self.text[from..m.span.start].trim().is_empty() {
                return true;
            }
            from = from.max(m.span.end);
        }
        from < span.end && !self.text[from..span.end].trim().is_empty()
    }

    fn longer_than(&self, start: usize, end: usize, limit: usize) -> bool {
        end - start > limit && self.size(start, end) > limit
    }

    /// The cuts strictly inside the trimmed `range` to pack pieces of at most `limit`
    /// characters: those of at least `floor` strength not held by a soft zone; then, inside
    /// a piece still longer than `limit`, the others, strongest first (see `fill`).
    pub fn candidates(&self, range: Span, limit: usize, floor: Strength) -> Vec<Cut> {
        let first = self.cuts.partition_point(|c| c.end <= range.start);
        let last = self
            .cuts
            .partition_point(|c| c.start < range.end)
            .max(first);
        let inside = &self.cuts[first..last];
        let mut out = Vec::new();
        let (mut piece_start, mut skipped_from) = (range.start, 0);
        for (i, cut) in inside.iter().enumerate() {
            if cut.strength >= floor && !cut.held {
                self.fill(
                    piece_start,
                    cut.end,
                    &inside[skipped_from..i],
                    limit,
                    &mut out,
                );
                out.push(*cut);
                piece_start = cut.start;
                skipped_from = i + 1;
            }
        }
        self.fill(
            piece_start,
            range.end,
            &inside[skipped_from..],
            limit,
            &mut out,
        );
        out
    }

    /// Adds to `out` what is needed inside the piece `[start, end)` if it is too long: the
    /// strongest of the `weaker` cuts first, then, inside pieces still too long, the next
    /// strongest, down to character bounds.
    fn fill(&self, start: usize, end: usize, weaker: &[Cut], limit: usize, out: &mut Vec<Cut>) {
        if !self.longer_than(start, end, limit) {
            return;
        }
        let Some(level) = weaker.iter().map(|c| c.strength).max() else {
            return self.char_cuts(start, end, limit, out);
        };
        let (mut from, mut skipped_from) = (start, 0);
        for (i, cut) in weaker.iter().enumerate() {
            if cut.strength == level {
                self.fill(from, cut.end, &weaker[skipped_from..i], limit, out);
                out.push(*cut);
                from = cut.start;
                skipped_from = i + 1;
            }
        }
        self.fill(from, end, &weaker[skipped_from..], limit, out);
    }

    /// Character bounds inside `[start, end)`, outside hard zones. Only every `limit / 64`-th
    /// is offered, which bounds the packer's work on huge unbroken runs.
    fn char_cuts(&self, start: usize, end: usize, limit: usize, out: &mut Vec<Cut>) {
        let step = (limit / 64).max(1);
        let mut prev: Option<char> = None;
        for (n, (i, c)) in self.text[start..end].char_indices().enumerate() {
            let pos = start + i;
            if let Some(p) = prev {
                let fits = n % step == 0 && !p.is_whitespace() && !c.is_whitespace();
                if fits && !splits(&self.hard, pos, pos) {
                    let cjk = crate::tokens::is_cjk(p) && crate::tokens::is_cjk(c);
                    let strength = if cjk { Strength::Word } else { Strength::Char };
                    out.push(Cut {
                        end: pos,
                        start: pos,
                        strength,
                        held: false,
                    });
                }
            }
            prev = Some(c);
        }
    }

    /// The byte `n` characters (or tokens) before `pos` (or the text start).
    pub fn back(&self, pos: usize, n: usize) -> usize {
        if let Some(units) = self.units.as_deref().filter(|_| n > 0) {
            let at = units.partition_point(|&u| u < pos);
            return at.checked_sub(n).map_or(0, |k| units[k]);
        }
        match n.checked_sub(1) {
            Some(skip) => self.text[..pos]
                .char_indices()
                .rev()
                .nth(skip)
                .map_or(0, |(i, _)| i),
            None => pos,
        }
    }

    /// The first word start strictly inside `(after, before)`: after whitespace, or between
    /// two CJK characters; never inside a code block or table.
    pub fn word_start(&self, after: usize, before: usize) -> Option<usize> {
        let mut chars = self.text[after..before].char_indices();
        let (_, mut prev) = chars.next()?;
        for (i, c) in chars {
            let pos = after + i;
            let cjk = crate::tokens::is_cjk(prev) && crate::tokens::is_cjk(c);
            if (prev.is_whitespace() || cjk) && !c.is_whitespace() && !splits(&self.hard, pos, pos)
            {
                return Some(pos);
            }
            prev = c;
        }
        None
    }

    /// The section holding byte `pos`.
    pub fn section_at(&self, pos: usize) -> Option<&Section> {
        let i = self.sections.partition_point(|s| s.span.start <= pos);
        i.checked_sub(1).map(|i| &self.sections[i])
    }

    /// Whether `span` contains a hard zone (a code block or table).
    #[cfg(test)]
    pub fn holds_hard(&self, span: Span) -> bool {
        self.hard
            .iter()
            .any(|z| span.start <= z.start && z.end <= span.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_trimmed_gaps_with_the_strongest_strength() {
        let text = "ab  cd\n\nef";
        let mut b = Builder::new(text);
        b.cut(2, Strength::Word);
        b.cut(3, Strength::Word);
        b.cut(6, Strength::Block);
        b.cut(7, Strength::Word);
        let layout = b.build();
        let got: Vec<(usize, usize, Strength)> = layout
            .cuts
            .iter()
            .map(|c| (c.end, c.start, c.strength))
            .collect();
        assert_eq!(got, vec![(2, 4, Strength::Word), (6, 8, Strength::Block)]);
    }

    #[test]
    fn hard_zones_drop_cuts_and_soft_zones_hold_them() {
        let text = "aa bb cc dd";
        let mut b = Builder::new(text);
        for pos in [2, 5, 8] {
            b.cut(pos, Strength::Word);
        }
        b.hard(3, 8);
        b.soft(6, 11);
        let layout = b.build();
        let got: Vec<(usize, bool)> = layout.cuts.iter().map(|c| (c.end, c.held)).collect();
        assert_eq!(got, vec![(2, false), (8, true)]);
    }

    #[test]
    fn candidates_fall_back_to_held_cuts_then_chars() {
        let text = "aaaa bbbb";
        let mut b = Builder::new(text);
        b.cut(4, Strength::Word);
        b.soft(0, 9);
        let layout = b.build();
        let all = Span { start: 0, end: 9 };
        assert!(layout.candidates(all, 9, Strength::Word).is_empty());
        assert_eq!(layout.candidates(all, 5, Strength::Word).len(), 1);
        // "aaaa" > 2: char bounds inside each word.
        let fine = layout.candidates(all, 2, Strength::Word);
        assert!(fine
            .iter()
            .any(|c| c.strength == Strength::Char && c.end == 2));
    }

    #[test]
    fn weaker_cuts_come_back_strongest_first() {
        let text = "aa bb, cc dd";
        let mut b = Builder::new(text);
        b.cut(2, Strength::Word);
        b.cut(6, Strength::Clause);
        b.cut(9, Strength::Word);
        let layout = b.build();
        let all = Span {
            start: 0,
            end: text.len(),
        };
        let ends = |limit| -> Vec<usize> {
            let cuts = layout.candidates(all, limit, Strength::Block);
            cuts.iter().map(|c| c.end).collect()
        };
        assert_eq!(ends(12), Vec::<usize>::new());
        assert_eq!(ends(7), vec![6]);
        assert_eq!(ends(4), vec![2, 6, 9]);
    }

    #[test]
    fn empty_sections_join_the_next() {
        let text = "# A\n## B\nb\n# C";
        let mut b = Builder::new(text);
        b.heading(0, 3, 1, "A".into());
        b.heading(4, 8, 2, "B".into());
        b.heading(11, 14, 1, "C".into());
        let layout = b.build();
        let got: Vec<(&str, Vec<String>)> = layout
            .sections
            .iter()
            .map(|s| (&text[s.span.start..s.span.end], s.path.clone()))
            .collect();
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![("# A\n## B\nb", owned(&["A", "B"])), ("# C", owned(&["C"]))]
        );
    }

    #[test]
    fn sections_follow_the_heading_tree() {
        let text = "intro\n# A\na\n## B\nb\n# C\nc";
        let mut b = Builder::new(text);
        b.heading(6, 9, 1, "A".into());
        b.heading(12, 16, 2, "B".into());
        b.heading(19, 22, 1, "C".into());
        let layout = b.build();
        let paths: Vec<Vec<String>> = layout.sections.iter().map(|s| s.path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                vec![],
                vec!["A".to_string()],
                vec!["A".into(), "B".into()],
                vec!["C".into()]
            ]
        );
        assert_eq!(
            &text[layout.sections[2].span.start..layout.sections[2].span.end],
            "## B\nb"
        );
    }
}
