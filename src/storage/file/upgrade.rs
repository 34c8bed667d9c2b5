//! Upgrading files of older format versions in place, when they are opened.
//!
//! Format 1 lacks the tables format 2 added; formats 1 and 2 store records with bincode's
//! fixed-width integers, format 3 with its variable-width ones (`records::config`); format
//! 4 adds each document's child runs and the current-ACL bitmaps (`current.rs`); format 5
//! types metadata values; format 6 adds fields to logged requests; format 7 records each
//! index's embedded form (`ChunkSpec::embed_form`); format 8 where an index keeps its
//! vectors (`IndexRecord::vectors`: resident for every older index); format 9 a checksum
//! after every value (`sealed.rs`), added first; format 10 each index's lexical language
//! (`IndexRecord::lexical`: `Auto` for every older index), each segment's lexical
//! postings (`postings.rs`), built from the stored texts, and each logged request's mode
//! (dense) and reranker (none); format 11 the empty outbox tables (`outbox.rs`). The whole upgrade is one redb write
//! transaction: a crash, a full disk or a failed write leaves the file as it was (redb falls
//! back to the last committed header), and the commit switches it to format 11 at once. See
//! `storage-format.md`, "Format versions".

use std::collections::{BTreeMap, HashMap, HashSet};

use redb::{Key, ReadableTable, Table, TableDefinition, TableHandle, Value, WriteTransaction};
use roaring::RoaringBitmap;

use crate::storage::error::StorageError;
use crate::storage::file::current::CurrentAcl;
use crate::storage::file::postings::write_postings;

use crate::review::{Feedback, LoggedMode, LoggedQuery, LoggedRequest, Outcome, Rating};
use crate::storage::file::records::{
    decode, decode_bitmap, decode_legacy, encode, AliasRecord, ChildRecord, ChildRun, DocChunks,
    DocEntry, DocEntryV3, IndexChildren, IndexRecord, IndexRecordV6, IndexRecordV7, IndexRecordV9,
    ParentRecord, RevisionRecord, RevisionRecordV4, SegmentRecord, VersionRecord,
};
use crate::storage::file::sealed::{ReadSealed, Sealed, WriteSealed};
use crate::storage::file::tables::*;

/// Brings a file of format `from` (1 to 10) to [`FORMAT_VERSION`] inside `txn`; the caller
/// commits. First every value of a file older than 9 is sealed with its checksum
/// ([`seal_tables`]). Formats 1 and
/// 2 then become format 3: every table whose values are bincode
/// records is re-encoded; the others (`meta`, `rev_text`, `segment_vectors`,
/// `segment_graphs`, `acl`, `tags`, `serving`) hold raw bytes, f32 rows, graph blobs,
/// roaring bitmaps and redb integers, which did not change. No key is a bincode record
/// (keys are redb's own integer, string and tuple types). Then index records get the
/// embedded form of formats 1 to 6 (`EmbedForm::PathPrefix`), the vector storage of
/// formats 1 to 7 (resident) and the lexical language of formats 1 to 9 (`Auto`), before
/// the steps that read them; revisions typed metadata
/// (format 5: the old string values stay strings), formats 1 to 3 what format 4 keeps
/// ([`derive_current`]), logged requests the fields formats 6 and 10 added ([`upgrade_log`]),
/// and every segment its
/// lexical postings ([`build_postings`]); then every file gets the empty outbox tables
/// (format 11).
pub(crate) fn upgrade(txn: &WriteTransaction, from: u32) -> Result<(), StorageError> {
    if from < 9 {
        seal_tables(txn)?;
    }
    if from < 3 {
        if from < 2 {
            crate::storage::file::tables::create_tables(txn)?;
        }
        reencode::<&str, DocEntryV3>(txn, DOCS, "doc entry")?;
        reencode::<u64, RevisionRecordV4>(txn, REVISIONS, "revision")?;
        reencode::<&str, IndexRecordV6>(txn, INDEXES, "index record")?;
        reencode::<(u32, u64), DocChunks>(txn, DOC_CHUNKS, "doc chunks")?;
        reencode::<(u32, u32), ParentRecord>(txn, PARENTS, "parent record")?;
        reencode::<(u32, u32), ChildRecord>(txn, CHILDREN, "child record")?;
        reencode::<(u32, u32), SegmentRecord>(txn, SEGMENTS, "segment record")?;
        reencode::<(u32, u64), VersionRecord>(txn, VERSIONS, "version record")?;
        reencode::<&str, AliasRecord>(txn, ALIASES, "alias record")?;
        reencode::<u64, LoggedRequestV5>(txn, REQUEST_LOG, "logged request")?;
    }
    if from < 10 {
        upgrade_to_10(txn, from)?;
    }
    // Format 11: no index is published yet, so both tables start empty.
    crate::storage::file::tables::create_outbox_tables(txn)?;
    txn.open_table(META)?
        .put("format_version", FORMAT_VERSION.to_le_bytes().as_slice())?;
    Ok(())
}

/// Formats 1 to 9 to 10 (after the steps of formats 1 to 3): index records, typed
/// metadata, the current ACLs, the logged requests' fields and the lexical postings.
fn upgrade_to_10(txn: &WriteTransaction, from: u32) -> Result<(), StorageError> {
    // The indexes keep the form their children were embedded in (format 7), their vectors
    // in memory (format 8) and get the `Auto` language (format 10); first, as
    // `derive_current` and `build_postings` read index records.
    rebuild::<&str>(txn, INDEXES, |_, value| {
        let old = match from {
            ..7 => IndexRecordV9::from(IndexRecordV7::from(decode::<IndexRecordV6>(
                value,
                "index record",
            )?)),
            7 => IndexRecordV9::from(decode::<IndexRecordV7>(value, "index record")?),
            _ => decode::<IndexRecordV9>(value, "index record")?,
        };
        Ok(encode(&IndexRecord::from(old)))
    })?;
    if from < 5 {
        rebuild::<u64>(txn, REVISIONS, |_, value| {
            let old: RevisionRecordV4 = decode(value, "revision")?;
            Ok(encode(&RevisionRecord::from(old)))
        })?;
    }
    if from < 4 {
        derive_current(txn)?;
    }
    upgrade_log(txn, from)?;
    build_postings(txn)
}

/// Format 9 to 10: the lexical postings of every stored segment of every index, built
/// from its children's stored texts in the index's language (`Auto` after the upgrade).
fn build_postings(txn: &WriteTransaction) -> Result<(), StorageError> {
    let mut indexes = Vec::new();
    for entry in txn.open_table(INDEXES)?.all()? {
        indexes.push(decode::<IndexRecord>(entry?.1.value(), "index record")?);
    }
    for index in &indexes {
        let mut segments = Vec::new();
        for entry in txn
            .open_table(SEGMENTS)?
            .rows((index.id, 0u32)..=(index.id, u32::MAX))?
        {
            let (key, value) = entry?;
            let record: SegmentRecord = decode(value.value(), "segment record")?;
            segments.push((
                key.value().1,
                record.base..record.base.saturating_add(record.count),
            ));
        }
        for (segment, ids) in segments {
            write_postings(txn, index, segment, ids)?;
        }
    }
    Ok(())
}

/// Format 3 to 4: each document's child runs in every index (`DocEntry::children`) and the
/// current-ACL bitmaps, derived from the stored chunks. A run of a current document is
/// its own unless the retained versions show the document gone after the run was live (a
/// delete, then a new upsert of the same id): that run belongs to a deleted incarnation
/// and stays hidden. A deletion in a version no longer retained cannot be seen, and such
/// a run counts as the document's, as a replaced revision would.
fn derive_current(txn: &WriteTransaction) -> Result<(), StorageError> {
    let mut docs: BTreeMap<String, DocEntry> = BTreeMap::new();
    for entry in txn.open_table(DOCS)?.all()? {
        let (doc_id, value) = entry?;
        let old: DocEntryV3 = decode(value.value(), "doc entry")?;
        let entry = DocEntry {
            rev: old.rev,
            acl: old.acl,
            children: Vec::new(),
        };
        docs.insert(doc_id.value().to_string(), entry);
    }
    let mut ids = Vec::new();
    for entry in txn.open_table(INDEXES)?.all()? {
        let record: IndexRecord = decode(entry?.1.value(), "index record")?;
        ids.push(record.id);
    }
    ids.sort_unstable();
    txn.open_table(ACL_CURRENT)?;
    for id in ids {
        let mut current = CurrentAcl::new(id);
        for (doc_id, runs) in document_runs(txn, id, &docs)? {
            if let Some(entry) = docs.get_mut(&doc_id) {
                let mut children = RoaringBitmap::new();
                for run in &runs {
                    children.insert_range(run.range());
                }
                current.grant(txn, &children, &entry.acl)?;
                entry.children.push(IndexChildren { index: id, runs });
            }
        }
        current.write(txn)?;
    }
    rebuild::<&str>(txn, DOCS, |doc_id, _| {
        docs.get(doc_id)
            .map(encode)
            .ok_or_else(|| StorageError::corrupt(format!("document `{doc_id}` vanished")))
    })
}

/// The runs of child numbers (one revision's children, as written or as a compaction
/// copied them) that each current document has in index `id`, by doc_id (see
/// [`derive_current`] for the runs of deleted incarnations, left out).
fn document_runs(
    txn: &WriteTransaction,
    id: u32,
    docs: &BTreeMap<String, DocEntry>,
) -> Result<BTreeMap<String, Vec<ChildRun>>, StorageError> {
    // The runs, in child-number order, with their revision.
    let mut runs: Vec<(ChildRun, u64)> = Vec::new();
    for entry in txn
        .open_table(CHILDREN)?
        .rows((id, 0u32)..=(id, u32::MAX))?
    {
        let (key, value) = entry?;
        let number = key.value().1;
        let child: ChildRecord = decode(value.value(), "child record")?;
        match runs.last_mut() {
            Some((run, rev))
                if *rev == child.rev
                    && child.ordinal == run.count
                    && Some(number) == run.first.checked_add(run.count) =>
            {
                run.count += 1
            }
            _ => runs.push((
                ChildRun {
                    first: number,
                    count: 1,
                },
                child.rev,
            )),
        }
    }
    // Each run's document, when it is a current one.
    let mut owners: HashMap<u64, Option<String>> = HashMap::new();
    {
        let revisions = txn.open_table(REVISIONS)?;
        for (_, rev) in &runs {
            if owners.contains_key(rev) {
                continue;
            }
            let doc = match revisions.read(*rev)? {
                Some(v) => Some(decode::<RevisionRecord>(v.value(), "revision")?.doc_id),
                None => None,
            };
            owners.insert(*rev, doc.filter(|d| docs.contains_key(d)));
        }
    }
    // Walk the retained versions: when each run was first live, when each document was
    // last absent.
    let mut first_live: Vec<Option<u64>> = vec![None; runs.len()];
    let mut last_absent: HashMap<&str, u64> = HashMap::new();
    for entry in txn
        .open_table(VERSIONS)?
        .rows((id, 0u64)..=(id, u64::MAX))?
    {
        let (key, value) = entry?;
        let version = key.value().1;
        let record: VersionRecord = decode(value.value(), "version record")?;
        let live = decode_bitmap(&record.live, "live bitmap")?;
        let mut present: HashSet<&str> = HashSet::new();
        for (i, (run, rev)) in runs.iter().enumerate() {
            if live.contains(run.first) {
                first_live[i].get_or_insert(version);
                if let Some(Some(doc)) = owners.get(rev) {
                    present.insert(doc.as_str());
                }
            }
        }
        for doc in docs.keys() {
            if !present.contains(doc.as_str()) {
                last_absent.insert(doc.as_str(), version);
            }
        }
    }
    let mut out: BTreeMap<String, Vec<ChildRun>> = BTreeMap::new();
    for ((run, rev), first) in runs.iter().zip(first_live) {
        let (Some(Some(doc)), Some(first)) = (owners.get(rev), first) else {
            continue;
        };
        if last_absent
            .get(doc.as_str())
            .is_none_or(|gone| first > *gone)
        {
            out.entry(doc.clone()).or_default().push(*run);
        }
    }
    Ok(out)
}

/// Decodes every value of `definition` as a format 1/2 `T` and writes it, in the current
/// encoding and in key order, to a new table that then replaces the old one. Rewriting the
/// values in place would keep every leaf page (redb does not merge leaves whose values
/// shrank), so the file would not get smaller; a table filled in key order packs its pages
/// like a freshly written store. A value that does not decode is corruption: the upgrade
/// stops and nothing is committed.
fn reencode<K: Key + 'static, T: bincode::Encode + bincode::Decode<()>>(
    txn: &WriteTransaction,
    definition: TableDefinition<K, Sealed>,
    what: &str,
) -> Result<(), StorageError> {
    rebuild(txn, definition, |_, value| {
        let record: T = decode_legacy(value, what)?;
        Ok(encode(&record))
    })
}

/// Replaces every value of `definition` by `convert(key, value)`, written in key order to
/// a new table that then replaces the old one (see [`reencode`] for why).
pub(crate) fn rebuild<K: Key + 'static>(
    txn: &WriteTransaction,
    definition: TableDefinition<K, Sealed>,
    mut convert: impl for<'a> FnMut(K::SelfType<'a>, &'a [u8]) -> Result<Vec<u8>, StorageError>,
) -> Result<(), StorageError> {
    replace_table::<K, Sealed>(txn, definition, |old, new| {
        for entry in old.all()? {
            let (key, value) = entry?;
            let bytes = convert(key.value(), value.value())?;
            new.put_as(definition.name(), key.value(), &bytes)?;
        }
        Ok(())
    })
}

/// Fills a new table with `fill(old, new)`, the new one named `upgrade.NAME` until it
/// replaces the old one; the old table's values are of type `V`.
fn replace_table<K: Key + 'static, V: Value + 'static>(
    txn: &WriteTransaction,
    definition: TableDefinition<K, Sealed>,
    fill: impl FnOnce(&Table<K, V>, &mut Table<K, Sealed>) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let name = format!("upgrade.{}", definition.name());
    let rebuilt: TableDefinition<K, Sealed> = TableDefinition::new(&name);
    let old: TableDefinition<K, V> = TableDefinition::new(definition.name());
    txn.delete_table(rebuilt)?;
    {
        let old = txn.open_table(old)?;
        let mut new = txn.open_table(rebuilt)?;
        fill(&old, &mut new)?;
    }
    txn.delete_table(old)?;
    txn.rename_table(rebuilt, definition)?;
    Ok(())
}

/// Format 8 to 9: every value gets its checksum (`sealed.rs`). Until format 8 the tables'
/// values were redb byte strings, and `tags` and `serving` held redb u64s (now 8 bytes LE).
/// Runs first, so the later steps read and write checksummed tables as this build does.
fn seal_tables(txn: &WriteTransaction) -> Result<(), StorageError> {
    let stored: HashSet<String> = txn
        .list_tables()?
        .map(|table| table.name().to_string())
        .collect();
    let bytes = |value: &[u8]| value.to_vec();
    seal::<&str, &[u8]>(txn, &stored, META, bytes)?;
    seal::<&str, &[u8]>(txn, &stored, DOCS, bytes)?;
    seal::<u64, &[u8]>(txn, &stored, REVISIONS, bytes)?;
    seal::<u64, &[u8]>(txn, &stored, REV_TEXT, bytes)?;
    seal::<&str, &[u8]>(txn, &stored, INDEXES, bytes)?;
    seal::<(u32, u64), &[u8]>(txn, &stored, DOC_CHUNKS, bytes)?;
    seal::<(u32, u32), &[u8]>(txn, &stored, PARENTS, bytes)?;
    seal::<(u32, u32), &[u8]>(txn, &stored, CHILDREN, bytes)?;
    seal::<(u32, u32), &[u8]>(txn, &stored, SEGMENTS, bytes)?;
    seal::<(u32, u32, u32), &[u8]>(txn, &stored, SEGMENT_VECTORS, bytes)?;
    seal::<(u32, u32, u32), &[u8]>(txn, &stored, SEGMENT_GRAPHS, bytes)?;
    seal::<(u32, u64), &[u8]>(txn, &stored, VERSIONS, bytes)?;
    seal::<(u32, &str, u64), &[u8]>(txn, &stored, ACL, bytes)?;
    seal::<(u32, &str), &[u8]>(txn, &stored, ACL_CURRENT, bytes)?;
    seal::<&str, &[u8]>(txn, &stored, ALIASES, bytes)?;
    seal::<u64, &[u8]>(txn, &stored, REQUEST_LOG, bytes)?;
    let version = |value: u64| value.to_le_bytes().to_vec();
    seal::<(u32, &str), u64>(txn, &stored, TAGS, version)?;
    seal::<u32, u64>(txn, &stored, SERVING, version)
}

/// Rewrites the table of `definition`'s name, if the file has it, with each value `V`
/// turned into its payload by `payload` and sealed.
fn seal<K: Key + 'static, V: Value + 'static>(
    txn: &WriteTransaction,
    stored: &HashSet<String>,
    definition: TableDefinition<K, Sealed>,
    payload: impl for<'a> Fn(V::SelfType<'a>) -> Vec<u8>,
) -> Result<(), StorageError> {
    if !stored.contains(definition.name()) {
        return Ok(());
    }
    replace_table::<K, V>(txn, definition, |old, new| {
        for entry in old.iter()? {
            let (key, value) = entry?;
            new.put_as(definition.name(), key.value(), &payload(value.value()))?;
        }
        Ok(())
    })
}

/// The format 2 to 5 `LoggedRequest`, read by the upgrade to format 6.
#[derive(bincode::Encode, bincode::Decode)]
pub(crate) struct LoggedRequestV5 {
    time_ms: u64,
    query: LoggedQuery,
    principals: Option<Vec<String>>,
    target: String,
    route_key: Option<String>,
    index: String,
    version: u64,
    children: Vec<(String, f32)>,
    parents: Vec<(String, f32)>,
    context_tokens: u64,
    latency_us: u64,
    feedback: Option<FeedbackV5>,
}

/// The format 2 to 5 `Feedback`.
#[derive(bincode::Encode, bincode::Decode)]
pub(crate) struct FeedbackV5 {
    rating: Option<Rating>,
    note: Option<String>,
    time_ms: u64,
}

/// The format 6 to 9 `LoggedRequest`: without the mode and the reranker.
#[derive(bincode::Encode, bincode::Decode)]
pub(crate) struct LoggedRequestV9 {
    time_ms: u64,
    query: LoggedQuery,
    principals: Option<Vec<String>>,
    target: String,
    route_key: Option<String>,
    index: String,
    version: u64,
    children: Vec<(String, f32)>,
    parents: Vec<(String, f32)>,
    context_tokens: u64,
    latency_us: u64,
    filter: Option<String>,
    outcome: Outcome,
    feedback: Option<Feedback>,
}

impl From<LoggedRequestV9> for LoggedRequest {
    fn from(old: LoggedRequestV9) -> LoggedRequest {
        LoggedRequest {
            time_ms: old.time_ms,
            query: old.query,
            principals: old.principals,
            target: old.target,
            route_key: old.route_key,
            index: old.index,
            version: old.version,
            children: old.children,
            parents: old.parents,
            context_tokens: old.context_tokens,
            latency_us: old.latency_us,
            filter: old.filter,
            outcome: old.outcome,
            feedback: old.feedback,
            // Every search before format 10 was dense, none reranked by folio.
            mode: LoggedMode::Dense,
            reranker: None,
        }
    }
}

impl From<LoggedRequestV5> for LoggedRequestV9 {
    fn from(old: LoggedRequestV5) -> LoggedRequestV9 {
        LoggedRequestV9 {
            time_ms: old.time_ms,
            query: old.query,
            principals: old.principals,
            target: old.target,
            route_key: old.route_key,
            index: old.index,
            version: old.version,
            children: old.children,
            parents: old.parents,
            context_tokens: old.context_tokens,
            latency_us: old.latency_us,
            filter: None,
            outcome: Outcome::default(),
            feedback: old.feedback.map(|f| Feedback {
                rating: f.rating,
                note: f.note,
                verdict: None,
                gold: Vec::new(),
                time_ms: f.time_ms,
            }),
        }
    }
}

/// Formats 1 to 9: every logged request gets the fields formats 6 (empty) and 10 (the
/// dense mode, no reranker) added, and `meta.log_bytes` the total of the log's record bytes.
fn upgrade_log(txn: &WriteTransaction, from: u32) -> Result<(), StorageError> {
    let mut total = 0u64;
    rebuild::<u64>(txn, REQUEST_LOG, |_, value| {
        let old = if from < 6 {
            LoggedRequestV9::from(decode::<LoggedRequestV5>(value, "logged request")?)
        } else {
            decode::<LoggedRequestV9>(value, "logged request")?
        };
        let bytes = encode(&LoggedRequest::from(old));
        total += bytes.len() as u64;
        Ok(bytes)
    })?;
    let mut meta = txn.open_table(META)?;
    meta.put("log_bytes", total.to_le_bytes().as_slice())?;
    Ok(())
}
