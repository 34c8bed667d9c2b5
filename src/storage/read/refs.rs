//! Listing names for versions: aliases and their routes, the route a key takes, an
//! index's retained versions with their tags and aliases.

use std::collections::BTreeMap;

use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::records::{
    decode, decode_bitmap, decode_u64, AliasRecord, VersionRecord,
};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{ALIASES, TAGS, VERSIONS};
use crate::storage::read::catalog::Catalog;
use crate::storage::read::targets::{pick, read_alias, read_serving, route_bucket, routes_of};
use crate::storage::read::targets::{AliasInfo, Route, VersionInfo};

impl Catalog {
    pub(crate) fn aliases(&self) -> Result<Vec<AliasInfo>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let mut out = Vec::new();
        for entry in txn.open_table(ALIASES)?.all()? {
            let (name, value) = entry?;
            let record: AliasRecord = decode(value.value(), "alias record")?;
            out.push(AliasInfo {
                name: name.value().to_string(),
                routes: routes_of(&indexes, &record),
            });
        }
        Ok(out)
    }

    pub(crate) fn route(&self, alias: &str, key: &str) -> Result<Route, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let record = read_alias(&txn, alias)?.ok_or_else(|| ReadError::UnknownAlias {
            name: alias.to_string(),
        })?;
        let routes = routes_of(&indexes, &record);
        let bucket = route_bucket(alias, key.as_bytes());
        let position = pick(&record.routes, bucket)
            .and_then(|chosen| record.routes.iter().position(|r| r == chosen))
            .ok_or_else(|| StorageError::corrupt(format!("alias `{alias}` has no routes")))?;
        Ok(routes[position].clone())
    }

    pub(crate) fn version_segments(
        &self,
        index: &str,
        version: u64,
    ) -> Result<Vec<u32>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let state = indexes.get(index).ok_or_else(|| ReadError::UnknownIndex {
            name: index.to_string(),
        })?;
        let table = txn.open_table(VERSIONS)?;
        let value =
            table
                .read((state.id(), version))?
                .ok_or_else(|| ReadError::UnknownVersion {
                    index: index.to_string(),
                    version,
                })?;
        let record: VersionRecord = decode(value.value(), "version record")?;
        Ok(record.segments)
    }

    pub(crate) fn versions(&self, index: &str) -> Result<Vec<VersionInfo>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let state = indexes.get(index).ok_or_else(|| ReadError::UnknownIndex {
            name: index.to_string(),
        })?;
        let id = state.id();
        let head = state.head().version();
        let serving = read_serving(&txn, id)?.unwrap_or(head);
        let mut tags: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for entry in txn
            .open_table(TAGS)?
            .rows((id, "")..(id.saturating_add(1), ""))?
        {
            let (key, version) = entry?;
            tags.entry(decode_u64(version.value(), "tag")?)
                .or_default()
                .push(key.value().1.to_string());
        }
        let mut aliases: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for entry in txn.open_table(ALIASES)?.all()? {
            let (name, value) = entry?;
            let record: AliasRecord = decode(value.value(), "alias record")?;
            for route in record.routes.iter().filter(|r| r.index == id) {
                aliases
                    .entry(route.version)
                    .or_default()
                    .push(name.value().to_string());
            }
        }
        let mut out = Vec::new();
        for entry in txn.open_table(VERSIONS)?.rows((id, 0)..=(id, u64::MAX))? {
            let (key, value) = entry?;
            let version = key.value().1;
            let record: VersionRecord = decode(value.value(), "version record")?;
            out.push(VersionInfo {
                version,
                created_ms: record.created_ms,
                documents: record.documents,
                live_children: decode_bitmap(&record.live, "live bitmap")?.len(),
                segments: record.segments.len(),
                change: record.change,
                tags: tags.remove(&version).unwrap_or_default(),
                aliases: aliases.remove(&version).unwrap_or_default(),
                head: version == head,
                serving: version == serving,
            });
        }
        Ok(out)
    }
}
