//! folio's aliases mirrored as Milvus aliases: `PREFIX_ALIAS` names the collection of the
//! version the folio alias serves, so clients reading Milvus directly follow folio's
//! switches. folio's own remote searches resolve the alias in the store and name the
//! collection, so weighted routes (which Milvus aliases cannot express) stay in folio.

use std::collections::HashMap;

use folio::store::Route;
use folio::Store;
use milvus::v2::prelude::*;
use std::result::Result;

use crate::error::Error;
use crate::remote::{Remote, Tally};
use crate::schema::{alias_name, collection_name};

/// What happened to the Milvus alias of one folio alias.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AliasOutcome {
    /// It now names the collection (created, or moved from another).
    Moved,
    /// It already named the collection.
    Unchanged,
    /// The folio alias splits traffic between versions: folio routes it, Milvus has no alias.
    Split,
    /// No complete collection serves the version: the Milvus alias was left where it was
    /// (publish the version, then sync again).
    NotPublished,
}

/// The Milvus alias of one folio alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasReport {
    /// The folio alias.
    pub alias: String,
    /// Its Milvus alias.
    pub milvus_alias: String,
    /// The collection that serves its version (none for a split alias; the version's own
    /// name when nothing serves it).
    pub collection: Option<String>,
    /// What was done.
    pub outcome: AliasOutcome,
}

impl Remote {
    /// `folio alias set ALIAS INDEX@VERSION` with the Milvus alias moved in the same step:
    /// refused, and nothing changed, unless a complete collection serves the version (its
    /// own, or an earlier version's it derives from without new segments:
    /// [`Remote::collection_for`]); then
    /// folio's alias is set (the commit), then Milvus's moved. A failure between the two
    /// leaves Milvus behind until [`Remote::sync_aliases`] (or this call again).
    pub fn set_alias(
        &self,
        store: &Store,
        alias: &str,
        index: &str,
        version: u64,
        prefix: &str,
    ) -> Result<AliasReport, Error> {
        let collection = self
            .collection_for(store, prefix, index, version)?
            .collection;
        store.aliases().set(
            alias,
            &[Route {
                index: index.to_string(),
                version,
                weight: 100,
            }],
        )?;
        let report = self.point(store, prefix, alias, &collection)?;
        // Search nodes resolve aliases with the catalog.
        self.write_catalog(store, prefix)?;
        Ok(report)
    }

    /// `folio rollback ALIAS VERSION` with the Milvus alias moved in the same step, refused
    /// unless a complete collection serves the version (as [`Remote::set_alias`]).
    pub fn rollback(
        &self,
        store: &Store,
        alias: &str,
        version: u64,
        prefix: &str,
    ) -> Result<AliasReport, Error> {
        let info = store
            .aliases()
            .list()?
            .into_iter()
            .find(|a| a.name == alias)
            .ok_or_else(|| folio::ReadError::UnknownAlias {
                name: alias.to_string(),
            })?;
        // A rollback keeps the alias's index; a split alias is refused by folio itself.
        let index = info
            .routes
            .first()
            .map(|r| r.index.clone())
            .unwrap_or_default();
        let collection = self
            .collection_for(store, prefix, &index, version)?
            .collection;
        store.rollback(alias, version)?;
        let report = self.point(store, prefix, alias, &collection)?;
        // Search nodes resolve aliases with the catalog.
        self.write_catalog(store, prefix)?;
        Ok(report)
    }

    /// Every folio alias of one version gets a Milvus alias naming its collection, when
    /// that collection is complete: what repairs a failure between a folio alias change and
    /// the Milvus move, or aliases changed with plain `folio alias`.
    pub fn sync_aliases(&self, store: &Store, prefix: &str) -> Result<Vec<AliasReport>, Error> {
        let mut existing = self.milvus_aliases(store, prefix)?;
        let mut out = Vec::new();
        for info in store.aliases().list()? {
            let milvus_alias = alias_name(prefix, &info.name);
            let [route] = info.routes.as_slice() else {
                out.push(AliasReport {
                    alias: info.name,
                    milvus_alias,
                    collection: None,
                    outcome: AliasOutcome::Split,
                });
                continue;
            };
            let collection = match self.collection_for(store, prefix, &route.index, route.version) {
                Ok(served) => served.collection,
                Err(
                    Error::NotPublished { collection, .. } | Error::Incomplete { collection, .. },
                ) => {
                    out.push(AliasReport {
                        alias: info.name,
                        milvus_alias,
                        collection: Some(collection),
                        outcome: AliasOutcome::NotPublished,
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            let outcome = if existing.get(&milvus_alias) == Some(&collection) {
                AliasOutcome::Unchanged
            } else {
                self.move_alias(
                    &milvus_alias,
                    &collection,
                    existing.contains_key(&milvus_alias),
                )?;
                existing.insert(milvus_alias.clone(), collection.clone());
                AliasOutcome::Moved
            };
            out.push(AliasReport {
                alias: info.name,
                milvus_alias,
                collection: Some(collection),
                outcome,
            });
        }
        Ok(out)
    }

    /// Points the Milvus alias of `alias` at `collection`.
    pub(crate) fn point(
        &self,
        store: &Store,
        prefix: &str,
        alias: &str,
        collection: &str,
    ) -> Result<AliasReport, Error> {
        let milvus_alias = alias_name(prefix, alias);
        let existing = self.milvus_aliases(store, prefix)?;
        let outcome = if existing.get(&milvus_alias).map(String::as_str) == Some(collection) {
            AliasOutcome::Unchanged
        } else {
            self.move_alias(
                &milvus_alias,
                collection,
                existing.contains_key(&milvus_alias),
            )?;
            AliasOutcome::Moved
        };
        Ok(AliasReport {
            alias: alias.to_string(),
            milvus_alias,
            collection: Some(collection.to_string()),
            outcome,
        })
    }

    fn move_alias(&self, alias: &str, collection: &str, exists: bool) -> Result<(), Error> {
        self.run_on(collection, async {
            if exists {
                self.client
                    .alter_alias(
                        AlterAliasRequest::builder()
                            .collection_name(collection)
                            .alias(alias)
                            .build()?,
                    )
                    .await?;
            } else {
                self.client
                    .create_alias(
                        CreateAliasRequest::builder()
                            .collection_name(collection)
                            .alias(alias)
                            .build()?,
                    )
                    .await?;
            }
            Ok(())
        })
    }

    /// Whether Milvus has a collection of this name.
    pub fn has_collection(&self, name: &str) -> Result<bool, Error> {
        self.has_collection_counted(name, &mut Tally::default())
    }

    /// The collections of `prefix` that hold a version the store keeps (milvus-lite 3.2.2
    /// answers `list_collections` with a response the client refuses, so the store says
    /// which names to look for).
    pub fn published(&self, store: &Store, prefix: &str) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        for index in store.indexes().list()? {
            for version in store.versions(&index.name).list()? {
                let name = collection_name(prefix, &index.name, version.version);
                if self.has_collection(&name)? {
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

    /// Milvus alias → collection, over the published collections of `prefix`.
    pub(crate) fn milvus_aliases(
        &self,
        store: &Store,
        prefix: &str,
    ) -> Result<HashMap<String, String>, Error> {
        let mut out = HashMap::new();
        for collection in self.published(store, prefix)? {
            let aliases = self.run_on(&collection, async {
                Ok(self
                    .client
                    .list_aliases(
                        ListAliasesRequest::builder()
                            .collection_name(&collection)
                            .build()?,
                    )
                    .await?
                    .aliases()
                    .to_vec())
            })?;
            out.extend(aliases.into_iter().map(|a| (a, collection.clone())));
        }
        Ok(out)
    }
}
