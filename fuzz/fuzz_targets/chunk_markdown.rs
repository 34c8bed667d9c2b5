//! Fuzzes `chunk_document` on arbitrary bytes (as lossy UTF-8), as Markdown and as plain
//! text, under every kind of spec, and panics on any broken invariant of the chunking
//! contract (checked by the same checker as the chunk tests).

#![no_main]

use libfuzzer_sys::fuzz_target;

use folio::chunk::SourceFormat;
use folio_testkit::chunks;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for spec in chunks::specs() {
        for format in [SourceFormat::Markdown, SourceFormat::Text] {
            if let Err(e) = chunks::chunk_and_check(&text, format, &spec) {
                panic!("{format:?} {spec:?}: {e}\ninput: {text:?}");
            }
        }
    }
});
