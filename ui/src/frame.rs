//! The frame every page shares: its style, the navigation and the footer that says what
//! the server is.

use maud::{html, Markup, PreEscaped, DOCTYPE};

const STYLE: &str = "
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; }
nav { background: #24292f; padding: .6em 1em; }
nav a { color: #fff; margin-right: 1.2em; text-decoration: none; }
main { padding: 1em 1.5em; max-width: 1200px; }
footer { padding: 1em 1.5em; color: #666; font-size: 13px; border-top: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.error { background: #ffebe9; border: 1px solid #d1242f; padding: .6em; }
.note { color: #555; }
form.bar { background: #f6f8fa; padding: .6em; border: 1px solid #ddd; margin-bottom: 1em; }
form.bar label { margin-right: 1em; }
pre.text { white-space: pre-wrap; word-break: break-word; background: #fbfbfb; padding: .6em; border: 1px solid #eee; }
.parent { display: block; border-left: 4px solid #8250df; padding-left: .5em; margin: .6em 0; }
.parent-head { display: block; font-size: 12px; color: #8250df; font-family: system-ui, sans-serif; }
.child { border-radius: 3px; }
.c0 { background: #ddf4ff; } .c1 { background: #fff8c5; } .c2 { background: #dafbe1; }
.c3 { background: #ffebe9; } .c4 { background: #fbefff; } .c5 { background: #f6f8fa; }
.child.oversized { outline: 2px solid #d1242f; }
.outside { color: #8c959f; }
.child.piece { outline: 2px dashed #d1242f; }
.child.truncated { background: #ffcecb; }
mark { background: #ffd33d; }
img.chart { max-width: 100%; height: auto; }
.gold { text-decoration: underline 3px #1a7f37; text-underline-offset: 3px; font-weight: bold; }
.split { color: #d1242f; font-weight: bold; }
.boundary { color: #fff; background: #d1242f; font-weight: bold; padding: 0 1px; }
";

/// The frame of every page.
pub(crate) fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · folio ui" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                nav {
                    a href="/documents" { "Documents" }
                    a href="/search" { "Search" }
                    a href="/versions" { "Versions" }
                    a href="/eval" { "Evaluation" }
                    a href="/log" { "Request log" }
                }
                main {
                    h1 { (title) }
                    (body)
                }
                footer {
                    "An owner's tool: these pages can search as any principal. The server \
                     answers this machine's address only, and only requests that carry the \
                     token it printed at start; it opens the store read-only."
                }
            }
        }
    }
}
