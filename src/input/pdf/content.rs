//! The text of a PDF's pages, placed: lopdf parses the file, its streams and its fonts'
//! encodings; this interprets each page's content stream (text state, text and graphics
//! matrices, form XObjects) to place every shown glyph on the page.

use std::collections::HashMap;

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Dictionary, Document, Encoding, LoadOptions, Object, ObjectId};

use super::page::{Glyph, Page, Rule};
use super::PdfError;

/// The most bytes one stream may inflate to (lopdf's own default is 256 MiB).
const MAX_STREAM: usize = 64 << 20;
/// The most glyphs kept per page: a small content stream can show text without end.
const MAX_GLYPHS: usize = 200_000;
/// The most nested form XObjects followed (forms may draw themselves).
const MAX_FORM_DEPTH: usize = 8;
/// The advance of a glyph whose font gives no width, in text space units (1/1000 em).
const DEFAULT_WIDTH: f64 = 500.0;
/// The most vertical rules kept per page.
const MAX_RULES: usize = 50_000;
/// Parts of the names of monospaced fonts (lowercase), for fonts whose descriptor does not
/// say they are (`mono` but not `monotype`: Monotype Corsiva is no code font; no bare
/// `code`: Arial Unicode is none either).
const MONOSPACE_NAMES: [&str; 10] = [
    "courier",
    "mono",
    "consol",
    "typewriter",
    "cmtt",
    "menlo",
    "monaco",
    "sourcecode",
    "firacode",
    "cascadiacode",
];

/// The placed glyphs of every page of the PDF file `bytes`, in page order.
pub(super) fn pages(bytes: &[u8]) -> Result<Vec<Page>, PdfError> {
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_STREAM),
        ..LoadOptions::default()
    };
    let doc = Document::load_mem_with_options(bytes, options).map_err(|e| PdfError::Malformed {
        reason: e.to_string(),
    })?;
    // lopdf decrypts files whose user password is empty; the others stay encrypted.
    if doc.is_encrypted() {
        return Err(PdfError::Encrypted);
    }
    Ok(doc
        .page_iter()
        .map(|id| {
            let mut page = Page::default();
            if let Ok(content) = doc.get_page_content_with_limit(id, MAX_STREAM) {
                let resources = page_resources(&doc, id);
                let mut run = Run::new(&doc, &mut page);
                run.stream(&content, &resources, Matrix::IDENTITY, 0);
            }
            page
        })
        .collect())
}

/// A page's resource dictionaries, nearest first (its own, then inherited ones).
fn page_resources(doc: &Document, id: ObjectId) -> Vec<&Dictionary> {
    let Ok((own, inherited)) = doc.get_page_resources(id) else {
        return Vec::new();
    };
    own.into_iter()
        .chain(
            inherited
                .into_iter()
                .filter_map(|i| doc.get_dictionary(i).ok()),
        )
        .collect()
}

/// An affine matrix `[a b c d e f]`, row-vector convention as in the PDF specification.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Matrix([f64; 6]);

impl Matrix {
    const IDENTITY: Matrix = Matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    fn translate(x: f64, y: f64) -> Matrix {
        Matrix([1.0, 0.0, 0.0, 1.0, x, y])
    }

    /// `self` then `next`.
    fn then(self, next: Matrix) -> Matrix {
        let [a, b, c, d, e, f] = self.0;
        let [na, nb, nc, nd, ne, nf] = next.0;
        Matrix([
            a * na + b * nc,
            a * nb + b * nd,
            c * na + d * nc,
            c * nb + d * nd,
            e * na + f * nc + ne,
            e * nb + f * nd + nf,
        ])
    }

    /// The point `(x, y)` mapped by `self`.
    fn apply(self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.0;
        (a * x + c * y + e, b * x + d * y + f)
    }

    fn from_operands(operands: &[Object]) -> Option<Matrix> {
        let values: Vec<f64> = operands.iter().filter_map(number).collect();
        let m: [f64; 6] = values.try_into().ok()?;
        m.iter().all(|v| v.is_finite()).then_some(Matrix(m))
    }
}

fn number(object: &Object) -> Option<f64> {
    match object {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

/// A font as far as placing its glyphs needs: how codes map to text and how wide they are.
struct Font<'a> {
    encoding: Option<Encoding<'a>>,
    /// Each code's text, where the encoding has a `/Differences` array (read here, not by
    /// lopdf: see [`differences`]).
    table: Option<Vec<String>>,
    mono: bool,
    /// Composite (Type0) fonts show two-byte codes.
    two_byte: bool,
    widths: HashMap<u32, f64>,
    default_width: f64,
}

impl<'a> Font<'a> {
    fn new(doc: &'a Document, dict: &'a Dictionary) -> Font<'a> {
        let table = differences(doc, dict);
        let encoding = match table {
            Some(_) => None,
            None => dict.get_font_encoding_with_limit(doc, MAX_STREAM).ok(),
        };
        let two_byte = dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(&b"Type0"[..]);
        let mut widths = HashMap::new();
        let mut default_width = DEFAULT_WIDTH;
        let array = |d: &'a Dictionary, key: &[u8]| {
            d.get_deref(key, doc)
                .and_then(Object::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        if two_byte {
            let descendant = array(dict, b"DescendantFonts")
                .first()
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_dict().ok());
            if let Some(cid) = descendant {
                if let Some(dw) = cid.get_deref(b"DW", doc).ok().and_then(number) {
                    default_width = dw;
                }
                cid_widths(array(cid, b"W"), &mut widths);
            }
        } else {
            let first = dict.get_deref(b"FirstChar", doc).ok().and_then(number);
            let first = first.map_or(0, |f| f.clamp(0.0, 255.0) as u32);
            for (code, w) in (first..).zip(array(dict, b"Widths")) {
                if let Some(w) = number(w) {
                    widths.insert(code, w);
                }
            }
        }
        Font {
            encoding,
            table,
            mono: monospace(doc, dict),
            two_byte,
            widths,
            default_width,
        }
    }

    /// The codes of a shown string, each with its bytes.
    fn codes<'s>(&self, bytes: &'s [u8]) -> impl Iterator<Item = (u32, &'s [u8])> {
        let step = if self.two_byte { 2 } else { 1 };
        bytes
            .chunks(step)
            .map(|c| (c.iter().fold(0u32, |v, &b| (v << 8) | u32::from(b)), c))
    }

    /// The text of one code: control characters dropped, white space one space.
    fn text(&self, code: u32, bytes: &[u8]) -> String {
        let decoded = match (&self.table, &self.encoding) {
            (Some(table), _) => usize::try_from(code)
                .ok()
                .and_then(|c| table.get(c))
                .cloned(),
            (None, Some(encoding)) => encoding.bytes_to_string(bytes).ok(),
            (None, None) => None,
        };
        // A simple font with an encoding lopdf does not know is read as Latin-1.
        let decoded = decoded.unwrap_or_else(|| match (self.two_byte, char::from_u32(code)) {
            (false, Some(c)) => c.to_string(),
            _ => String::new(),
        });
        if decoded.chars().all(char::is_whitespace) && !decoded.is_empty() {
            return " ".to_string();
        }
        let kept = decoded
            .chars()
            .filter(|c| !c.is_control() && !c.is_whitespace() && *c != '\u{fffd}');
        fold_ligatures(kept)
    }

    fn width(&self, code: u32) -> f64 {
        let w = self
            .widths
            .get(&code)
            .copied()
            .unwrap_or(self.default_width);
        if w.is_finite() {
            w.clamp(0.0, 10_000.0)
        } else {
            DEFAULT_WIDTH
        }
    }
}

/// Each code's text for a simple font whose `/Encoding` is a dictionary with a
/// `/Differences` array. lopdf reads such an encoding whole or not at all: one glyph name it
/// does not know (`.notdef`, which groff writes for unused codes) makes it read the font in
/// the standard encoding, losing every glyph the array named (groff's ligatures among
/// them). Here each name is read on its own (through lopdf's glyph list), the base
/// encoding's text kept where the array names nothing.
fn differences(doc: &Document, font: &Dictionary) -> Option<Vec<String>> {
    let encoding = font.get_deref(b"Encoding", doc).ok()?.as_dict().ok()?;
    let array = encoding
        .get_deref(b"Differences", doc)
        .ok()?
        .as_array()
        .ok()?;
    let base = encoding
        .get(b"BaseEncoding")
        .and_then(Object::as_name)
        .unwrap_or(b"StandardEncoding");
    // The text of `code` in a font of encoding `encoding` (a name or a dictionary).
    let decode = |encoding: Object, code: u8| {
        let font = dictionary! { "Type" => "Font", "Encoding" => encoding };
        let text = font
            .get_font_encoding(doc)
            .and_then(|e| e.bytes_to_string(&[code]));
        text.unwrap_or_default()
    };
    let mut table: Vec<String> = (0..=255u8)
        .map(|code| decode(Object::Name(base.to_vec()), code))
        .collect();
    // lopdf reads an encoding with an unknown name in the standard one, which maps code 0
    // to nothing: so a name at code 0 that gives text is a name lopdf knows.
    let glyph = |name: &[u8]| {
        let one = vec![Object::Integer(0), Object::Name(name.to_vec())];
        let known = decode(Object::Dictionary(dictionary! { "Differences" => one }), 0);
        if known.is_empty() {
            unicode_name(name).map(String::from).unwrap_or_default()
        } else {
            known
        }
    };
    let mut code: Option<usize> = None;
    for item in array {
        match item {
            Object::Integer(c) => code = usize::try_from(*c).ok().filter(|&c| c < 256),
            Object::Name(name) => {
                if let Some(slot) = code.and_then(|c| table.get_mut(c)) {
                    *slot = glyph(name);
                }
                code = code.map(|c| c + 1);
            }
            _ => return None,
        }
    }
    Some(table)
}

/// The character of a glyph named by its code point: `uni00E9`, `u1F600`.
fn unicode_name(name: &[u8]) -> Option<char> {
    let name = std::str::from_utf8(name).ok()?;
    let hex = name
        .strip_prefix("uni")
        .filter(|h| h.len() == 4)
        .or_else(|| {
            name.strip_prefix('u')
                .filter(|h| (4..=6).contains(&h.len()))
        })?;
    char::from_u32(u32::from_str_radix(hex, 16).ok()?)
}

/// Whether a font is monospaced: its descriptor's FixedPitch flag (a composite font's is
/// on its descendant), or its name.
fn monospace(doc: &Document, font: &Dictionary) -> bool {
    let descendant = font
        .get_deref(b"DescendantFonts", doc)
        .and_then(Object::as_array)
        .ok()
        .and_then(|a| a.first())
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok());
    let fixed_pitch = [Some(font), descendant].into_iter().flatten().any(|d| {
        d.get_deref(b"FontDescriptor", doc)
            .and_then(Object::as_dict)
            .and_then(|fd| fd.get(b"Flags"))
            .and_then(Object::as_i64)
            .is_ok_and(|flags| flags & 1 == 1)
    });
    let name = font
        .get(b"BaseFont")
        .and_then(Object::as_name)
        .map(|n| String::from_utf8_lossy(n).to_lowercase())
        .unwrap_or_default();
    let name = name.replace("monotype", "");
    fixed_pitch || MONOSPACE_NAMES.iter().any(|m| name.contains(m))
}

/// A composite font's `/W` array: `c [w1 w2 …]` or `c_first c_last w`.
fn cid_widths(w: &[Object], out: &mut HashMap<u32, f64>) {
    let mut i = 0;
    while i < w.len() {
        let Some(first) = w.get(i).and_then(number) else {
            return;
        };
        let first = first.clamp(0.0, f64::from(u16::MAX)) as u32;
        match (w.get(i + 1), w.get(i + 2)) {
            (Some(Object::Array(list)), _) => {
                for (code, width) in (first..).zip(list.iter().filter_map(number)) {
                    out.insert(code, width);
                }
                i += 2;
            }
            (Some(last), Some(width)) => {
                let (Some(last), Some(width)) = (number(last), number(width)) else {
                    return;
                };
                let last = last.clamp(0.0, f64::from(u16::MAX)) as u32;
                for code in first..=last.min(first.saturating_add(u32::from(u16::MAX))) {
                    out.insert(code, width);
                }
                i += 3;
            }
            _ => return,
        }
    }
}

/// The path being built, in page space: only its vertical segments are kept (clipping paths
/// and paths never painted are dropped).
#[derive(Default)]
struct Path {
    at: Option<(f64, f64)>,
    start: Option<(f64, f64)>,
    rules: Vec<Rule>,
}

impl Path {
    /// Moves to `to`, drawing a segment from the current point if `line`.
    fn to(&mut self, to: (f64, f64), line: bool) {
        match (line, self.at) {
            (true, Some(from)) => self.segment(from, to),
            (false, _) | (true, None) => self.start = Some(to),
        }
        self.at = Some(to);
    }

    /// Closes the subpath: a segment back to its start.
    fn close(&mut self) {
        if let (Some(from), Some(start)) = (self.at, self.start) {
            self.segment(from, start);
            self.at = Some(start);
        }
    }

    fn segment(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
        let finite = [x0, y0, x1, y1].iter().all(|v| v.is_finite());
        let vertical = (x0 - x1).abs() < 0.5 && (y0 - y1).abs() >= 1.0;
        if finite && vertical && self.rules.len() < MAX_RULES {
            self.rules.push(Rule {
                x: (x0 + x1) / 2.0,
                bottom: y0.min(y1),
                top: y0.max(y1),
            });
        }
    }
}

/// The graphics state the text placement depends on (saved by `q`, restored by `Q`).
#[derive(Clone, Copy)]
struct State {
    ctm: Matrix,
    char_spacing: f64,
    word_spacing: f64,
    /// Horizontal scaling, as a fraction.
    scale: f64,
    leading: f64,
    rise: f64,
    size: f64,
    /// The current font: its index in [`Run::fonts`].
    font: Option<usize>,
}

/// Interpreting the content streams of one page.
struct Run<'a, 'p> {
    doc: &'a Document,
    page: &'p mut Page,
    /// Fonts by the object that holds them, loaded once per page.
    fonts: Vec<Font<'a>>,
    font_ids: HashMap<*const Dictionary, usize>,
}

impl<'a, 'p> Run<'a, 'p> {
    fn new(doc: &'a Document, page: &'p mut Page) -> Self {
        Run {
            doc,
            page,
            fonts: Vec::new(),
            font_ids: HashMap::new(),
        }
    }

    /// Shows the text of one content stream drawn with `ctm` under `resources`.
    fn stream(&mut self, content: &[u8], resources: &[&'a Dictionary], ctm: Matrix, depth: usize) {
        let mut state = State {
            ctm,
            char_spacing: 0.0,
            word_spacing: 0.0,
            scale: 1.0,
            leading: 0.0,
            rise: 0.0,
            size: 0.0,
            font: None,
        };
        let mut saved: Vec<State> = Vec::new();
        let (mut tm, mut tlm) = (Matrix::IDENTITY, Matrix::IDENTITY);
        let mut path = Path::default();
        // A stream damaged part way still gives the text before the damage.
        for op in Content::decode_iter(content).map_while(Result::ok) {
            if self.page.glyphs.len() >= MAX_GLYPHS {
                return;
            }
            let Operation { operator, operands } = op;
            let num = |i: usize| operands.get(i).and_then(number).filter(|v| v.is_finite());
            match operator.as_str() {
                "q" if saved.len() < 256 => saved.push(state),
                "Q" => state = saved.pop().unwrap_or(state),
                "cm" => {
                    if let Some(m) = Matrix::from_operands(&operands) {
                        state.ctm = m.then(state.ctm);
                    }
                }
                "BT" => (tm, tlm) = (Matrix::IDENTITY, Matrix::IDENTITY),
                "m" | "l" => {
                    if let (Some(x), Some(y)) = (num(0), num(1)) {
                        let to = state.ctm.apply(x, y);
                        path.to(to, operator == "l");
                    }
                }
                "re" => {
                    if let (Some(x), Some(y), Some(w), Some(h)) = (num(0), num(1), num(2), num(3)) {
                        for x in [x, x + w] {
                            path.to(state.ctm.apply(x, y), false);
                            path.to(state.ctm.apply(x, y + h), true);
                        }
                        path.to(state.ctm.apply(x, y), false);
                    }
                }
                "c" | "v" | "y" => {
                    let end = operands.len().saturating_sub(2);
                    if let (Some(x), Some(y)) = (num(end), num(end + 1)) {
                        path.to(state.ctm.apply(x, y), false);
                    }
                }
                "h" => path.close(),
                "s" | "b" | "b*" | "S" | "f" | "F" | "f*" | "B" | "B*" => {
                    if matches!(operator.as_str(), "s" | "b" | "b*") {
                        path.close();
                    }
                    let room = MAX_RULES.saturating_sub(self.page.rules.len());
                    let drawn = std::mem::take(&mut path).rules;
                    self.page.rules.extend(drawn.into_iter().take(room));
                }
                "n" => path = Path::default(),
                "Tf" => {
                    let name = operands.first().and_then(|o| o.as_name().ok());
                    state.font = name.and_then(|n| self.font(resources, n));
                    state.size = num(1).unwrap_or(0.0);
                }
                "Tc" => state.char_spacing = num(0).unwrap_or(0.0),
                "Tw" => state.word_spacing = num(0).unwrap_or(0.0),
                "Tz" => state.scale = num(0).unwrap_or(100.0) / 100.0,
                "TL" => state.leading = num(0).unwrap_or(0.0),
                "Ts" => state.rise = num(0).unwrap_or(0.0),
                "Td" | "TD" => {
                    let (x, y) = (num(0).unwrap_or(0.0), num(1).unwrap_or(0.0));
                    if operator == "TD" {
                        state.leading = -y;
                    }
                    tlm = Matrix::translate(x, y).then(tlm);
                    tm = tlm;
                }
                "Tm" => {
                    if let Some(m) = Matrix::from_operands(&operands) {
                        (tm, tlm) = (m, m);
                    }
                }
                "T*" => {
                    tlm = Matrix::translate(0.0, -state.leading).then(tlm);
                    tm = tlm;
                }
                "Tj" | "'" | "\"" => {
                    if operator != "Tj" {
                        tlm = Matrix::translate(0.0, -state.leading).then(tlm);
                        tm = tlm;
                    }
                    if operator == "\"" {
                        state.word_spacing = num(0).unwrap_or(state.word_spacing);
                        state.char_spacing = num(1).unwrap_or(state.char_spacing);
                    }
                    if let Some(Ok(bytes)) = operands.last().map(Object::as_str) {
                        self.show(&state, &mut tm, bytes);
                    }
                }
                "TJ" => {
                    let items = operands.first().and_then(|o| o.as_array().ok());
                    for item in items.map(Vec::as_slice).unwrap_or_default() {
                        match item {
                            Object::String(bytes, _) => self.show(&state, &mut tm, bytes),
                            other => {
                                let shift = number(other).filter(|v| v.is_finite()).unwrap_or(0.0);
                                let tx = -shift / 1000.0 * state.size * state.scale;
                                tm = Matrix::translate(tx, 0.0).then(tm);
                            }
                        }
                    }
                }
                "Do" if depth < MAX_FORM_DEPTH => {
                    if let Some(name) = operands.first().and_then(|o| o.as_name().ok()) {
                        self.form(resources, name, state.ctm, depth);
                    }
                }
                _ => {}
            }
        }
    }

    /// Draws the form XObject `name` (images and other XObjects hold no text).
    fn form(&mut self, resources: &[&'a Dictionary], name: &[u8], ctm: Matrix, depth: usize) {
        let doc = self.doc;
        let Some(stream) = resources.iter().find_map(|r| {
            let xobjects = r
                .get_deref(b"XObject", doc)
                .and_then(Object::as_dict)
                .ok()?;
            let (_, object) = doc.dereference(xobjects.get(name).ok()?).ok()?;
            object.as_stream().ok()
        }) else {
            return;
        };
        if stream.dict.get(b"Subtype").and_then(Object::as_name).ok() != Some(&b"Form"[..]) {
            return;
        }
        let Ok(content) = stream.get_plain_content_with_limit(MAX_STREAM) else {
            return;
        };
        let matrix = stream
            .dict
            .get(b"Matrix")
            .and_then(Object::as_array)
            .ok()
            .and_then(|m| Matrix::from_operands(m.as_slice()))
            .unwrap_or(Matrix::IDENTITY);
        // A form without resources of its own uses its page's.
        let own = stream
            .dict
            .get_deref(b"Resources", doc)
            .and_then(Object::as_dict);
        let inner: Vec<&Dictionary> = own
            .ok()
            .into_iter()
            .chain(resources.iter().copied())
            .collect();
        self.stream(&content, &inner, matrix.then(ctm), depth + 1);
    }

    /// The index of the font `name` of `resources`, loaded on first use.
    fn font(&mut self, resources: &[&'a Dictionary], name: &[u8]) -> Option<usize> {
        let doc = self.doc;
        let dict = resources.iter().find_map(|r| {
            let fonts = r.get_deref(b"Font", doc).and_then(Object::as_dict).ok()?;
            let (_, object) = doc.dereference(fonts.get(name).ok()?).ok()?;
            object.as_dict().ok()
        })?;
        let key: *const Dictionary = dict;
        if let Some(&i) = self.font_ids.get(&key) {
            return Some(i);
        }
        self.fonts.push(Font::new(doc, dict));
        self.font_ids.insert(key, self.fonts.len() - 1);
        Some(self.fonts.len() - 1)
    }

    /// Places the glyphs of one shown string, advancing the text matrix `tm`.
    fn show(&mut self, state: &State, tm: &mut Matrix, bytes: &[u8]) {
        let Some(font) = state.font.and_then(|i| self.fonts.get(i)) else {
            return;
        };
        for (code, code_bytes) in font.codes(bytes) {
            let w0 = font.width(code) / 1000.0;
            let space = !font.two_byte && code == 32;
            let advance = (w0 * state.size
                + state.char_spacing
                + if space { state.word_spacing } else { 0.0 })
                * state.scale;
            let text = font.text(code, code_bytes);
            let render = Matrix([
                state.size * state.scale,
                0.0,
                0.0,
                state.size,
                0.0,
                state.rise,
            ])
            .then(*tm)
            .then(state.ctm);
            let [a, b, c, d, x, y] = render.0;
            // Text turned on its side (margin notes, rotated table heads) does not read in lines.
            let upright = a > 0.0 && d > 0.0 && b.abs() < 0.1 * a && c.abs() < 0.1 * d;
            let size = d;
            let width = w0 * a;
            let placed = [x, y, size, width].iter().all(|v| v.is_finite());
            if !text.is_empty() && upright && placed && size > 0.0 {
                self.page.glyphs.push(Glyph {
                    x,
                    y,
                    width: width.max(0.0),
                    size,
                    text,
                    mono: font.mono,
                });
            }
            *tm = Matrix::translate(advance, 0.0).then(*tm);
        }
    }
}

/// `chars` with the Latin ligatures (U+FB00 to U+FB06: ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) spelled out, as
/// typesetters' fonts map them, so "ﬁles" reads (and matches) as "files".
fn fold_ligatures(chars: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    for c in chars {
        match c {
            '\u{fb00}' => out.push_str("ff"),
            '\u{fb01}' => out.push_str("fi"),
            '\u{fb02}' => out.push_str("fl"),
            '\u{fb03}' => out.push_str("ffi"),
            '\u{fb04}' => out.push_str("ffl"),
            '\u{fb05}' | '\u{fb06}' => out.push_str("st"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fold_ligatures, monospace, unicode_name};
    use lopdf::{dictionary, Document};

    #[test]
    fn monospaced_fonts_by_flag_or_name() {
        let doc = Document::new();
        let named = |name: &str| monospace(&doc, &dictionary! { "BaseFont" => name });
        for yes in [
            "Courier",
            "ABCDEF+DejaVuSansMono-Bold",
            "Consolas",
            "CMTT10",
            "Menlo",
        ] {
            assert!(named(yes), "{yes}");
        }
        for no in [
            "Times-Roman",
            "MonotypeCorsiva",
            "ArialUnicodeMS",
            "Helvetica",
        ] {
            assert!(!named(no), "{no}");
        }
        let flagged = dictionary! {
            "BaseFont" => "F1",
            "FontDescriptor" => dictionary! { "Flags" => 33 },
        };
        assert!(monospace(&doc, &flagged));
    }

    #[test]
    fn glyphs_named_by_code_point() {
        assert_eq!(unicode_name(b"uni00E9"), Some('\u{e9}'));
        assert_eq!(unicode_name(b"u1F600"), Some('\u{1f600}'));
        assert_eq!(unicode_name(b"uniD800"), None);
        assert_eq!(unicode_name(b"fi"), None);
        assert_eq!(unicode_name(b"u12"), None);
    }

    #[test]
    fn ligatures_are_spelled_out() {
        assert_eq!(
            fold_ligatures(
                "\u{fb01}les \u{fb00}\u{fb02}y \u{fb03}\u{fb04}\u{fb05}\u{fb06}".chars()
            ),
            "files fffly ffifflstst"
        );
        assert_eq!(fold_ligatures("plain".chars()), "plain");
    }
}
