//! Live permissions on the remote tier: a published collection compared with its version
//! in the store now ([`folio::Store::export`]), rows of deleted documents deleted and rows
//! whose document's ACL changed upserted, by primary key. Comparing needs no record of
//! what changed (no outbox in the store file), and a sync cut short is finished by the
//! next one, which compares again.

use std::collections::HashMap;

use folio::store::Audience;
use folio::Store;
use milvus::v2::prelude::*;
use std::result::Result;

use crate::error::Error;
use crate::publish::{flush, upsert, PAGE};
use crate::remote::Remote;
use crate::schema::{self, ACL_NOW, CHILD, PUBLIC_NOW};

/// What a sync did to one collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    /// The collection.
    pub collection: String,
    /// The index it holds a version of.
    pub index: String,
    /// The version.
    pub version: u64,
    /// Rows upserted: their document's ACL changed since they were written.
    pub updated: u64,
    /// Rows deleted: their document was deleted.
    pub deleted: u64,
    /// The store no longer keeps the version (collected by `gc`): the collection was left
    /// as it is, for whoever drops it.
    pub gone: bool,
}

impl Remote {
    /// Syncs every collection published with `prefix` of a version the store keeps (see
    /// [`Remote::sync_collection`]), then writes the catalog search nodes read
    /// ([`Remote::write_catalog`]).
    pub fn sync(
        &self,
        store: &Store,
        prefix: &str,
        batch: usize,
    ) -> Result<Vec<SyncReport>, Error> {
        let reports = self
            .published(store, prefix)?
            .iter()
            .map(|name| self.sync_collection(store, name, batch))
            .collect::<Result<Vec<_>, _>>()?;
        // Search nodes learn the versions made since (an ACL change, a delete) from the
        // catalog.
        self.write_catalog(store, prefix)?;
        Ok(reports)
    }

    /// Brings collection `name` up to its version's documents now: rows of deleted
    /// documents are deleted, rows whose `acl_now`/`public_now` differ from the document's
    /// current ACL are upserted whole (`batch` rows a call); then the collection is flushed.
    pub fn sync_collection(
        &self,
        store: &Store,
        name: &str,
        batch: usize,
    ) -> Result<SyncReport, Error> {
        let properties = self.properties(name)?;
        let index = properties
            .get(crate::publish::INDEX)
            .cloned()
            .unwrap_or_default();
        let version: u64 = properties
            .get(crate::publish::VERSION)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::Collection {
                collection: name.to_string(),
                problem: "names no folio version".to_string(),
            })?;
        let mut report = SyncReport {
            collection: name.to_string(),
            index: index.clone(),
            version,
            updated: 0,
            deleted: 0,
            gone: false,
        };
        let export = match store.export(&format!("{index}@{version}")) {
            Ok(export) => export,
            Err(folio::ReadError::UnknownVersion { .. }) => {
                report.gone = true;
                return Ok(report);
            }
            Err(e) => return Err(e.into()),
        };
        report.deleted = self.remove_stale(name, export.children())?;
        let end = export
            .children()
            .max()
            .map_or(0, |last| u64::from(last) + 1);
        let mut changed = Vec::new();
        for start in (0..end).step_by(PAGE as usize) {
            let page = self.run_on(
                name,
                audiences_between(&self.client, name, start, start + u64::from(PAGE)),
            )?;
            for (child, remote) in page {
                let Ok(number) = u32::try_from(child) else {
                    continue;
                };
                if export.children().contains(number) && !same(&remote, &export.current(number)) {
                    changed.push(number);
                }
            }
        }
        for numbers in changed.chunks(batch.max(1)) {
            let rows = numbers
                .iter()
                .map(|&n| Ok(schema::row(&export.child(n)?)))
                .collect::<Result<Vec<_>, Error>>()?;
            self.run_on(name, upsert(&self.client, name, rows))?;
            report.updated += numbers.len() as u64;
        }
        self.run_on(name, flush(&self.client, name))?;
        Ok(report)
    }
}

/// Whether two audiences admit the same callers (principal order aside).
pub(crate) fn same(a: &Audience, b: &Audience) -> bool {
    let mut x = a.principals.clone();
    let mut y = b.principals.clone();
    x.sort_unstable();
    y.sort_unstable();
    a.public == b.public && x == y
}

/// child → who the row says its document admits now, for rows with `start <= child < end`.
async fn audiences_between(
    client: &ClientV2,
    name: &str,
    start: u64,
    end: u64,
) -> Result<HashMap<i64, Audience>, Error> {
    let response = client
        .query(
            QueryRequest::builder()
                .collection_name(name)
                .filter(format!("{CHILD} >= {start} and {CHILD} < {end}"))
                .output_fields([CHILD, ACL_NOW, PUBLIC_NOW])
                .limit(i64::from(PAGE))
                .consistency_level(ConsistencyLevel::Strong)
                .build()?,
        )
        .await?;
    let mut out = HashMap::new();
    for row in response.results().rows()? {
        out.insert(
            row.get_i64(CHILD)?,
            Audience {
                public: row.get_bool(PUBLIC_NOW)?,
                principals: row.get_array_varchar(ACL_NOW)?.to_vec(),
            },
        );
    }
    Ok(out)
}
