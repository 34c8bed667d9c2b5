//! Histories of the `store_ops` fuzz target kept as tests: inputs that once broke an
//! invariant (and a seed history that touches every operation), run through the same model
//! (`folio_testkit::store_ops`). A crasher's input printed by `cargo fuzz fmt store_ops FILE`
//! goes here as a test of its own, with a line on what it broke and what fixed it.

use folio_testkit::store_ops::{run, DocOp::*, Op::*};

/// Every operation once, with a fault in a batch, a merge and a gc: the harness itself.
#[test]
fn seed_history_touches_every_operation() {
    run(
        true,
        &[
            Batch(vec![
                Upsert {
                    doc: 0,
                    words: vec![0, 1],
                    acl: 1,
                },
                Upsert {
                    doc: 1,
                    words: vec![2],
                    acl: 0,
                },
            ]),
            Tag {
                index: 0,
                version: 1,
            },
            Alias {
                alias: 0,
                version: 1,
                split: None,
            },
            CreateIndex,
            Batch(vec![SetAcl { doc: 0, acl: 2 }, Delete { doc: 1 }]),
            Search {
                target: 3,
                principals: Some(1),
                k: 4,
                key: 0,
            },
            Pin { version: Some(1) },
            Fault { after: 3 },
            Batch(vec![Upsert {
                doc: 1,
                words: vec![3, 4],
                acl: 4,
            }]),
            Alias {
                alias: 1,
                version: 0,
                split: Some(1),
            },
            RollbackAlias {
                alias: 0,
                version: 0,
            },
            Compact { index: 0 },
            Gc { keep: 1 },
            Reopen,
            Search {
                target: 0,
                principals: None,
                k: 8,
                key: 7,
            },
            Search {
                target: 5,
                principals: Some(1),
                k: 2,
                key: 1,
            },
            Pin { version: None },
            DropIndex,
            Search {
                target: 9,
                principals: Some(3),
                k: 3,
                key: 9,
            },
        ],
    );
}
