//! What the content streams give the layout: each page's glyphs, placed on the page.

/// One shown character (or the characters one code maps to), in page space: points, `y` up.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Glyph {
    /// The left end of its advance.
    pub x: f64,
    /// Its baseline.
    pub y: f64,
    /// Its advance (an estimate when the font gives no widths).
    pub width: f64,
    /// The font size in page space.
    pub size: f64,
    /// Its text: one space for any white space; never a control character.
    pub text: String,
    /// Whether its font is monospaced (Courier and the like): code, not prose.
    pub mono: bool,
}

/// A vertical line drawn on the page (a stroked line, a rectangle's side, a thin filled
/// rectangle), in page space: what bounds a ruled table's cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rule {
    pub x: f64,
    pub bottom: f64,
    pub top: f64,
}

/// One page's glyphs in content-stream order, and its vertical rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Page {
    /// The glyphs, each with finite coordinates and a positive size.
    pub glyphs: Vec<Glyph>,
    /// The vertical lines drawn, each with finite coordinates.
    pub rules: Vec<Rule>,
}
