//! The library's hook for children ranked elsewhere, without a server: a source that
//! answers with every child of the version (hidden ones, duplicates and all) ranked by
//! exact score gives the local answer; a source that names a child under another chunk id
//! is refused.

use folio::query::{Ask, Candidate, ChildSource, SourceError, WrongChild};
use folio::store::ExportedChild;
use folio::{Document, QueryError, SearchRequest, SourceFormat, Store};

/// Every child of the version, scored by dot product with the query (the index is cosine
/// and its vectors normalised), each twice; `lie` renames the best one.
struct Everything {
    children: Vec<ExportedChild>,
    lie: bool,
    asked: usize,
}

impl ChildSource for Everything {
    fn name(&self) -> &str {
        "test"
    }

    fn children(&mut self, ask: &Ask<'_>) -> Result<Vec<Candidate>, SourceError> {
        self.asked += 1;
        let mut out: Vec<Candidate> = self
            .children
            .iter()
            .map(|c| Candidate {
                child: c.number,
                chunk_id: c.chunk_id.clone(),
                score: c.vector.iter().zip(ask.query()).map(|(a, b)| a * b).sum(),
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        if self.lie {
            out[0].chunk_id.push('x');
        }
        // Hidden and repeated children included: folio must drop them itself.
        out.extend(out.clone());
        Ok(out)
    }
}

#[test]
fn a_source_is_checked_and_its_children_assembled_as_a_local_search() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::builder()
        .create(true)
        .open(dir.path().join("kb.folio"))
        .unwrap();
    let mut batch = store.batch();
    for i in 0..30 {
        let acl: Vec<&str> = match i % 3 {
            0 => vec![],
            1 => vec!["alice"],
            _ => vec!["bob"],
        };
        let text = format!(
            "# Topic {i}\n\n## Part one\n\nStep {i} needs tool {} and key {}.\n\n## Part two\n\nThen check gauge {} twice.\n",
            i * 3,
            i % 7,
            i * 11
        );
        batch.upsert(Document::new(format!("d{i}"), SourceFormat::Markdown, text).with_acl(acl));
    }
    batch.commit().unwrap();
    let export = store.export("default").unwrap();
    let children: Vec<ExportedChild> = export
        .children()
        .iter()
        .map(|n| export.child(n).unwrap())
        .collect();
    drop(export);
    for principals in [vec!["alice"], vec!["bob"], vec![]] {
        for k in [1, 4, 50] {
            let request = SearchRequest::text("tool key gauge 12")
                .as_principals(principals.clone())
                .k(k)
                .no_dedup();
            let local = store.search(&request).unwrap();
            let mut source = Everything {
                children: children.clone(),
                lie: false,
                asked: 0,
            };
            let through = store.search_through(&request, &mut source).unwrap();
            assert!(source.asked >= 1);
            assert_eq!(
                (through.index.as_str(), through.version),
                (local.index.as_str(), local.version)
            );
            let ids = |r: &folio::SearchResponse| -> Vec<Vec<String>> {
                r.results
                    .iter()
                    .map(|h| h.children.iter().map(|c| c.chunk_id.clone()).collect())
                    .collect()
            };
            assert_eq!(ids(&through), ids(&local), "as {principals:?}, k={k}");
            assert!(!local.results.is_empty());
        }
    }
    let mut liar = Everything {
        children,
        lie: true,
        asked: 0,
    };
    let refused = store.search_through(
        &SearchRequest::text("tool").as_principals(["alice", "bob"]),
        &mut liar,
    );
    let Err(QueryError::Remote { source_name, error }) = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(source_name, "test");
    let wrong = error
        .downcast_ref::<WrongChild>()
        .expect("the refusal is typed");
    assert_eq!(wrong.answered, format!("{}x", wrong.expected));
}
