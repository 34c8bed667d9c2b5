//! Every stored value carries a checksum (format 9): the 8 bytes after its payload are the
//! xxh3-64 of the table's name, the key's redb bytes and the payload. redb checks its page
//! checksums only in its integrity check, never on a read, so without this a read-only
//! process would answer from a damaged page. The tables' value type is [`Sealed`]: the
//! compiler sends every insert through [`WriteSealed::put`] (which seals) and every read
//! through [`ReadSealed`] (which verifies), and a mismatch is [`StorageError::Damaged`].
//!
//! redb itself can panic on a damaged page (an entry's offsets read from the page and
//! trusted); the reads here run redb's calls under [`contain`], so the damage is an error.

use std::borrow::Borrow;
use std::ops::RangeBounds;
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
    /// The payload stored under `key`.
    fn read<'k>(
        &self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Verified<'_>>, StorageError>;

    /// The rows whose keys fall in `range`, in key order.
    fn rows<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Rows<'_, K>, StorageError>
    where
        KR: Borrow<K::SelfType<'a>> + 'a;

    /// Every row, in key order.
    fn all(&self) -> Result<Rows<'_, K>, StorageError>;
}

impl<K: Key + 'static, T: ReadableTable<K, Sealed> + TableHandle> ReadSealed<K> for T {
    fn read<'k>(
        &self,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<Option<Verified<'_>>, StorageError> {
        let key = key.borrow();
        contain(|| match self.get(key)? {
            Some(guard) => verify::<K>(self.name(), key, guard).map(Some),
            None => Ok(None),
        })
    }

    fn rows<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Rows<'_, K>, StorageError>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        let inner = contain(|| Ok::<_, StorageError>(self.range(range)?))?;
        Ok(Rows {
            table: self.name().to_string(),
            inner,
        })
    }

    fn all(&self) -> Result<Rows<'_, K>, StorageError> {
        let inner = contain(|| Ok::<_, StorageError>(self.iter()?))?;
        Ok(Rows {
            table: self.name().to_string(),
            inner,
        })
    }
}

/// Rows of a table, each verified as it is read.
pub(crate) struct Rows<'a, K: Key + 'static> {
    table: String,
    inner: redb::Range<'a, K, Sealed>,
}

/// A row as redb hands it over: its key, and its value not yet verified.
type StoredRow<'a, K> = (AccessGuard<'a, K>, AccessGuard<'a, Sealed>);

/// A row: its key, and its verified payload.
pub(crate) type Row<'a, K> = (AccessGuard<'a, K>, Verified<'a>);

impl<'a, K: Key + 'static> Rows<'a, K> {
    fn verified(
        &self,
        row: Option<Result<StoredRow<'a, K>, redb::StorageError>>,
    ) -> Option<Result<Row<'a, K>, StorageError>> {
        let (key, value) = match row? {
            Ok(row) => row,
            Err(e) => return Some(Err(e.into())),
        };
        Some(contain(|| {
            let verified = verify::<K>(&self.table, &key.value(), value)?;
            Ok((key, verified))
        }))
    }
}

impl<'a, K: Key + 'static> Iterator for Rows<'a, K> {
    type Item = Result<Row<'a, K>, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        match contain(|| Ok(self.inner.next())) {
            Ok(row) => self.verified(row),
            Err(e) => Some(Err(e)),
        }
    }
}

impl<K: Key + 'static> DoubleEndedIterator for Rows<'_, K> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match contain(|| Ok(self.inner.next_back())) {
            Ok(row) => self.verified(row),
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
