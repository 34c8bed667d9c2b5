//! Writes the PDFs the PDF tests and the chunking bench read, with lopdf,
//! deterministically: a paper set in two columns over several pages, with a title and
//! section headings in larger type, paragraphs spaced apart, words hyphenated at line ends,
//! a running header and footer that carry the page number, and a page number alone; and the
//! words a reader must make of it, in reading order, with their pages. And a report in one
//! column whose table runs on to the next page, its head row repeated there or not.

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Document, Object, Stream};

/// Text of the running header (followed by the page number) on every page.
pub const HEADER: &str = "Folio Quarterly Review, Volume 3, page";
/// Text of the running footer (followed by a date that changes per page).
pub const FOOTER: &str = "Draft for review, printed 2026-03-";

/// A generated paper and what a reader must find in it.
pub struct Paper {
    /// The PDF file.
    pub bytes: Vec<u8>,
    /// Content words (headings included) in reading order, each with its page (from 1); a
    /// word hyphenated at a line end is whole, on the page of its first part.
    pub words: Vec<(String, u32)>,
    /// Title and section headings, with their levels (1 for the title).
    pub headings: Vec<(usize, String)>,
    /// Words the layout split with a hyphen at a line end.
    pub hyphenated: Vec<String>,
    /// For each page and column (0 left, 1 right), the index in `words` of its first word.
    pub columns: Vec<(u32, usize, usize)>,
}

const BODY: f64 = 10.0;
const PITCH: f64 = 12.0;
/// Characters per column line (Helvetica-sized glyphs of half an em: 220 points).
const LINE_CHARS: usize = 44;
const COLUMN_X: [f64; 2] = [54.0, 318.0];
const TOP: f64 = 720.0;
const BOTTOM: f64 = 84.0;

/// A pseudo-random, lowercase, unique word for `n` (syllables of its base-8 digits).
fn word(n: usize, long: bool) -> String {
    const SYLLABLES: [&str; 8] = ["ka", "lo", "mi", "nu", "pe", "ri", "so", "tu"];
    let digits = if long { 5 } else { 3 };
    let mut out = String::new();
    let mut v = n;
    for _ in 0..digits {
        out.push_str(SYLLABLES[v % 8]);
        v /= 8;
    }
    if v > 0 {
        out.push_str(&word(v, false));
    }
    out
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

/// Laying out words into columns and pages.
struct Writer {
    pages: Vec<Vec<Operation>>,
    column: usize,
    y: f64,
    line: String,
    paper: Paper,
}

impl Writer {
    fn new() -> Writer {
        Writer {
            pages: vec![Vec::new()],
            column: 0,
            y: TOP,
            line: String::new(),
            paper: Paper {
                bytes: Vec::new(),
                words: Vec::new(),
                headings: Vec::new(),
                hyphenated: Vec::new(),
                columns: vec![(1, 0, 0)],
            },
        }
    }

    fn page(&self) -> u32 {
        self.pages.len() as u32
    }

    fn show(&mut self, font: &str, size: f64, x: f64, y: f64, text: &str) {
        let ops = self.pages.last_mut().unwrap();
        ops.push(Operation::new("BT", vec![]));
        ops.push(Operation::new("Tf", vec![font.into(), size.into()]));
        ops.push(Operation::new("Td", vec![x.into(), y.into()]));
        ops.push(Operation::new("Tj", vec![Object::string_literal(text)]));
        ops.push(Operation::new("ET", vec![]));
    }

    /// Moves down `by`, to the next column or page when the column is full.
    fn advance(&mut self, by: f64) {
        self.y -= by;
        if self.y < BOTTOM {
            self.y = TOP;
            if self.column == 0 {
                self.column = 1;
            } else {
                self.column = 0;
                self.pages.push(Vec::new());
            }
            let at = (self.page(), self.column, self.paper.words.len());
            self.paper.columns.push(at);
        }
    }

    fn flush(&mut self) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.show("F1", BODY, COLUMN_X[self.column], self.y, &line);
            self.advance(PITCH);
        }
    }

    fn paragraph(&mut self, words: &[String]) {
        for w in words {
            self.paper.words.push((w.clone(), self.page()));
            let room =
                LINE_CHARS.saturating_sub(self.line.len() + usize::from(!self.line.is_empty()));
            if w.len() <= room {
                if !self.line.is_empty() {
                    self.line.push(' ');
                }
                self.line.push_str(w);
                continue;
            }
            // A long word that does not fit is hyphenated when both parts keep three letters.
            if w.len() >= 8 && room >= 5 {
                let cut = (room - 1).min(w.len() - 3);
                if !self.line.is_empty() {
                    self.line.push(' ');
                }
                self.line.push_str(&w[..cut]);
                self.line.push('-');
                self.paper.hyphenated.push(w.clone());
                self.flush();
                self.line.push_str(&w[cut..]);
            } else {
                self.flush();
                self.line.push_str(w);
            }
        }
        self.flush();
        self.advance(PITCH / 2.0);
    }

    fn heading(&mut self, text: &str) {
        self.flush();
        if self.y < BOTTOM + 4.0 * PITCH {
            self.advance(TOP);
        }
        self.advance(PITCH / 2.0);
        for w in text.split(' ') {
            self.paper.words.push((w.to_string(), self.page()));
        }
        self.paper.headings.push((2, text.to_string()));
        self.show("F1", 13.0, COLUMN_X[self.column], self.y, text);
        self.advance(PITCH * 1.5);
    }

    /// Headers, footers and page numbers on every page, then the file.
    fn finish(mut self, title: &str, compress: bool) -> Paper {
        let count = self.pages.len();
        for (i, ops) in self.pages.iter_mut().enumerate() {
            let n = i + 1;
            let mut page = Writer::new();
            page.show("F1", 9.0, 200.0, 760.0, &format!("{HEADER} {n}"));
            page.show("F1", 9.0, 54.0, 40.0, &format!("{FOOTER}{:02}", n + 3));
            page.show("F1", 9.0, 303.0, 28.0, &n.to_string());
            if n == 1 {
                page.show("F1", 18.0, 120.0, 740.0, title);
            }
            ops.splice(0..0, page.pages.remove(0));
        }
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "Type1",
            "BaseFont" => "Helvetica",
            "Encoding" => "WinAnsiEncoding",
        });
        let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
        let mut kids = Vec::new();
        for ops in std::mem::take(&mut self.pages) {
            let content = Content { operations: ops }.encode().unwrap();
            let mut stream = Stream::new(dictionary! {}, content);
            if compress {
                stream.compress().unwrap();
            }
            let content = doc.add_object(stream);
            kids.push(Object::from(doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content,
            })));
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => kids,
                "Count" => count as i64,
                "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let id = Object::string_literal(b"folio-test-paper".to_vec());
        doc.trailer.set("ID", vec![id.clone(), id]);
        doc.save_to(&mut self.paper.bytes).unwrap();
        self.paper
    }
}

/// A paper of `sections` sections of `paragraphs` paragraphs each, deterministic, its
/// content streams compressed.
pub fn paper(sections: usize, paragraphs: usize) -> Paper {
    paper_with(sections, paragraphs, true)
}

/// [`paper`], content streams compressed or not (for mutations that reach the operators).
pub fn paper_with(sections: usize, paragraphs: usize, compress: bool) -> Paper {
    let mut w = Writer::new();
    let title = "Structured retrieval over scanned archives";
    // The title is set across both columns at the top of page 1.
    for t in title.split(' ') {
        w.paper.words.push((t.to_string(), 1));
    }
    w.paper.headings.push((1, title.to_string()));
    let mut n = 0usize;
    let mut seed = 7u64;
    let mut next = |m: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % m
    };
    for s in 0..sections {
        // Capitalized, so no body word repeats a heading word.
        let heading: Vec<String> = (0..3)
            .map(|i| capitalized(&word(3 * s + i, false)))
            .collect();
        let heading = heading.join(" ");
        w.heading(&heading);
        for _ in 0..paragraphs {
            let mut words = Vec::new();
            for _ in 0..3 + next(3) {
                let len = 6 + next(9) as usize;
                for i in 0..len {
                    let mut t = word(n, next(4) == 0);
                    n += 1;
                    if i + 1 == len {
                        t.push('.');
                    }
                    words.push(t);
                }
            }
            w.paragraph(&words);
        }
    }
    w.finish(title, compress)
}

/// Where the table's columns start.
const TABLE_X: [f64; 4] = [54.0, 160.0, 330.0, 450.0];

/// A generated report holding one table across a page break.
pub struct Report {
    /// The PDF file.
    pub bytes: Vec<u8>,
    /// The head row's cells.
    pub head: Vec<String>,
    /// Every other row's cells, in order, with the page each is on.
    pub rows: Vec<(Vec<String>, u32)>,
    /// The words of the paragraph before the table.
    pub before: Vec<String>,
    /// The words of the paragraph after it.
    pub after: Vec<String>,
}

impl Writer {
    /// A table in one column from the current line down, its rows at [`TABLE_X`], on to
    /// the next page when the page is full (the head row shown again there if `repeat`).
    fn table(&mut self, head: &[String], rows: &[Vec<String>], repeat: bool) -> Vec<u32> {
        self.flush();
        self.advance(PITCH / 2.0);
        let show = |w: &mut Writer, cells: &[String]| {
            for (x, cell) in TABLE_X.iter().zip(cells) {
                w.show("F1", BODY, *x, w.y, cell);
            }
            w.y -= PITCH;
        };
        show(self, head);
        let mut pages = Vec::new();
        for row in rows {
            if self.y < BOTTOM {
                self.pages.push(Vec::new());
                self.y = TOP;
                if repeat {
                    show(self, head);
                }
            }
            show(self, row);
            pages.push(self.page());
        }
        self.advance(PITCH / 2.0);
        pages
    }
}

/// A one-column report: a paragraph, a table of `rows` rows that runs on to page 2 (more
/// than 45 rows), a paragraph; running header, footer and page numbers on every page.
pub fn report(rows: usize, repeat: bool) -> Report {
    let mut w = Writer::new();
    let sentence = |from: usize| -> Vec<String> {
        let mut words: Vec<String> = (from..from + 12).map(|n| word(n, false)).collect();
        if let Some(last) = words.last_mut() {
            last.push('.');
        }
        words
    };
    let (before, after) = (sentence(0), sentence(500));
    w.paragraph(&before);
    let head: Vec<String> = ["Code", "Product", "Quantity", "Price"]
        .map(String::from)
        .into();
    let body: Vec<Vec<String>> = (0..rows)
        .map(|i| {
            vec![
                format!("R{i:03}"),
                format!("{} {}", word(100 + 2 * i, false), word(101 + 2 * i, false)),
                (7 * i % 90 + 1).to_string(),
                format!("{}.{:02}", 3 + i % 40, 7 * i % 100),
            ]
        })
        .collect();
    let pages = w.table(&head, &body, repeat);
    w.paragraph(&after);
    let paper = w.finish("Quarterly stock report", true);
    Report {
        bytes: paper.bytes,
        head,
        rows: body.into_iter().zip(pages).collect(),
        before,
        after,
    }
}

/// `paper`'s first page encrypted with the user password `secret`.
pub fn encrypted() -> Vec<u8> {
    use lopdf::{EncryptionState, EncryptionVersion, Permissions};
    let bytes = paper(1, 2).bytes;
    let mut doc = Document::load_mem(&bytes).unwrap();
    let version = EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "secret",
        key_length: 128,
        permissions: Permissions::default(),
    };
    let state = EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}
