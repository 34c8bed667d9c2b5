//! Fuzzes the PDF reader: text extraction on arbitrary bytes (parsing, content streams,
//! fonts, layout) must give text or a typed error, never panic; extracted text, and the
//! bytes read as extracted text, must keep the chunking contract
//! (`folio_testkit::chunks::check_any_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

use folio::input::pdf::extract;
use folio::chunk::SourceFormat;
use folio_testkit::chunks;

fuzz_target!(|data: &[u8]| {
    let texts = [
        extract(data).ok(),
        Some(String::from_utf8_lossy(data).into_owned()),
    ];
    for text in texts.iter().flatten() {
        if let Err(e) = chunks::check_any_format(text, SourceFormat::Pdf) {
            panic!("{e}\ninput: {text:?}");
        }
    }
});
