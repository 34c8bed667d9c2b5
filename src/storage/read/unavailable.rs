//! Indexes that failed to load. The store opens without them, so the others stay
//! searchable and `drop_index`, `check_integrity` and `stats` still work; writes that would
//! have to update every index are refused until the index is dropped.

/// An index the store could not load: a damaged segment, or graph parameters that an older
/// folio accepted and no decoder reads. Drop it ([`crate::store::Indexes::drop`]) and create it again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnavailableIndex {
    /// The index's name.
    pub name: String,
    #[serde(skip)]
    pub(crate) id: u32,
    /// Why it could not be loaded.
    pub reason: String,
}
