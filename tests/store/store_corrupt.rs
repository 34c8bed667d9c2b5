//! Damaged files give errors, never panics: truncations and overwritten bytes.

use folio::chunk::SourceFormat;
use folio::document::Document;
use folio::query::SearchRequest;
use folio::store::{Access, OpenError, Store};

fn pristine(dir: &std::path::Path) -> Vec<u8> {
    let path = dir.join("pristine.folio");
    let store = Store::builder().create(true).open(&path).expect("create");
    let mut batch = store.batch();
    for i in 0..20 {
        let text =
            format!("# Doc {i}\n\n## Part\n\nSome text about deploys and budgets, number {i}.\n");
        batch.upsert(
            Document::new(format!("d{i}"), SourceFormat::Markdown, text).with_acl(if i % 2 == 0 {
                vec!["eng"]
            } else {
                vec![]
            }),
        );
    }
    batch.commit().expect("commit");
    drop(store);
    std::fs::read(&path).expect("read")
}

/// Opens a damaged copy and, if it opens, uses it; any panic fails the test.
fn exercise(dir: &std::path::Path, bytes: &[u8]) -> Result<(), OpenError> {
    let path = dir.join("damaged.folio");
    std::fs::write(&path, bytes).expect("write");
    let store = Store::open(&path)?;
    let _ = store.stats();
    let _ = store.search(&SearchRequest::text("deploys").access(Access::Unrestricted));
    let _ = store.search(&SearchRequest::text("budgets").as_principals(["eng"]));
    Ok(())
}

#[test]
fn truncated_files_are_refused_or_read_without_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = pristine(dir.path());
    let mut refused = 0;
    for cut in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
        if exercise(dir.path(), &bytes[..cut]).is_err() {
            refused += 1;
        }
    }
    assert!(
        refused > 0,
        "cutting a file short must be noticed at least sometimes"
    );
    // A zero-byte file holds no store yet: opening it without `create` finds none (and
    // `create(true)` makes a new store there).
    assert!(matches!(
        exercise(dir.path(), &[]),
        Err(OpenError::NotFound(_))
    ));
}

#[test]
fn overwritten_bytes_never_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = pristine(dir.path());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..200 {
        let mut damaged = bytes.clone();
        for _ in 0..(next() % 16 + 1) {
            let at = (next() % damaged.len() as u64) as usize;
            damaged[at] = next() as u8;
        }
        let _ = exercise(dir.path(), &damaged);
    }
}
