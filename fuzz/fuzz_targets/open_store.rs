//! Opening a damaged store file, read-only and for writing, never panics: it opens (and
//! then answers, checks or errors) or it fails with an error. The input is a valid small
//! store with bytes overwritten or cut.
#![no_main]

use std::sync::OnceLock;

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::{Access, Store};
use libfuzzer_sys::fuzz_target;

/// A small valid store, built once.
fn pristine() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.folio");
        let store = Store::builder().create(true).open(&path).expect("create");
        let mut batch = store.batch();
        batch.upsert(Document::new(
            "a",
            SourceFormat::Markdown,
            "# A\n\nAlpha text about deploys.\n\n## B\n\nBeta.",
        ));
        batch.upsert(
            Document::new("b", SourceFormat::Text, "Budget and hotel limits.")
                .with_acl(["finance"]),
        );
        batch.commit().expect("commit");
        drop(store);
        std::fs::read(&path).expect("read")
    })
}

fuzz_target!(|data: &[u8]| {
    // First 4 bytes: where to cut; then (offset u16, byte) pairs to overwrite.
    let base = pristine();
    let mut bytes = base.to_vec();
    if data.len() >= 4 {
        let cut = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
        if cut % 3 == 0 {
            bytes.truncate(cut % (base.len() + 1));
        }
        for pair in data[4..].chunks_exact(3) {
            let at = u16::from_le_bytes([pair[0], pair[1]]) as usize * 4;
            if at < bytes.len() {
                bytes[at] = pair[2];
            }
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("f.folio");
    // Read-only first (it never writes, so the writer then opens the same damaged bytes),
    // with the integrity check; then for writing.
    std::fs::write(&path, &bytes).expect("write");
    if let Ok(mut store) = Store::builder().read_only(true).open(&path) {
        use_store(&store);
        let _ = store.check_integrity();
    }
    if let Ok(store) = Store::open(&path) {
        use_store(&store);
    }
});

fn use_store(store: &Store) {
    let _ = store.stats();
    let _ = store.document("a");
    let _ = store.chunks("default", "a");
    let _ = store.search(&SearchRequest::text("deploy").access(Access::Unrestricted));
    let _ = store.search(&SearchRequest::text("budget").as_principals(["finance"]));
}
