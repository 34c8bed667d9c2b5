//! Fuzzes the HTML reader: `chunk_document` on arbitrary bytes (as lossy UTF-8) under
//! every kind of spec must keep the format-independent contract
//! (`folio_testkit::chunks::check_any_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

use folio::chunk::SourceFormat;
use folio_testkit::chunks;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for format in [SourceFormat::Html] {
        if let Err(e) = chunks::check_any_format(&text, format) {
            panic!("{e}\ninput: {text:?}");
        }
    }
});
