//! Before/after probe (issue 30, item 3): a reader process. Opens STORE read-only, runs one
//! vector search (which loads the version's segments), prints "holding" on stderr and waits
//! until stdin closes.
use folio::{SearchRequest, Store};
use std::io::Read;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::builder().read_only(true).open(&args[1]).unwrap();
    let query: Vec<f32> = (0..384).map(|i| ((i * 7919) % 101) as f32 / 101.0 - 0.5).collect();
    let found = store.search(&SearchRequest::vector(query)).unwrap();
    eprintln!("{} results", found.results.len());
    eprintln!("holding");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
