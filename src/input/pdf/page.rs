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
}

/// One page's glyphs in content-stream order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Page {
    /// The glyphs, each with finite coordinates and a positive size.
    pub glyphs: Vec<Glyph>,
}
