//! Structure-aware children of one range, with short sibling sections packed together: a
//! page of many short sections (a heading and a sentence or two each, as GOV.UK guidance
//! is) would otherwise give as many tiny children, with little for an embedder to match.
//!
//! The sections form a tree by their headings. A section's own text (up to its first
//! subsection, or after a cut table) is one *item*, and so is each of its subsections with
//! everything below it, when that fits the target and lies whole inside the range.
//! Consecutive items of one section are packed into children of at most the target (the
//! cheapest packing, as `pack.rs` costs chunks), never cut. In [`EmbedForm::Sections`] only
//! short items (under [`SHORT`] of the target) are: a longer item is a child of its own,
//! since a vector blending it with its neighbours matched worse for the evidence it
//! returned (`docs/benchmarks/chunking.md`, "The heading path embedded"). A subsection
//! too long is opened and its own items packed the same way; a single section too long is
//! cut by `pack::structure`. So a child holding several sections holds whole sections of one
//! parent only: never part of a section, never the end of one subtree with the next one's
//! start, never across the parent's end.
//!
//! Its section path is the longest common prefix of its sections' paths: the parent whose
//! text and subsections it holds (their headings are in its text).

use super::layout::{Layout, Section};
use super::pack;
use super::pieces::Span;
use super::spec::EmbedForm;

/// The share of a child's limit under which an item is short enough to share a child with
/// its siblings in [`EmbedForm::Sections`], as a fraction: 2/5, the 200 characters of 500 that issue 14 called short.
const SHORT: (usize, usize) = (2, 5);

/// A child: its span, whether it is longer than the target (a code block or table kept
/// whole), and its section path.
pub(crate) struct Child {
    pub span: Span,
    pub oversized: bool,
    pub path: Vec<String>,
}

/// The children of the trimmed, non-empty `range`: with `pack`, sections packed as that
/// form packs them, up to `target - overlap` characters (as `pack::structure` packs the
/// cores it then overlaps); a section too long (every section without `pack`) cut by
/// `pack::structure` with `overlap`.
pub(crate) fn children(
    layout: &Layout<'_>,
    range: Span,
    target: usize,
    overlap: usize,
    pack: Option<EmbedForm>,
) -> Vec<Child> {
    let sections = &layout.sections;
    let first = sections.partition_point(|s| s.span.end <= range.start);
    let end = first
        + sections[first..]
            .iter()
            .take_while(|s| s.span.start < range.end)
            .count();
    let target = target.max(1);
    let mut packer = Packer {
        layout,
        range,
        target,
        overlap,
        limit: target - overlap.min(target / 2),
        short_only: pack == Some(EmbedForm::Sections),
        out: Vec::new(),
    };
    if pack.is_some() {
        packer.node(first, end, 0);
    } else {
        (first..end).for_each(|i| packer.cut(i));
    }
    packer.out
}

struct Packer<'l, 'a> {
    layout: &'l Layout<'a>,
    range: Span,
    target: usize,
    overlap: usize,
    /// The most characters of a child holding whole sections.
    limit: usize,
    /// Only items under [`SHORT`] of the limit share a child.
    short_only: bool,
    out: Vec<Child>,
}

impl Packer<'_, '_> {
    fn sections(&self) -> &[Section] {
        &self.layout.sections
    }

    /// Packs the sections `[from, to)`, which share the first `depth` headings of their
    /// paths.
    fn node(&mut self, from: usize, to: usize, depth: usize) {
        let mut items = Vec::new();
        let mut i = from;
        while i < to {
            let end = if self.sections()[i].path.len() > depth {
                self.subtree_end(i, depth)
            } else {
                i + 1
            };
            if self.packable(i, end, to, depth) {
                items.push((i, end));
            } else {
                self.pack(&std::mem::take(&mut items));
                if end.min(to) - i == 1 {
                    self.cut(i);
                } else {
                    self.node(i, end.min(to), depth + 1);
                }
            }
            i = end;
        }
        self.pack(&items);
    }

    /// The end of the subsection at `depth + 1` starting with section `i`: the first section
    /// after it that is not below it (it may lie past the range).
    fn subtree_end(&self, i: usize, depth: usize) -> usize {
        let sections = self.sections();
        let inside = |s: &Section| s.path.len() > depth && s.opens.is_none_or(|d| d > depth + 1);
        i + 1 + sections[i + 1..].iter().take_while(|s| inside(s)).count()
    }

    /// Whether the sections `[i, end)` are one item that packing may take whole: inside the
    /// range, starting where its heading opens (not in the middle of a subsection), and
    /// short enough.
    fn packable(&self, i: usize, end: usize, to: usize, depth: usize) -> bool {
        let sections = self.sections();
        let (first, last) = (&sections[i], &sections[end - 1]);
        let own = first.path.len() == depth;
        let opens = first.opens.is_some_and(|d| d <= depth + 1);
        end <= to
            && (own || opens)
            && first.span.start >= self.range.start
            && last.span.end <= self.range.end
            && self.layout.size(first.span.start, last.span.end) <= self.limit
    }

    /// One section (or its part inside the range) too long to pack with others.
    fn cut(&mut self, i: usize) {
        let layout = self.layout;
        let s = &layout.sections[i];
        let span = Span {
            start: s.span.start.max(self.range.start),
            end: s.span.end.min(self.range.end),
        };
        let pieces = pack::structure(self.layout, span, self.target, self.overlap);
        self.out
            .extend(pieces.into_iter().map(|(span, oversized)| Child {
                span,
                oversized,
                path: s.path.clone(),
            }));
    }

    /// Packs consecutive whole items (section ranges) into children of at most `limit`
    /// characters, at the least cost (`pack::chunk_cost`).
    fn pack(&mut self, items: &[(usize, usize)]) {
        let Some(&(first, _)) = items.first() else {
            return;
        };
        let layout = self.layout;
        let sections = &layout.sections;
        let span = |&(i, end): &(usize, usize)| Span {
            start: sections[i].span.start,
            end: sections[end - 1].span.end,
        };
        // Characters from the first item's start to each item's start and end.
        let (mut at, mut sum) = (sections[first].span.start, 0);
        let (mut starts, mut ends) = (Vec::new(), Vec::new());
        for s in items.iter().map(span) {
            sum += layout.size(at, s.start);
            starts.push(sum);
            sum += layout.size(s.start, s.end);
            ends.push(sum);
            at = s.end;
        }
        let n = items.len();
        let mut best = vec![u64::MAX; n + 1];
        let mut from = vec![0; n + 1];
        best[0] = 0;
        for to in 1..=n {
            for i in (0..to).rev() {
                let size = ends[to - 1] - starts[i];
                let long = |k: usize| {
                    self.short_only && (ends[k] - starts[k]) * SHORT.1 >= self.limit * SHORT.0
                };
                if i + 1 < to && (size > self.limit || long(i) || long(to - 1)) {
                    break;
                }
                let cost = best[i].saturating_add(pack::chunk_cost(size, self.limit));
                if cost < best[to] {
                    best[to] = cost;
                    from[to] = i;
                }
            }
        }
        let mut bounds = vec![n];
        while let Some(&at) = bounds.last().filter(|&&at| at > 0) {
            bounds.push(from[at]);
        }
        bounds.reverse();
        let children: Vec<Child> = bounds
            .windows(2)
            .map(|w| {
                let (a, b) = (items[w[0]], items[w[1] - 1]);
                Child {
                    span: Span {
                        start: span(&a).start,
                        end: span(&b).end,
                    },
                    oversized: false,
                    path: common_path(&sections[a.0..b.1]),
                }
            })
            .collect();
        self.out.extend(children);
    }
}

/// The longest common prefix of the sections' paths. A heading that opens in a later
/// section is a new one even when its title repeats an earlier one's, so the prefix ends
/// above it.
fn common_path(sections: &[Section]) -> Vec<String> {
    let Some((first, rest)) = sections.split_first() else {
        return Vec::new();
    };
    let mut len = first.path.len();
    for s in rest {
        len = first.path[..len]
            .iter()
            .zip(&s.path)
            .take_while(|(a, b)| a == b)
            .count();
        if let Some(depth) = s.opens {
            len = len.min(depth.saturating_sub(1));
        }
    }
    first.path[..len].to_vec()
}
