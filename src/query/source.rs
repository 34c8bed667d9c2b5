//! Children ranked elsewhere: a copy of a version in another engine (Milvus, through the
//! `milvus/` crate) ranks them, folio checks every answer and assembles the units itself.

use roaring::RoaringBitmap;

use crate::index::Metric;
use crate::storage::read::state::Access;

/// Why a [`ChildSource`] could not answer.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// What a [`ChildSource`] is asked: the best children of one version for a query, among
/// those the caller may see now.
pub struct Ask<'a> {
    pub(crate) index: &'a str,
    pub(crate) version: u64,
    pub(crate) metric: Metric,
    pub(crate) query: &'a [f32],
    pub(crate) wanted: usize,
    pub(crate) access: &'a Access,
    pub(crate) visible: &'a RoaringBitmap,
}

impl Ask<'_> {
    /// The index folio resolved the request's target to.
    pub fn index(&self) -> &str {
        self.index
    }

    /// The version of it (an alias's route already taken).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The index's metric, which says what a score is ([`Candidate::score`]).
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The query vector (normalised for cosine indexes).
    pub fn query(&self) -> &[f32] {
        self.query
    }

    /// How many visible children to return.
    pub fn wanted(&self) -> usize {
        self.wanted
    }

    /// Who asks.
    pub fn access(&self) -> &Access {
        self.access
    }

    /// Whether the caller may see child `number` of this version now, by the store's current
    /// ACLs and the request's filter: folio applies this again to every answer, so a row
    /// the source has not caught up on never reaches the caller.
    pub fn is_visible(&self, number: u32) -> bool {
        self.visible.contains(number)
    }

    /// How many children the caller may see.
    pub fn visible(&self) -> u64 {
        self.visible.len()
    }
}

/// What [`crate::QueryError::Remote`] holds when a source answered with a child under
/// another chunk id than the store's (or with a score that is not a number): the source
/// holds a copy of another store's index, or of another index.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("child {child} of `{index}`@{version} is `{expected}`, the source answered `{answered}` (score {score})")]
#[non_exhaustive]
pub struct WrongChild {
    /// The child number the source named.
    pub child: u32,
    /// The index asked.
    pub index: String,
    /// The version asked.
    pub version: u64,
    /// The store's chunk id for that child.
    pub expected: String,
    /// The chunk id the source gave.
    pub answered: String,
    /// The score the source gave.
    pub score: f32,
}

/// A child a source ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its number in the index ([`crate::store::ExportedChild::number`]).
    pub child: u32,
    /// Its chunk id (`doc_id#c<ordinal>`), checked against the store's, so a copy of
    /// another store's index is refused rather than answered from.
    pub chunk_id: String,
    /// Its similarity to the query on folio's scale for [`Ask::metric`] (higher is closer:
    /// the negated squared distance for L2).
    pub score: f32,
}

/// Something that ranks a version's children for folio: [`crate::Store::search_through`].
pub trait ChildSource {
    /// Names the source: a search through it is logged with the target `NAME:TARGET`.
    fn name(&self) -> &str;

    /// The best [`Ask::wanted`] children of the asked version that [`Ask::is_visible`]
    /// admits, best first; fewer only when the source holds no more such children.
    fn children(&mut self, ask: &Ask<'_>) -> Result<Vec<Candidate>, SourceError>;
}
