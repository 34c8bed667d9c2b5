//! Model-based fuzzing of the store, in the manner of redb's `fuzz_redb`: random sequences
//! of upserts, deletes, ACL changes, tags, aliases, rollbacks, compactions, gc, index
//! creation and drops, reopens and injected write faults, with searches as random
//! principals at random versions, tags, aliases and routes, checked against a plain model
//! (`folio_testkit::store_ops`). Crashers become tests in `tests/store/fuzz_regressions.rs`.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

use folio_testkit::store_ops::{self, DocOp, Op, DOCS, WORDS};

/// At most this many steps per input: longer runs find little more and slow every run.
const MAX_OPS: usize = 48;

fn doc_op(u: &mut Unstructured<'_>) -> Result<DocOp> {
    let doc = u.int_in_range(0..=DOCS - 1)?;
    Ok(match u.int_in_range(0..=5u8)? {
        0..=2 => {
            let n = u.int_in_range(1..=5usize)?;
            let words = (0..n)
                .map(|_| u.int_in_range(0..=WORDS.len() - 1))
                .collect::<Result<_>>()?;
            DocOp::Upsert {
                doc,
                words,
                acl: u.int_in_range(0..=7)?,
            }
        }
        3 => DocOp::Delete { doc },
        _ => DocOp::SetAcl {
            doc,
            acl: u.int_in_range(0..=7)?,
        },
    })
}

fn op(u: &mut Unstructured<'_>) -> Result<Op> {
    let small = |u: &mut Unstructured<'_>| u.int_in_range(0..=15usize);
    Ok(match u.int_in_range(0..=19u8)? {
        0..=5 => {
            let n = u.int_in_range(1..=3usize)?;
            Op::Batch((0..n).map(|_| doc_op(u)).collect::<Result<_>>()?)
        }
        6 => Op::Tag {
            index: small(u)?,
            version: small(u)?,
        },
        7 => Op::Alias {
            alias: small(u)?,
            version: small(u)?,
            split: if u.arbitrary()? { Some(small(u)?) } else { None },
        },
        8 => Op::Pin {
            version: if u.arbitrary()? { Some(small(u)?) } else { None },
        },
        9 => Op::RollbackAlias {
            alias: small(u)?,
            version: small(u)?,
        },
        10 => Op::Compact { index: small(u)? },
        11 => Op::Gc {
            keep: u.int_in_range(1..=3)?,
        },
        12 => Op::CreateIndex,
        13 => Op::DropIndex,
        14 => Op::Reopen,
        15 => Op::Fault {
            after: u.int_in_range(0..=40)?,
        },
        _ => Op::Search {
            target: u.int_in_range(0..=63)?,
            principals: if u.arbitrary()? {
                Some(u.int_in_range(0..=7)?)
            } else {
                None
            },
            k: u.int_in_range(1..=8)?,
            key: u.arbitrary()?,
        },
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(merges) = u.arbitrary::<bool>() else {
        return;
    };
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS {
        match op(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    store_ops::run(merges, &ops);
});
