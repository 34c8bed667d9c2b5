//! Which collection serves a version. A collection holds a set of segments of an index: the
//! ones of the version it was published for (its property `folio.segments`). A later version
//! of the same index whose segments are all among them (an ACL change, a delete) holds a
//! subset of its children, since a child never comes back to life within a segment and
//! segment ids are never reused; so that collection serves it, its rows kept current by
//! `sync`, and folio's own check drops the rows of children the later version no longer
//! shows. A version with a segment no collection holds (new documents, a compaction that
//! renumbered children) needs its own publish. See `docs/milvus.md`.

use std::collections::{BTreeSet, HashMap};

use folio::Store;
use milvus::v2::prelude::*;
use std::result::Result;

use crate::error::Error;
use crate::publish::{COMPLETE, SEGMENTS};
use crate::remote::{Call, Remote, ServedKey, Tally};
use crate::schema::collection_name;

/// The collection a version is searched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The collection.
    pub collection: String,
    /// The version it was published for: the version asked for, or an earlier one it
    /// derives from without new segments.
    pub published: u64,
}

impl Remote {
    /// The complete collection of `prefix` that serves `index@version`: the version's own,
    /// else the newest one published for an earlier version (still kept by the store, so
    /// `sync` keeps it current) whose `folio.segments` include every segment of `version`.
    /// [`Error::NotPublished`] when there is none, [`Error::Incomplete`] when the one that
    /// would serve is an unfinished publish, [`Error::ForeignCollection`] when a collection
    /// of that name holds another index or version.
    pub fn collection_for(
        &self,
        store: &Store,
        prefix: &str,
        index: &str,
        version: u64,
    ) -> Result<Served, Error> {
        self.resolve(store, prefix, index, version, &mut Tally::default())
    }

    /// [`Remote::collection_for`], its Milvus calls counted and timed in `calls`.
    pub(crate) fn resolve(
        &self,
        store: &Store,
        prefix: &str,
        index: &str,
        version: u64,
        calls: &mut Tally,
    ) -> Result<Served, Error> {
        let own = collection_name(prefix, index, version);
        if self.has_collection_counted(&own, calls)? {
            let properties = self.properties_counted(&own, calls)?;
            self.check_names(&properties, &own, index, version)?;
            return self.complete(&properties, own, index, version);
        }
        let versions = store.versions(index);
        let wanted: BTreeSet<u32> = versions.segments(version)?.into_iter().collect();
        let mut earlier: Vec<u64> = versions
            .list()?
            .into_iter()
            .map(|v| v.version)
            .filter(|&v| v < version)
            .collect();
        earlier.sort_unstable_by(|a, b| b.cmp(a));
        let mut lacking = false;
        let mut nearest = None;
        for published in earlier {
            // Once an earlier version lacks one of the segments, every older one does too
            // (a segment, once added, stays until a compaction replaces it for good): only
            // a collection to name in the error is still looked for.
            if !lacking {
                let holds: BTreeSet<u32> = versions.segments(published)?.into_iter().collect();
                lacking = !wanted.is_subset(&holds);
            }
            let name = collection_name(prefix, index, published);
            if !self.has_collection_counted(&name, calls)? {
                continue;
            }
            let properties = self.properties_counted(&name, calls)?;
            self.check_names(&properties, &name, index, published)?;
            if lacking {
                if is_complete(&properties) {
                    nearest = Some((name, published));
                    break;
                }
                continue;
            }
            match recorded_segments(&properties) {
                // Published before collections recorded their segments: it serves only its
                // own version.
                None => continue,
                Some(held) if wanted.is_subset(&held) => {
                    return self.complete(&properties, name, index, published);
                }
                Some(_) => {
                    return Err(self.foreign(
                        &name,
                        index,
                        published,
                        "its recorded segments are not the ones the store lists for that version",
                    ));
                }
            }
        }
        Err(Error::NotPublished {
            uri: self.uri().to_string(),
            index: index.to_string(),
            version,
            collection: own,
            nearest,
        })
    }

    pub(crate) fn has_collection_counted(
        &self,
        name: &str,
        calls: &mut Tally,
    ) -> Result<bool, Error> {
        self.timed(calls, Call::HasCollection, name, async {
            Ok(self
                .client
                .has_collection(
                    HasCollectionRequest::builder()
                        .collection_name(name)
                        .build()?,
                )
                .await?
                .exists())
        })
    }

    pub(crate) fn properties_counted(
        &self,
        name: &str,
        calls: &mut Tally,
    ) -> Result<HashMap<String, String>, Error> {
        self.timed(calls, Call::DescribeCollection, name, async {
            let described = self
                .client
                .describe_collection(
                    DescribeCollectionRequest::builder()
                        .collection_name(name)
                        .build()?,
                )
                .await?;
            Ok(described.description().get_properties().clone())
        })
    }

    /// The collection a search of this connection learned serves `key`, if any.
    pub(crate) fn served_before(&self, key: &ServedKey) -> Option<Served> {
        self.served_cache()
            .get(key)
            .map(|(collection, published)| Served {
                collection: collection.clone(),
                published: *published,
            })
    }

    /// Remembers that the complete collection `served` serves `key`.
    pub(crate) fn remember(&self, key: ServedKey, served: &Served) {
        self.served_cache()
            .insert(key, (served.collection.clone(), served.published));
    }

    /// Forgets what searches learned of `key` (its collection failed a search, or the
    /// version it was published for is no longer kept).
    pub(crate) fn forget(&self, key: &ServedKey) {
        self.served_cache().remove(key);
    }

    fn complete(
        &self,
        properties: &HashMap<String, String>,
        collection: String,
        index: &str,
        published: u64,
    ) -> Result<Served, Error> {
        if is_complete(properties) {
            Ok(Served {
                collection,
                published,
            })
        } else {
            Err(Error::Incomplete {
                uri: self.uri().to_string(),
                collection,
                index: index.to_string(),
                published,
            })
        }
    }
}

fn is_complete(properties: &HashMap<String, String>) -> bool {
    properties.get(COMPLETE).map(String::as_str) == Some("true")
}

/// The segment ids a collection says it holds (`folio.segments`: ids joined by `,`).
fn recorded_segments(properties: &HashMap<String, String>) -> Option<BTreeSet<u32>> {
    let value = properties.get(SEGMENTS)?;
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}
