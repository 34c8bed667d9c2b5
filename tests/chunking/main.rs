//! Chunking: every CommonMark example, end-to-end examples, properties, each format reader.
//! One test crate (one binary to link); each module was a test file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[cfg(feature = "code")]
mod chunk_code;
mod chunk_commonmark;
mod chunk_document;
#[cfg(feature = "html")]
mod chunk_html;
#[cfg(feature = "pdf")]
mod chunk_pdf;
mod chunk_props;
mod chunk_table_dialog;
