//! Every stored value carries a checksum (format 9): the 8 bytes after its payload are the
//! xxh3-64 of the table's name, the key's redb bytes and the payload. redb checks its page
//! checksums only in its integrity check, never on a read, so without this a read-only
//! process would answer from a damaged page. The tables' value type is [`Sealed`]: the
//! compiler sends every insert through [`WriteSealed::put`] (which seals) and every read
//! through [`ReadSealed`] (which verifies), and a mismatch is [`StorageError::Damaged`].
//!
//! redb itself can panic on a damaged page (an entry's offsets read from the page and
//! trusted); the reads here run redb's calls under [`contain`], so the damage is an error.
//!
//! A seal proves what a row holds, not that a row is missing: a damaged leaf (a key's bytes,
//! its entry count or offsets) or branch separator can hide a row from a lookup while every
//! row still read verifies. So an absence is confirmed before it is an answer: a lookup that
//! finds nothing reads the rows on both sides of where the key would be, which must verify
//! and bracket it; a range reads the rows just outside its bounds, which must verify and lie
//! outside; and rows come in strictly increasing key order, inside the bounds. A lookup's
//! binary search meets the damaged entry of a leaf on its way (it had to compare with the
//! key's own entry), and a wrong separator sends both the lookup and its neighbours' seek to
//! the same wrong place, so the rows beside it are the damaged ones, or ones on the wrong
//! side of the key. What a read cannot see is a child page number that leads to another
//! well-formed page of the same table (an older copy of it, or a sibling): redb's checksum of
//! each child, kept in its parent, is checked by `folio check` (redb's integrity check).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::{Bound, RangeBounds};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redb::{AccessGuard, Key, ReadableTable, Table, TableHandle, TypeName, Value};
use xxhash_rust::xxh3::Xxh3;

use crate::storage::error::StorageError;

/// The checksum's bytes after each payload.
const TRAILER: usize = 8;

/// The value type of every table: a payload and its checksum.
#[derive(Debug)]
pub(crate) struct Sealed;

/// A value's stored bytes, payload and checksum, as redb hands them over: not yet verified,
/// and readable only through [`ReadSealed`]. Made only by [`WriteSealed::put`].
#[derive(Debug)]
pub(crate) struct SealedBytes<'a>(&'a [u8]);

impl Value for Sealed {
    type SelfType<'a>
        = SealedBytes<'a>
    where
        Self: 'a;
    type AsBytes<'a>
        = &'a [u8]
    where
        Self: 'a;

    fn fixed_width() -> Option<usize> {
        None
    }

    fn from_bytes<'a>(data: &'a [u8]) -> SealedBytes<'a>
    where
        Self: 'a,
    {
        SealedBytes(data)
    }

    fn as_bytes<'a, 'b: 'a>(value: &'a SealedBytes<'b>) -> &'a [u8]
    where
        Self: 'b,
    {
        value.0
    }

    fn type_name() -> TypeName {
        TypeName::new("folio::sealed")
    }
}

fn checksum(table: &str, key: &[u8], payload: &[u8]) -> [u8; TRAILER] {
    let mut hasher = Xxh3::new();
    hasher.update(&(table.len() as u64).to_le_bytes());
    hasher.update(table.as_bytes());
    hasher.update(&(key.len() as u64).to_le_bytes());
    hasher.update(key);
    hasher.update(payload);
    hasher.digest().to_le_bytes()
}

/// `payload` followed by its checksum under `table` and `key`.
fn seal(table: &str, key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut sealed = Vec::with_capacity(payload.len() + TRAILER);
    sealed.extend_from_slice(payload);
    sealed.extend_from_slice(&checksum(table, key, payload));
    sealed
}

/// The payload of `stored` when its checksum matches `table` and `key`.
fn unseal<'a>(table: &str, key: &[u8], stored: &'a [u8]) -> Option<&'a [u8]> {
    let split = stored.len().checked_sub(TRAILER)?;
    let (payload, trailer) = stored.split_at(split);
    (trailer == checksum(table, key, payload)).then_some(payload)
}

/// Runs `f`, a call into redb over pages that may be damaged, with a panic inside redb
/// turned into [`StorageError::DamagedPage`].
pub(crate) fn contain<T, E: From<StorageError>>(f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a page redb could not read".to_string());
        Err(StorageError::DamagedPage(format!("redb panicked: {what}")).into())
    })
}

fn damaged<K: Key>(table: &str, key: &K::SelfType<'_>) -> StorageError {
    StorageError::Damaged {
        table: table.to_string(),
        key: format!("{key:?}"),
    }
}

/// A row read beside `key` where it must not be (a lost row's place, out of key order):
/// the page that routes to it or holds it is damaged.
fn misplaced<K: Key>(table: &str, found: &[u8], what: impl std::fmt::Display) -> StorageError {
    StorageError::DamagedPage(format!(
        "table `{table}`: key {:?} read {what}: a damaged page lost or moved rows",
        K::from_bytes(found)
    ))
}

/// Whether `key` (redb's bytes) lies in `range`, in the key type's order.
fn within<K: Key>(key: &[u8], (lower, upper): ByteRange<'_>) -> bool {
    let above_lower = match lower {
        Bound::Included(bound) => K::compare(key, bound) != Ordering::Less,
        Bound::Excluded(bound) => K::compare(key, bound) == Ordering::Greater,
        Bound::Unbounded => true,
    };
    let below_upper = match upper {
        Bound::Included(bound) => K::compare(key, bound) != Ordering::Greater,
        Bound::Excluded(bound) => K::compare(key, bound) == Ordering::Less,
        Bound::Unbounded => true,
    };
    above_lower && below_upper
}

/// redb's bytes of keys bounding a range.
type ByteRange<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// Which end of a probe's range is read: the row beside where its other, bounded end seeks.
#[derive(Clone, Copy)]
enum Beside {
    /// The last row below an upper bound (`range(..bound).next_back()`).
    Before,
    /// The first row above a lower bound (`range(bound..).next()`).
    After,
}

/// Confirms the row beside a seek position: the row `side` of where `probe` seeks (the
/// table's end counts as confirmed) verifies and lies inside `must` (redb's ranges do not
/// check the bound a cursor seeks from, so a misrouted seek shows here).
fn confirm_beside<K, T>(
    table: &T,
    probe: ByteRange<'_>,
    side: Beside,
    must: ByteRange<'_>,
) -> Result<(), StorageError>
where
    K: Key + 'static,
    T: ReadableTable<K, Sealed> + TableHandle,
{
    let range = (
        probe.0.map(|key| K::from_bytes(key)),
        probe.1.map(|key| K::from_bytes(key)),
    );
    let found = contain(|| {
        let row = match side {
            Beside::Before => table.range(range)?.next_back(),
            Beside::After => table.range(range)?.next(),
        };
        let Some((key, value)) = row.transpose()? else {
            return Ok::<_, StorageError>(None);
        };
        verify::<K>(table.name(), &key.value(), value)?;
        let bytes = K::as_bytes(&key.value()).as_ref().to_vec();
        Ok(Some(bytes))
    })?;
    match found {
        Some(found) if !within::<K>(&found, must) => {
            let (place, bound) = match side {
                Beside::Before => ("below", probe.1),
                Beside::After => ("above", probe.0),
            };
            let bound = bound.map(|key| K::from_bytes(key));
            Err(misplaced::<K>(
                table.name(),
                &found,
                format!("as the row {place} {bound:?}"),
            ))
        }
        _ => Ok(()),
    }
}

/// Confirms that `key` is not in `table` after a lookup found nothing: the rows on both
/// sides of its place verify and lie strictly below and above it (the row above is sought
/// from `key` itself, so a key the lookup missed but a seek finds is damage too).
fn confirm_absent<K, T>(table: &T, key: &K::SelfType<'_>) -> Result<(), StorageError>
where
    K: Key + 'static,
    T: ReadableTable<K, Sealed> + TableHandle,
{
    let sought = K::as_bytes(key);
    let sought = sought.as_ref();
    let below = (Bound::Unbounded, Bound::Excluded(sought));
    confirm_beside::<K, T>(table, below, Beside::Before, below)?;
    let above = (Bound::Excluded(sought), Bound::Unbounded);
    let from = (Bound::Included(sought), Bound::Unbounded);
    confirm_beside::<K, T>(table, from, Beside::After, above)
}

/// Confirms the rows just outside `range`: below its start and above its end, each verified
/// and outside. A probe seeks where the range's own cursor does (a range from `Included(k)`
/// and the rows below `Excluded(k)` both seek before `k`), so rows a misrouted seek skipped
/// are the ones the probe finds.
fn confirm_ends<K, T>(table: &T, range: ByteRange<'_>) -> Result<(), StorageError>
where
    K: Key + 'static,
    T: ReadableTable<K, Sealed> + TableHandle,
{
    if !matches!(range.0, Bound::Unbounded) {
        let below = (Bound::Unbounded, flip(range.0));
        confirm_beside::<K, T>(table, below, Beside::Before, below)?;
    }
    if !matches!(range.1, Bound::Unbounded) {
        let above = (flip(range.1), Bound::Unbounded);
        confirm_beside::<K, T>(table, above, Beside::After, above)?;
    }
    Ok(())
}

/// The bound of the rows on the other side of `bound`: below `Included(k)` lie the rows
/// up to `Excluded(k)`, and so on.
fn flip(bound: Bound<&[u8]>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Excluded(key),
        Bound::Excluded(key) => Bound::Included(key),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A bound as redb's bytes of its key.
fn bound_bytes<'a, K: Key + 'a, KR: Borrow<K::SelfType<'a>>>(bound: Bound<&KR>) -> Bound<Vec<u8>> {
    bound.map(|key| K::as_bytes(key.borrow()).as_ref().to_vec())
}

/// [`Bound::as_ref`] down to the bytes.
fn as_bytes(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// A value whose checksum matched: its payload.
pub(crate) struct Verified<'a> {
    guard: AccessGuard<'a, Sealed>,
    len: usize,
}

impl Verified<'_> {
    /// The payload (the bytes before the checksum).
    pub(crate) fn value(&self) -> &[u8] {
        &self.guard.value().0[..self.len]
    }
}

fn verify<'a, K: Key + 'static>(
    table: &str,
    key: &K::SelfType<'_>,
    guard: AccessGuard<'a, Sealed>,
) -> Result<Verified<'a>, StorageError> {
    let key_bytes = K::as_bytes(key);
    let len = unseal(table, key_bytes.as_ref(), guard.value().0)
        .ok_or_else(|| damaged::<K>(table, key))?
        .len();
    Ok(Verified { guard, len })
}

/// Reading a table's values, each verified against its checksum.
pub(crate) trait ReadSealed<K: Key + 'static> {
    /// The payload stored under `key`; `None` only once the rows beside the key's place
    /// confirm its absence (two more descents, on a miss only).
    fn read<'k>(
        &self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Verified<'_>>, StorageError>;

    /// The rows whose keys fall in `range`, in key order, once the rows just outside its
    /// bounds are confirmed outside.
    fn rows<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Rows<'_, K>, StorageError>
    where
        KR: Borrow<K::SelfType<'a>> + 'a;

    /// Every row, in key order; read to the end, as many as redb records for the table.
    fn all(&self) -> Result<Rows<'_, K>, StorageError>;
}

impl<K: Key + 'static, T: ReadableTable<K, Sealed> + TableHandle> ReadSealed<K> for T {
    fn read<'k>(
        &self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Verified<'_>>, StorageError> {
        let key = key.borrow();
        let found = contain(|| match self.get(key)? {
            Some(guard) => verify::<K>(self.name(), key, guard).map(Some),
            None => Ok(None),
        })?;
        if found.is_none() {
            confirm_absent::<K, T>(self, key)?;
        }
        Ok(found)
    }

    fn rows<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Rows<'_, K>, StorageError>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        let bounds = (
            bound_bytes::<K, KR>(range.start_bound()),
            bound_bytes::<K, KR>(range.end_bound()),
        );
        confirm_ends::<K, T>(self, (as_bytes(&bounds.0), as_bytes(&bounds.1)))?;
        let inner = contain(|| Ok::<_, StorageError>(self.range(range)?))?;
        Ok(Rows::new(self.name(), inner, bounds))
    }

    fn all(&self) -> Result<Rows<'_, K>, StorageError> {
        let (inner, recorded) = contain(|| Ok::<_, StorageError>((self.iter()?, self.len()?)))?;
        let mut rows = Rows::new(self.name(), inner, (Bound::Unbounded, Bound::Unbounded));
        rows.recorded = Some(recorded);
        Ok(rows)
    }
}

/// Rows of a table, each verified as it is read, and each inside the range asked for and
/// after the row before it (before it, read from the back): a damaged branch that repeats
/// or misplaces rows is an error, not an answer. A whole table read to its end must have
/// as many rows as redb records for it (its length, kept with the table's root).
pub(crate) struct Rows<'a, K: Key + 'static> {
    table: String,
    inner: redb::Range<'a, K, Sealed>,
    /// The range asked for, as redb's bytes.
    bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    /// The last key read from the front, and from the back.
    front: Option<Vec<u8>>,
    back: Option<Vec<u8>>,
    /// The rows redb records for the table, when all of it is read (until compared).
    recorded: Option<u64>,
    /// The rows redb handed over, verified or not.
    read: u64,
}

/// A row as redb hands it over: its key, and its value not yet verified.
type StoredRow<'a, K> = (AccessGuard<'a, K>, AccessGuard<'a, Sealed>);

/// A row: its key, and its verified payload.
pub(crate) type Row<'a, K> = (AccessGuard<'a, K>, Verified<'a>);

impl<'a, K: Key + 'static> Rows<'a, K> {
    fn new(
        table: &str,
        inner: redb::Range<'a, K, Sealed>,
        bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    ) -> Self {
        Rows {
            table: table.to_string(),
            inner,
            bounds,
            front: None,
            back: None,
            recorded: None,
            read: 0,
        }
    }

    /// The end of the rows (`None` from redb): an error instead when a whole table came
    /// short of, or past, the rows redb records for it.
    fn ended(&mut self) -> Option<Result<Row<'a, K>, StorageError>> {
        let recorded = self.recorded.take()?;
        (recorded != self.read).then(|| {
            Err(StorageError::DamagedPage(format!(
                "table `{}`: {} rows read of the {recorded} redb records (a damaged page \
                 lost or repeated rows)",
                self.table, self.read
            )))
        })
    }

    fn verified(
        &mut self,
        row: Option<Result<StoredRow<'a, K>, redb::StorageError>>,
        side: Beside,
    ) -> Option<Result<Row<'a, K>, StorageError>> {
        let (key, value) = match row {
            None => return self.ended(),
            Some(Ok(row)) => row,
            Some(Err(e)) => return Some(Err(e.into())),
        };
        self.read += 1;
        Some(contain(|| {
            let verified = verify::<K>(&self.table, &key.value(), value)?;
            self.in_order(K::as_bytes(&key.value()).as_ref(), side)?;
            Ok((key, verified))
        }))
    }

    /// Records `key`, read from `side`, after checking it lies inside the range and beyond
    /// the last key read from that side.
    fn in_order(&mut self, key: &[u8], side: Beside) -> Result<(), StorageError> {
        let (last, expected) = match side {
            Beside::After => (&mut self.front, Ordering::Greater),
            Beside::Before => (&mut self.back, Ordering::Less),
        };
        let ordered = last
            .as_deref()
            .is_none_or(|last| K::compare(key, last) == expected);
        if !ordered || !within::<K>(key, (as_bytes(&self.bounds.0), as_bytes(&self.bounds.1))) {
            return Err(misplaced::<K>(
                &self.table,
                key,
                "out of key order, or outside the range read",
            ));
        }
        let last = last.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(key);
        Ok(())
    }
}

impl<'a, K: Key + 'static> Iterator for Rows<'a, K> {
    type Item = Result<Row<'a, K>, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        match contain(|| Ok(self.inner.next())) {
            Ok(row) => self.verified(row, Beside::After),
            Err(e) => Some(Err(e)),
        }
    }
}

impl<K: Key + 'static> DoubleEndedIterator for Rows<'_, K> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match contain(|| Ok(self.inner.next_back())) {
            Ok(row) => self.verified(row, Beside::Before),
            Err(e) => Some(Err(e)),
        }
    }
}

/// Writing a table's values, each sealed with its checksum.
pub(crate) trait WriteSealed<K: Key + 'static> {
    /// Stores `payload` under `key` (replacing any value).
    fn put<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        payload: &[u8],
    ) -> Result<(), StorageError>;

    /// Stores `payload` under `key`, sealed for the table named `table`: a table built
    /// under a temporary name and then renamed to `table` (the upgrades).
    fn put_as<'k>(
        &mut self,
        table: &str,
        key: impl Borrow<K::SelfType<'k>>,
        payload: &[u8],
    ) -> Result<(), StorageError>;

    /// Removes the value under `key`, returning its payload when it verifies.
    fn take<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Vec<u8>>, StorageError>;
}

impl<K: Key + 'static> WriteSealed<K> for Table<'_, K, Sealed> {
    fn put<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        payload: &[u8],
    ) -> Result<(), StorageError> {
        let table = self.name().to_string();
        self.put_as(&table, key, payload)
    }

    fn put_as<'k>(
        &mut self,
        table: &str,
        key: impl Borrow<K::SelfType<'k>>,
        payload: &[u8],
    ) -> Result<(), StorageError> {
        let key = key.borrow();
        let sealed = seal(table, K::as_bytes(key).as_ref(), payload);
        self.insert(key, SealedBytes(&sealed))?;
        Ok(())
    }

    fn take<'k>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Vec<u8>>, StorageError> {
        let key = key.borrow();
        let table = self.name().to_string();
        contain(|| match self.remove(key)? {
            Some(guard) => Ok(Some(verify::<K>(&table, key, guard)?.value().to_vec())),
            None => Ok(None),
        })
    }
}

#[cfg(test)]
mod tests {
    //! Damage to the pages of one table, made by hand where redb keeps its tree: the rows a
    //! lookup or a range would lose are an error, never an absence.

    use super::*;
    use redb::{Database, ReadOnlyDatabase, ReadableDatabase, TableDefinition};

    const NUMBERS: TableDefinition<u64, Sealed> = TableDefinition::new("numbers");
    const PAGE: usize = 4096;
    /// The even numbers below this are stored (so odd ones are absent), 100 bytes each:
    /// about 30 leaves under one branch page.
    const STORED_BELOW: u64 = 2000;

    /// The table in a new file: its folder (removed when dropped), its path and its bytes.
    fn stored() -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("numbers.redb");
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(NUMBERS).unwrap();
            for n in (0..STORED_BELOW).step_by(2) {
                table.put(n, &[7u8; 100]).unwrap();
            }
        }
        txn.commit().unwrap();
        drop(db);
        let bytes = std::fs::read(&path).unwrap();
        (dir, path, bytes)
    }

    /// The table's branch page, found by its layout (`btree_base.rs`: type byte 2, the key
    /// count at 2, then each child's 16-byte checksum, each child's 8-byte page number and
    /// the keys, 8 bytes each for u64): its offset and separator keys.
    fn branch(bytes: &[u8]) -> (usize, Vec<u64>) {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        (0..bytes.len() / PAGE)
            .map(|page| page * PAGE)
            .filter(|&at| bytes[at] == 2)
            .find_map(|at| {
                let keys = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]) as usize;
                // A child takes 32 bytes of a branch page (checksum, page number, key).
                if !(4..PAGE / 32).contains(&keys) {
                    return None;
                }
                let start = at + 8 + 24 * (keys + 1);
                let separators: Vec<u64> = (0..keys).map(|i| u64_at(start + 8 * i)).collect();
                let ours = separators.windows(2).all(|w| w[0] < w[1])
                    && separators.iter().all(|&k| k % 2 == 0 && k < STORED_BELOW);
                ours.then_some((at, separators))
            })
            .expect("the table's branch page")
    }

    fn separator_at(branch: usize, keys: usize, i: usize) -> usize {
        branch + 8 + 24 * (keys + 1) + 8 * i
    }

    fn child_page_at(branch: usize, keys: usize, i: usize) -> usize {
        branch + 8 + 16 * (keys + 1) + 8 * i
    }

    fn reopened(path: &std::path::Path, damaged: &[u8]) -> ReadOnlyDatabase {
        std::fs::write(path, damaged).unwrap();
        ReadOnlyDatabase::open(path).unwrap()
    }

    fn is_damage<T>(read: Result<T, StorageError>) -> bool {
        matches!(read, Err(e) if e.is_damage())
    }

    #[test]
    fn a_separator_that_routes_a_lookup_past_its_row_is_damage_not_absence() {
        let (_dir, path, bytes) = stored();
        let (at, separators) = branch(&bytes);
        let i = separators.len() / 2;
        let last_of_child = separators[i];

        let db = reopened(&path, &bytes);
        let table = db.begin_read().unwrap().open_table(NUMBERS).unwrap();
        assert!(table.read(last_of_child).unwrap().is_some());
        assert!(
            table.read(last_of_child + 1).unwrap().is_none(),
            "a true absence"
        );
        drop((table, db));

        // The separator now sorts below the child's last row: lookups of it go to the next
        // child, which does not hold it.
        let mut damaged = bytes.clone();
        let lowered = separators[i - 1] + 1;
        let place = separator_at(at, separators.len(), i);
        damaged[place..place + 8].copy_from_slice(&lowered.to_le_bytes());
        let db = reopened(&path, &damaged);
        let table = db.begin_read().unwrap().open_table(NUMBERS).unwrap();
        assert!(is_damage(table.read(last_of_child)));
        assert!(is_damage(table.rows(last_of_child..)));
        // Reads the damage does not mislead still answer: the back of a range steps back
        // from the next child to the row, and a true absence is confirmed.
        let mut to_row = table.rows(..=last_of_child).unwrap();
        let (key, _) = to_row.next_back().unwrap().unwrap();
        assert_eq!(key.value(), last_of_child);
        assert!(table.read(0).unwrap().is_some());
        assert!(table.read(STORED_BELOW + 1).unwrap().is_none());
    }

    #[test]
    fn a_damaged_key_in_a_leaf_is_damage_not_absence() {
        let (_dir, path, bytes) = stored();
        let key = 1000u64;
        // The leaf stores its fixed-width keys one after another.
        let run = [key.to_le_bytes(), (key + 2).to_le_bytes()].concat();
        let place = bytes
            .windows(run.len())
            .position(|w| w == run.as_slice())
            .expect("the leaf's keys");
        let mut damaged = bytes.clone();
        // Still in key order, so only the seal tells it from a row written as 999.
        damaged[place..place + 8].copy_from_slice(&(key - 1).to_le_bytes());
        let db = reopened(&path, &damaged);
        let table = db.begin_read().unwrap().open_table(NUMBERS).unwrap();
        assert!(is_damage(table.read(key)));
        assert!(is_damage(table.read(key - 1)));
        assert!(table.read(key + 2).unwrap().is_some());
    }

    #[test]
    fn a_scan_that_meets_rows_twice_or_short_of_the_table_is_damage() {
        let (_dir, path, bytes) = stored();
        let (at, separators) = branch(&bytes);
        let keys = separators.len();
        let i = keys / 2;
        let (child, next) = (child_page_at(at, keys, i), child_page_at(at, keys, i + 1));

        let db = reopened(&path, &bytes);
        let table = db.begin_read().unwrap().open_table(NUMBERS).unwrap();
        assert_eq!(table.all().unwrap().filter(Result::is_ok).count(), 1000);
        drop((table, db));

        // Child `i` now leads to child `i + 1`'s page: its rows vanish, the next child's
        // come twice, and every row still verifies.
        let mut damaged = bytes.clone();
        damaged.copy_within(next..next + 8, child);
        let db = reopened(&path, &damaged);
        let table = db.begin_read().unwrap().open_table(NUMBERS).unwrap();
        let scanned: Result<Vec<_>, _> = table.all().unwrap().collect();
        assert!(is_damage(scanned));
        let ranged: Result<Vec<_>, _> = table.rows(0..STORED_BELOW).unwrap().collect();
        assert!(is_damage(ranged));
    }
}
