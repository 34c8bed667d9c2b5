//! Fuzzes the filter parser: on arbitrary text it returns a filter or an error whose
//! position lies inside the text, never panics or overflows the stack, and a parsed
//! filter's canonical text parses back to the same filter, which it tests the same way.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;

use folio::filter::{Attributes, Filter, MetadataValue};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Filter::parse(&text) {
        Err(e) => assert!(e.position <= text.len(), "{e} in {text:?}"),
        Ok(filter) => {
            let canonical = filter.to_string();
            let again = Filter::parse(&canonical)
                .unwrap_or_else(|e| panic!("{canonical:?} (from {text:?}): {e}"));
            assert_eq!(again, filter, "{canonical:?} from {text:?}");
            let mut metadata = BTreeMap::new();
            metadata.insert("a".to_string(), MetadataValue::Number(1.0));
            metadata.insert("b".to_string(), MetadataValue::String("x".into()));
            metadata.insert("t".to_string(), MetadataValue::List(vec!["x".into()]));
            let path = ["x".to_string()];
            let attributes = Attributes {
                doc_id: "x",
                title: "x",
                source_uri: "x",
                published_at: Some("2024-01-01"),
                updated_at: None,
                metadata: &metadata,
                section_path: &path,
            };
            assert_eq!(filter.matches(&attributes), again.matches(&attributes));
        }
    }
});
