//! Live revocations and deletions: the current-ACL bitmaps (table `acl_current`).
//!
//! A version freezes content, chunking, vectors and the ACLs it was built with; searching
//! any version other than the head also intersects its visible set with the children
//! whose document *currently* admits the caller. Child numbers are never reused within an
//! index (a compaction copies live children to fresh numbers), so one bitmap per (index,
//! principal) over the whole child-number space serves every version at once:
//! `visible(V, P) = (acl_V("") ∪ acl_V(P)) ∩ live_V ∩ (current("") ∪ current(P))`. The
//! head needs no intersection: its own bitmaps are the current ACLs.
//!
//! Every write keeps the bitmaps exact in its own transaction: an upsert grants the new
//! children to the document's principals (and moves the older ones when the ACL changed), a
//! delete withdraws every child the document has (`DocEntry::children`), an ACL change moves
//! them, a compaction grants the copies, `gc` drops numbers no retained version uses.

use std::collections::HashMap;

use redb::WriteTransaction;
use roaring::RoaringBitmap;

use crate::storage::error::StorageError;

/// The ACL key of public documents. Principals are never empty, so it cannot collide.
pub(crate) const PUBLIC: &str = "";
use crate::storage::file::records::{
    decode, decode_bitmap, encode, encode_bitmap, ChildRun, DocEntry,
};
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::{ACL_CURRENT, DOCS};

/// The children of index `index` whose document currently admits `principal` (`""`:
/// public documents).
pub(crate) fn read_current(
    table: &impl ReadSealed<(u32, &'static str)>,
    index: u32,
    principal: &str,
) -> Result<RoaringBitmap, StorageError> {
    match table.read((index, principal))? {
        Some(value) => decode_bitmap(value.value(), "current principal bitmap"),
        None => Ok(RoaringBitmap::new()),
    }
}

/// Every current bitmap of index `index`, by principal.
pub(crate) fn read_all(
    table: &impl ReadSealed<(u32, &'static str)>,
    index: u32,
) -> Result<Vec<(String, RoaringBitmap)>, StorageError> {
    let mut out = Vec::new();
    for entry in table.rows((index, "")..(index.saturating_add(1), ""))? {
        let (key, value) = entry?;
        let bitmap = decode_bitmap(value.value(), "current principal bitmap")?;
        out.push((key.value().1.to_string(), bitmap));
    }
    Ok(out)
}

/// The current bitmaps one write changes in one index: read on first use, written back
/// by [`CurrentAcl::write`] in the same transaction.
pub(crate) struct CurrentAcl {
    index: u32,
    bitmaps: HashMap<String, RoaringBitmap>,
}

impl CurrentAcl {
    pub(crate) fn new(index: u32) -> Self {
        CurrentAcl {
            index,
            bitmaps: HashMap::new(),
        }
    }

    fn bitmap(
        &mut self,
        txn: &WriteTransaction,
        principal: String,
    ) -> Result<&mut RoaringBitmap, StorageError> {
        use std::collections::hash_map::Entry;
        match self.bitmaps.entry(principal) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(v) => {
                let table = txn.open_table(ACL_CURRENT)?;
                let bitmap = read_current(&table, self.index, v.key())?;
                Ok(v.insert(bitmap))
            }
        }
    }

    /// `children` are now visible to the principals of `acl` (public when empty).
    pub(crate) fn grant(
        &mut self,
        txn: &WriteTransaction,
        children: &RoaringBitmap,
        acl: &[String],
    ) -> Result<(), StorageError> {
        self.each(txn, children, acl, |bitmap, c| *bitmap |= c)
    }

    /// `children` are no longer visible to the principals of `acl`.
    pub(crate) fn revoke(
        &mut self,
        txn: &WriteTransaction,
        children: &RoaringBitmap,
        acl: &[String],
    ) -> Result<(), StorageError> {
        self.each(txn, children, acl, |bitmap, c| *bitmap -= c)
    }

    /// Applies `change` with `children` to the bitmap of each principal of `acl`.
    fn each(
        &mut self,
        txn: &WriteTransaction,
        children: &RoaringBitmap,
        acl: &[String],
        change: impl Fn(&mut RoaringBitmap, &RoaringBitmap),
    ) -> Result<(), StorageError> {
        if children.is_empty() {
            return Ok(());
        }
        for principal in principals_of(acl) {
            change(self.bitmap(txn, principal)?, children);
        }
        Ok(())
    }

    /// Moves `children` from the principals of `from` to those of `to`.
    pub(crate) fn move_children(
        &mut self,
        txn: &WriteTransaction,
        children: &RoaringBitmap,
        from: &[String],
        to: &[String],
    ) -> Result<(), StorageError> {
        if principals_of(from) == principals_of(to) {
            return Ok(());
        }
        self.revoke(txn, children, from)?;
        self.grant(txn, children, to)
    }

    /// Writes the changed bitmaps (an empty one is removed) and hands them over, for the
    /// in-memory state installed after the commit.
    pub(crate) fn write(
        &mut self,
        txn: &WriteTransaction,
    ) -> Result<HashMap<String, RoaringBitmap>, StorageError> {
        let bitmaps = std::mem::take(&mut self.bitmaps);
        let mut table = txn.open_table(ACL_CURRENT)?;
        for (principal, bitmap) in &bitmaps {
            if bitmap.is_empty() {
                table.remove((self.index, principal.as_str()))?;
            } else {
                table.put(
                    (self.index, principal.as_str()),
                    encode_bitmap(bitmap).as_slice(),
                )?;
            }
        }
        Ok(bitmaps)
    }
}

/// Keeps in index `index`'s current bitmaps only the children in `kept` (those some
/// retained version still uses); returns how many bitmaps changed.
pub(crate) fn prune(
    txn: &WriteTransaction,
    index: u32,
    kept: &RoaringBitmap,
) -> Result<u64, StorageError> {
    let mut table = txn.open_table(ACL_CURRENT)?;
    let mut changed = 0;
    for (principal, bitmap) in read_all(&table, index)? {
        let pruned = &bitmap & kept;
        if pruned == bitmap {
            continue;
        }
        changed += 1;
        if pruned.is_empty() {
            table.remove((index, principal.as_str()))?;
        } else {
            table.put(
                (index, principal.as_str()),
                encode_bitmap(&pruned).as_slice(),
            )?;
        }
    }
    Ok(changed)
}

/// Keeps in every document's entry only the child runs `keep(index, run)` accepts: `gc`
/// drops the runs no retained version uses, `drop_index` those of the dropped index.
pub(crate) fn retain_doc_runs(
    txn: &WriteTransaction,
    keep: impl Fn(u32, ChildRun) -> bool,
) -> Result<(), StorageError> {
    let mut docs = txn.open_table(DOCS)?;
    let mut changed = Vec::new();
    for entry in docs.all()? {
        let (doc_id, value) = entry?;
        let mut entry: DocEntry = decode(value.value(), "doc entry")?;
        if entry.retain_runs(&keep) {
            changed.push((doc_id.value().to_string(), entry));
        }
    }
    for (doc_id, entry) in changed {
        docs.put(doc_id.as_str(), encode(&entry).as_slice())?;
    }
    Ok(())
}

pub(crate) fn principals_of(acl: &[String]) -> Vec<String> {
    if acl.is_empty() {
        vec![PUBLIC.to_string()]
    } else {
        let mut p: Vec<String> = acl.iter().map(|s| s.trim().to_string()).collect();
        p.sort();
        p.dedup();
        p
    }
}
