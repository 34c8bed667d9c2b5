//! The lexical leg as a first stage: the version's visible children ranked by BM25 on a
//! [`Snapshot`] ([`Snapshot::search_lexical`]). Scores are BM25's, at least 0; only children
//! holding a query term are ranked, so a ranking may hold fewer than the visible children.

use roaring::RoaringBitmap;

use super::rank::Rank;
use super::QueryError;
use crate::index::ChildSearch;
use crate::storage::read::snapshot::Snapshot;
use crate::storage::read::state::VersionView;

/// The version's children ranked by BM25 among the visible ones (the same set the dense
/// leg is given: ACL, live children, metadata filter), applied to the postings before
/// scoring. Exact: asked again deeper, its ranking begins with the one it gave.
pub(crate) struct Lexical<'a> {
    pub(crate) snapshot: &'a Snapshot<'a>,
    pub(crate) view: &'a VersionView,
    pub(crate) query: &'a str,
    pub(crate) visible: &'a RoaringBitmap,
}

impl Rank for Lexical<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        Ok(self
            .snapshot
            .search_lexical(self.view, self.query, self.visible, wanted)?)
    }
}
