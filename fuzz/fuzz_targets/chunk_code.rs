//! Fuzzes the source code reader: `chunk_document` on arbitrary bytes (as lossy UTF-8) in
//! every language under every kind of spec must keep the format-independent contract
//! (`chunk_support::check_any_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/chunk_support/mod.rs"]
mod chunk_support;

use folio::chunk::SourceFormat;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for format in SourceFormat::CODE {
        if let Err(e) = chunk_support::check_any_format(&text, format) {
            panic!("{e}\ninput: {text:?}");
        }
    }
});
