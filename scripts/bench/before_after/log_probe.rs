//! Before/after probe (issue 30): logging searches and annotations, killed with SIGKILL.
//! `init STORE`: a store of 50 documents. `run STORE TAG`: forever, search with logging,
//! print "id", then annotate that id with note "TAG:id". `verify STORE`: print every logged
//! request as "id note".
use folio::review::Annotation;
use folio::{Document, SearchRequest, Store};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[2]);
    match args[1].as_str() {
        "init" => {
            let store = Store::builder().create(true).open(path).unwrap();
            let mut batch = store.batch();
            for i in 0..50 {
                batch.upsert(Document::new(format!("d{i}"), folio::SourceFormat::Markdown, format!("# Note {i}\n\nTrip {i} books trains and hotels; receipts go to finance.\n")));
            }
            batch.commit().unwrap();
        }
        "run" => {
            let store = Store::builder().log_requests(true).open(path).unwrap();
            let tag = &args[3];
            let mut out = std::io::stdout();
            for i in 0.. {
                let response = store.search(&SearchRequest::text(format!("trip {}", i % 50))).unwrap();
                let id = response.request_id.unwrap();
                writeln!(out, "{id}").unwrap();
                out.flush().unwrap();
                let mut note = Annotation::default();
                note.note = Some(format!("{tag}:{id}"));
                store.log().annotate(id, &note).unwrap();
            }
        }
        "verify" => {
            let store = Store::open(path).unwrap();
            for entry in store.log().entries().unwrap() {
                let note = entry.request.feedback.as_ref().and_then(|f| f.note.clone()).unwrap_or_default();
                println!("{} {}", entry.request_id, note);
            }
        }
        _ => panic!("init|run|verify"),
    }
}
