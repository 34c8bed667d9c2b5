//! What a store keeps in memory: per index, its record and the loaded versions.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use redb::ReadTransaction;
use roaring::RoaringBitmap;

use crate::filter::Filter;
use crate::index::lexical::CorpusStats;
use crate::index::planner::SearchOptions;
use crate::index::{search_segments, ChildSearch, QueryVector};
use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::current::{read_all, read_current};
use crate::storage::file::records::{decode, decode_bitmap, DocChunks, IndexRecord, VersionRecord};
use crate::storage::file::segment::{vector_table, Segment};
use crate::storage::file::shared_segments::SegmentFiles;
use crate::storage::file::tables::{ACL, ACL_CURRENT, DOC_CHUNKS, VERSIONS};
use crate::storage::read::filters::SharedFiltering;

use crate::storage::file::current::PUBLIC;
use crate::storage::file::sealed::ReadSealed;

/// Who is asking: the visible set of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The caller's principals (users or groups). Public documents are visible to everyone;
    /// an empty list sees public documents only.
    Principals(Vec<String>),
    /// Every live chunk, whatever its ACL: for tooling (`folio eval`, checks), never for
    /// answering end users.
    Unrestricted,
}

impl Access {
    /// Public documents only.
    pub fn public() -> Self {
        Access::Principals(Vec::new())
    }

    /// Public documents and those shared with any of `principals`.
    pub fn principals<S: Into<String>>(principals: impl IntoIterator<Item = S>) -> Self {
        Access::Principals(principals.into_iter().map(Into::into).collect())
    }
}

/// One index as loaded: its record and its newest version, plus the older versions loaded
/// so far. Resolved by [`Snapshot::resolve`](crate::store::Snapshot::resolve).
pub struct IndexState {
    name: String,
    record: IndexRecord,
    head: Arc<VersionView>,
    /// Every segment loaded for any version, shared between versions.
    segments: Mutex<HashMap<u32, Arc<Segment>>>,
    older: Mutex<HashMap<u64, Arc<VersionView>>>,
    /// The current-ACL bitmaps read so far (`current.rs`), by principal. Only commits that
    /// make a new head change them (`gc` only drops numbers no retained version uses), so
    /// they hold for as long as this state's head is the file's head; a state built for a
    /// newer head starts from the bitmaps its commit wrote.
    current: Mutex<HashMap<String, Arc<RoaringBitmap>>>,
    /// The union of every current bitmap (children of the documents that exist), for
    /// unrestricted searches of older versions; read on first use.
    existing: Mutex<Option<Arc<RoaringBitmap>>>,
    /// Per principal list asked so far: the union of its current bitmaps and the public
    /// one, so a search of an older version by a caller seen before costs one intersection.
    masks: Mutex<HashMap<Vec<String>, Arc<RoaringBitmap>>>,
    /// Filter columns and results, valid for every version, so shared by every state of
    /// this index (`filters.rs`).
    filtering: SharedFiltering,
    /// Where segments loaded from the file are mapped from (`None`: read into memory).
    files: Option<Arc<SegmentFiles>>,
}

/// At most this many principal lists keep a mask; the cache starts over when full.
const MASKS: usize = 256;

/// One immutable version of an index: its live children and its segments.
pub struct VersionView {
    index_id: u32,
    version: u64,
    live: RoaringBitmap,
    segments: Vec<Arc<Segment>>,
    documents: u64,
    /// Principal bitmaps as of this version, read on first use.
    acl: Mutex<HashMap<String, Arc<RoaringBitmap>>>,
    /// BM25's statistics of its live children, computed by the first lexical search.
    lexical_stats: OnceLock<CorpusStats>,
}

impl IndexState {
    pub(crate) fn load(
        txn: &ReadTransaction,
        name: &str,
        record: IndexRecord,
        files: Option<Arc<SegmentFiles>>,
    ) -> Result<Self, StorageError> {
        let mut segments = HashMap::new();
        let head = load_view(txn, &record, record.head, &mut segments, files.as_deref())?;
        let head = Arc::new(head);
        Ok(IndexState {
            name: name.to_string(),
            record,
            head,
            segments: Mutex::new(segments),
            older: Mutex::new(HashMap::new()),
            current: Mutex::new(HashMap::new()),
            existing: Mutex::new(None),
            masks: Mutex::new(HashMap::new()),
            filtering: SharedFiltering::default(),
            files,
        })
    }

    /// A new index's state before anything is built: version 0, empty.
    pub(crate) fn empty(name: &str, record: IndexRecord, stored: &VersionRecord) -> Self {
        let head = VersionView::new(
            record.id,
            record.head,
            stored,
            RoaringBitmap::new(),
            Vec::new(),
        );
        IndexState {
            name: name.to_string(),
            record,
            head: Arc::new(head),
            segments: Mutex::new(HashMap::new()),
            older: Mutex::new(HashMap::new()),
            current: Mutex::new(HashMap::new()),
            existing: Mutex::new(None),
            masks: Mutex::new(HashMap::new()),
            filtering: SharedFiltering::default(),
            files: None,
        }
    }

    /// The same state with only the versions in `keep` (and the segments they use) cached:
    /// what remains in memory after a garbage collection deleted the others.
    pub(crate) fn retain(&self, keep: &std::collections::BTreeSet<u64>) -> IndexState {
        let older = kept(&self.older, |v| keep.contains(v));
        let used: std::collections::HashSet<u32> = older
            .values()
            .chain(std::iter::once(&self.head))
            .flat_map(|view| view.segments.iter().map(|s| s.id()))
            .collect();
        let segments = kept(&self.segments, |id| used.contains(id));
        IndexState {
            name: self.name.clone(),
            record: self.record.clone(),
            head: self.head.clone(),
            segments: Mutex::new(segments),
            older: Mutex::new(older),
            // The collection pruned the stored bitmaps: read them again.
            current: Mutex::new(HashMap::new()),
            existing: Mutex::new(None),
            masks: Mutex::new(HashMap::new()),
            filtering: self.filtering.clone(),
            files: self.files.clone(),
        }
    }

    /// The state after a commit: `head` is the new newest version; loaded segments carry
    /// over, and so do the current-ACL bitmaps except those the commit wrote, `current`.
    pub(crate) fn next(
        &self,
        record: IndexRecord,
        head: VersionView,
        current: HashMap<String, RoaringBitmap>,
    ) -> IndexState {
        let mut segments = self.segments.lock().clone();
        for segment in &head.segments {
            segments
                .entry(segment.id())
                .or_insert_with(|| segment.clone());
        }
        let mut older = self.older.lock().clone();
        older.insert(self.head.version, self.head.clone());
        let mut bitmaps = self.current.lock().clone();
        let existing = if current.is_empty() {
            self.existing.lock().clone()
        } else {
            None
        };
        for (principal, bitmap) in current {
            bitmaps.insert(principal, Arc::new(bitmap));
        }
        IndexState {
            name: self.name.clone(),
            record,
            head: Arc::new(head),
            segments: Mutex::new(segments),
            older: Mutex::new(older),
            current: Mutex::new(bitmaps),
            existing: Mutex::new(existing),
            masks: Mutex::new(HashMap::new()),
            filtering: self.filtering.clone(),
            files: self.files.clone(),
        }
    }

    /// The children `filter` matches, in any version of this index (intersect with a
    /// visible set); see `filters.rs` for what is cached.
    pub(crate) fn matching(
        &self,
        txn: &ReadTransaction,
        filter: &Filter,
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        self.filtering
            .lock()
            .matching(txn, self.record.id, self.record.next_child, filter)
    }

    /// The children `access` may see in `view`, a version of this index: what the version
    /// shows them, and, unless it is the head (whose bitmaps are the current ACLs), only
    /// children whose document still exists and currently admits them.
    pub(crate) fn visible(
        &self,
        txn: &ReadTransaction,
        view: &VersionView,
        access: &Access,
    ) -> Result<RoaringBitmap, StorageError> {
        let mut visible = view.visible(txn, access)?;
        if view.version == self.head.version {
            return Ok(visible);
        }
        match access {
            Access::Unrestricted => visible &= &*self.existing(txn)?,
            Access::Principals(principals) => visible &= &*self.mask(txn, principals)?,
        }
        Ok(visible)
    }

    /// What `principals` may see now: the union of their current bitmaps and the public one.
    fn mask(
        &self,
        txn: &ReadTransaction,
        principals: &[String],
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        if let Some(mask) = self.masks.lock().get(principals) {
            return Ok(mask.clone());
        }
        let mut now = (*self.current_bitmap(txn, PUBLIC)?).clone();
        for principal in principals.iter().filter(|p| !p.is_empty()) {
            now |= &*self.current_bitmap(txn, principal)?;
        }
        let now = Arc::new(now);
        let mut masks = self.masks.lock();
        if masks.len() >= MASKS {
            masks.clear();
        }
        masks.insert(principals.to_vec(), now.clone());
        Ok(now)
    }

    fn current_bitmap(
        &self,
        txn: &ReadTransaction,
        principal: &str,
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        if let Some(bitmap) = self.current.lock().get(principal) {
            return Ok(bitmap.clone());
        }
        let table = txn.open_table(ACL_CURRENT)?;
        let bitmap = Arc::new(read_current(&table, self.record.id, principal)?);
        self.current
            .lock()
            .insert(principal.to_string(), bitmap.clone());
        Ok(bitmap)
    }

    fn existing(&self, txn: &ReadTransaction) -> Result<Arc<RoaringBitmap>, StorageError> {
        if let Some(bitmap) = self.existing.lock().as_ref() {
            return Ok(bitmap.clone());
        }
        let table = txn.open_table(ACL_CURRENT)?;
        let mut all = RoaringBitmap::new();
        for (_, bitmap) in read_all(&table, self.record.id)? {
            all |= bitmap;
        }
        let all = Arc::new(all);
        *self.existing.lock() = Some(all.clone());
        Ok(all)
    }

    /// This index at `record`, which another process's commits moved on from this state's:
    /// the new head reuses every loaded segment it lists and reads only the new ones, and
    /// the older versions `txn` still holds stay cached (with the segments they use).
    pub(crate) fn advance(
        &self,
        txn: &ReadTransaction,
        record: IndexRecord,
    ) -> Result<IndexState, StorageError> {
        let mut segments = self.segments.lock().clone();
        let head = load_view(
            txn,
            &record,
            record.head,
            &mut segments,
            self.files.as_deref(),
        )?;
        let versions = txn.open_table(VERSIONS)?;
        let mut older = HashMap::new();
        let cached = self.older.lock();
        for (version, view) in cached.iter().chain([(&self.head.version, &self.head)]) {
            if *version != record.head && versions.get((record.id, *version))?.is_some() {
                older.insert(*version, view.clone());
            }
        }
        drop(cached);
        let used: std::collections::HashSet<u32> = older
            .values()
            .flat_map(|view| view.segments.iter())
            .chain(head.segments.iter())
            .map(|s| s.id())
            .collect();
        segments.retain(|id, _| used.contains(id));
        Ok(IndexState {
            name: self.name.clone(),
            record,
            head: Arc::new(head),
            segments: Mutex::new(segments),
            older: Mutex::new(older),
            // The current-ACL bitmaps belong to the head: the new head's are read on use.
            current: Mutex::new(HashMap::new()),
            existing: Mutex::new(None),
            masks: Mutex::new(HashMap::new()),
            filtering: self.filtering.clone(),
            files: self.files.clone(),
        })
    }

    /// The index's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn id(&self) -> u32 {
        self.record.id
    }

    pub(crate) fn record(&self) -> &IndexRecord {
        &self.record
    }

    /// Where its segments and postings are mapped from (`None`: read into memory).
    pub(crate) fn files(&self) -> Option<&SegmentFiles> {
        self.files.as_deref()
    }

    /// Who made this index's vectors.
    pub fn embedder(&self) -> &crate::embed::EmbedderIdentity {
        &self.record.embedder
    }

    /// The newest version.
    pub fn head(&self) -> Arc<VersionView> {
        self.head.clone()
    }

    /// Version `version`, loading it from `txn` when it is not in memory yet.
    pub(crate) fn version(
        &self,
        txn: &ReadTransaction,
        version: u64,
    ) -> Result<Arc<VersionView>, ReadError> {
        if version == self.head.version {
            return Ok(self.head.clone());
        }
        // Asked of the transaction even when cached: a garbage collection may have deleted
        // the version (and its chunks) since it was loaded.
        let exists = txn
            .open_table(VERSIONS)?
            .get((self.record.id, version))?
            .is_some();
        if !exists {
            return Err(ReadError::UnknownVersion {
                index: self.name.clone(),
                version,
            });
        }
        if let Some(view) = self.older.lock().get(&version) {
            return Ok(view.clone());
        }
        let mut segments = self.segments.lock();
        let files = self.files.as_deref();
        let view = Arc::new(load_view(txn, &self.record, version, &mut segments, files)?);
        self.older.lock().insert(version, view.clone());
        Ok(view)
    }
}

/// The entries of `map` whose key `keep` accepts.
fn kept<K: Copy + Eq + std::hash::Hash, V>(
    map: &Mutex<HashMap<K, Arc<V>>>,
    keep: impl Fn(&K) -> bool,
) -> HashMap<K, Arc<V>> {
    map.lock()
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (*k, v.clone()))
        .collect()
}

fn load_view(
    txn: &ReadTransaction,
    record: &IndexRecord,
    version: u64,
    segments: &mut HashMap<u32, Arc<Segment>>,
    files: Option<&SegmentFiles>,
) -> Result<VersionView, StorageError> {
    let table = txn.open_table(VERSIONS)?;
    let value = table.read((record.id, version))?.ok_or_else(|| {
        StorageError::corrupt(format!("version {version} of index {} missing", record.id))
    })?;
    let stored: VersionRecord = decode(value.value(), "version record")?;
    let mut loaded = Vec::with_capacity(stored.segments.len());
    for id in &stored.segments {
        let segment = match segments.get(id) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(Segment::load(txn, record, *id, files)?);
                segments.insert(*id, s.clone());
                s
            }
        };
        loaded.push(segment);
    }
    Ok(VersionView::new(
        record.id,
        version,
        &stored,
        decode_bitmap(&stored.live, "live bitmap")?,
        loaded,
    ))
}

impl VersionView {
    pub(crate) fn new(
        index_id: u32,
        version: u64,
        stored: &VersionRecord,
        live: RoaringBitmap,
        segments: Vec<Arc<Segment>>,
    ) -> Self {
        VersionView {
            index_id,
            version,
            live,
            segments,
            documents: stored.documents,
            acl: Mutex::new(HashMap::new()),
            lexical_stats: OnceLock::new(),
        }
    }

    /// The version number.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The id of the index this is a version of.
    pub(crate) fn index_id(&self) -> u32 {
        self.index_id
    }

    /// The live child numbers.
    pub fn live(&self) -> &RoaringBitmap {
        &self.live
    }

    pub(crate) fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    /// BM25's statistics of its live children, once a lexical search computed them.
    pub(crate) fn lexical_stats(&self) -> &OnceLock<CorpusStats> {
        &self.lexical_stats
    }

    /// How many segments hold this version's children.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// How many of its segments have a graph (the others are scanned exactly).
    pub fn graph_segments(&self) -> usize {
        self.segments.iter().filter(|s| s.has_graph()).count()
    }

    /// How many of its segments leave their rows in the file (a compressed index).
    pub fn stored_segments(&self) -> usize {
        self.segments.iter().filter(|s| s.is_stored()).count()
    }

    /// How many documents the version holds.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// The children `access` could see in this version when it was made: the union of the
    /// public bitmap and the caller's principal bitmaps, intersected with the live
    /// children. [`IndexState::visible`] adds what has been revoked or deleted since.
    pub(crate) fn visible(
        &self,
        txn: &ReadTransaction,
        access: &Access,
    ) -> Result<RoaringBitmap, StorageError> {
        let principals = match access {
            Access::Unrestricted => return Ok(self.live.clone()),
            Access::Principals(p) => p,
        };
        let mut visible = (*self.principal_bitmap(txn, PUBLIC)?).clone();
        for principal in principals.iter().filter(|p| !p.is_empty()) {
            visible |= &*self.principal_bitmap(txn, principal)?;
        }
        visible &= &self.live;
        Ok(visible)
    }

    fn principal_bitmap(
        &self,
        txn: &ReadTransaction,
        principal: &str,
    ) -> Result<Arc<RoaringBitmap>, StorageError> {
        if let Some(bitmap) = self.acl.lock().get(principal) {
            return Ok(bitmap.clone());
        }
        let table = txn.open_table(ACL)?;
        let bitmap = Arc::new(read_acl(&table, self.index_id, principal, self.version)?);
        self.acl
            .lock()
            .insert(principal.to_string(), bitmap.clone());
        Ok(bitmap)
    }
}

/// The bitmap of `principal` as of `version`: the newest entry written at or before it.
pub(crate) fn read_acl(
    table: &impl ReadSealed<(u32, &'static str, u64)>,
    index: u32,
    principal: &str,
    version: u64,
) -> Result<RoaringBitmap, StorageError> {
    let mut range = table.rows((index, principal, 0u64)..=(index, principal, version))?;
    match range.next_back() {
        Some(entry) => decode_bitmap(entry?.1.value(), "principal bitmap"),
        None => Ok(RoaringBitmap::new()),
    }
}

/// The principals named in index `index`'s ACLs (the public key excluded), sorted.
pub(crate) fn principals(txn: &ReadTransaction, index: u32) -> Result<Vec<String>, StorageError> {
    principals_in(&txn.open_table(ACL)?, index)
}

/// [`principals`] over an open `acl` table (of a read or a write transaction).
pub(crate) fn principals_in(
    table: &impl ReadSealed<(u32, &'static str, u64)>,
    index: u32,
) -> Result<Vec<String>, StorageError> {
    let mut out: Vec<String> = Vec::new();
    for entry in table.rows((index, "", 0u64)..(index.saturating_add(1), "", 0u64))? {
        let (key, _) = entry?;
        let principal = key.value().1;
        if !principal.is_empty() && out.last().map(String::as_str) != Some(principal) {
            out.push(principal.to_string());
        }
    }
    Ok(out)
}

pub(crate) fn read_doc_chunks(
    txn: &ReadTransaction,
    index: u32,
    rev: u64,
) -> Result<Option<DocChunks>, StorageError> {
    doc_chunks_in(&txn.open_table(DOC_CHUNKS)?, index, rev)
}

pub(crate) fn doc_chunks_in(
    table: &impl ReadSealed<(u32, u64)>,
    index: u32,
    rev: u64,
) -> Result<Option<DocChunks>, StorageError> {
    let Some(value) = table.read((index, rev))? else {
        return Ok(None);
    };
    Ok(Some(decode(value.value(), "doc chunks")?))
}

impl VersionView {
    /// The `options.k` best visible children for `query` over all segments of this
    /// version ([`search_segments`]); `options.ef` = graph breadth (planner default when
    /// `None`), `rescore` = a compressed segment's re-score width (its index's when
    /// `None`). Compressed segments read their rows through `txn`, in whose snapshot this
    /// version is live (so are its segments' rows).
    pub(crate) fn search_children(
        &self,
        txn: &ReadTransaction,
        query: &QueryVector,
        options: SearchOptions,
        rescore: Option<usize>,
        visible: &RoaringBitmap,
    ) -> Result<ChildSearch, StorageError> {
        let table = if self.segments.iter().any(|s| s.is_stored()) {
            Some(vector_table(txn)?)
        } else {
            None
        };
        let rows = self
            .segments
            .iter()
            .map(|segment| segment.rows(table.as_ref(), rescore))
            .collect::<Result<Vec<_>, _>>()?;
        let parts = self
            .segments
            .iter()
            .zip(&rows)
            .map(|(segment, rows)| segment.part(rows.as_ref()));
        search_segments(parts, query, options, visible).map_err(|e| {
            let id = self.segments.get(e.part).map_or(0, |s| s.id());
            StorageError::corrupt(format!("segment {id}: {}", e.error))
        })
    }
}
