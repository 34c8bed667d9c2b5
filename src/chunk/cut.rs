//! Cutting one document: read it into a block tree, lay it out, cut parents, then the
//! children inside each parent.

use super::layout::Layout;
use super::pieces::{ChildPiece, Chunked, ParentPiece, Span};
use super::spec::{ChildStrategy, ChunkSpec, SourceFormat};
use super::tree::Tree;
use super::tree_layout;
use super::{fixed, pack, parents, readers};

/// Cuts one document into parents and children as `spec` says. Never panics, and the same
/// input always gives the same output.
pub fn chunk_document(text: &str, format: SourceFormat, spec: &ChunkSpec) -> Chunked {
    let tree = readers::read(text, format);
    chunk_tree(text, &tree, spec)
}

/// Cuts a document that a reader has read into `tree` (see [`readers::read`]). Every chunking
/// strategy works on any tree, whatever its format.
pub fn chunk_tree(text: &str, tree: &Tree, spec: &ChunkSpec) -> Chunked {
    let layout = tree_layout::from_tree(text, tree);
    let mut out = Chunked::default();
    match parents::spans(&layout, spec.parent) {
        Some(parents) => {
            for (index, span) in parents.into_iter().enumerate() {
                out.parents.push(ParentPiece {
                    span,
                    section_path: path_at(&layout, span.start),
                });
                for (span, oversized) in children(&layout, spec.child, span) {
                    let section_path = path_at(&layout, span.start);
                    out.children.push(ChildPiece {
                        span,
                        parent: index,
                        section_path,
                        oversized,
                    });
                }
            }
        }
        None => {
            let regions = layout.regions.iter();
            for (span, oversized) in regions.flat_map(|r| children(&layout, spec.child, *r)) {
                let section_path = path_at(&layout, span.start);
                let parent = out.parents.len();
                out.parents.push(ParentPiece {
                    span,
                    section_path: section_path.clone(),
                });
                out.children.push(ChildPiece {
                    span,
                    parent,
                    section_path,
                    oversized,
                });
            }
        }
    }
    out
}

/// The children inside `range` (a parent, or the whole content), with their oversized flag.
/// Structure-aware children never cross a section bound; fixed windows ignore structure.
fn children(layout: &Layout<'_>, strategy: ChildStrategy, range: Span) -> Vec<(Span, bool)> {
    match strategy {
        ChildStrategy::Structure { target, overlap } => layout
            .split_at_sections(range)
            .into_iter()
            .flat_map(|r| pack::structure(layout, r, target, overlap))
            .collect(),
        ChildStrategy::Fixed {
            size,
            overlap,
            unit,
        } => fixed::windows(layout.text, range, size, overlap, unit)
            .into_iter()
            .map(|s| (s, false))
            .collect(),
    }
}

fn path_at(layout: &Layout<'_>, pos: usize) -> Vec<String> {
    layout
        .section_at(pos)
        .map(|s| s.path.clone())
        .unwrap_or_default()
}

/// The text to embed for a child: the first `depth` headings of its section path joined by
/// " > ", a blank line, then the child's text. The text shown to a model has no such prefix.
pub fn embed_text(section_path: &[String], text: &str, depth: usize) -> String {
    let headings = &section_path[..depth.min(section_path.len())];
    if headings.is_empty() {
        return text.to_string();
    }
    let mut out = headings.join(" > ");
    out.push_str("\n\n");
    out.push_str(text);
    out
}
