//! Names for versions: tags, aliases (one version, or several with traffic weights) and the
//! serving pin a rollback sets on a bare index name; resolving a search target; listing.
//!
//! Every change here is one small record written in one transaction, so switching or
//! rolling back an alias costs the same whatever the size of the index.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use super::error::{IndexError, NameKind, NameRule, ReadError, StorageError};
use super::records::{decode, decode_bitmap, encode, AliasRecord, AliasRoute, VersionRecord};
use super::state::IndexState;
use super::tables::{ALIASES, INDEXES, REQUEST_LOG, SERVING, TAGS, VERSIONS};
use super::Store;
use crate::limits::InvalidParameter;

/// The longest index, alias or tag name.
const MAX_NAME: usize = 128;

/// One target of an alias: a version of an index and its share of the traffic (percent).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Route {
    /// The index.
    pub index: String,
    /// The version of it.
    pub version: u64,
    /// Its share of the traffic, in percent.
    pub weight: u32,
}

/// An alias and where it sends queries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AliasInfo {
    /// Its name.
    pub name: String,
    /// Where it sends queries; the weights sum to 100.
    pub routes: Vec<Route>,
}

/// One version of an index, as `folio versions` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VersionInfo {
    /// The version number.
    pub version: u64,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// What made it: a batch (`upsert 3, delete 1`), `build`, `compact …`.
    pub change: String,
    /// Documents live in it.
    pub documents: u64,
    /// Children live in it.
    pub live_children: u64,
    /// Its segments.
    pub segments: usize,
    /// The tags that name it.
    pub tags: Vec<String>,
    /// Aliases with a route to this version.
    pub aliases: Vec<String>,
    /// The newest version (writes build on it).
    pub head: bool,
    /// The version the bare index name serves (the head unless rolled back).
    pub serving: bool,
}

/// What a rollback did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rollback {
    /// The alias or index name rolled back.
    pub target: String,
    /// The index it now serves.
    pub index: String,
    /// The version it now serves.
    pub version: u64,
    /// `true` for an alias repointed, `false` for an index name pinned.
    pub alias: bool,
}

/// A resolved search target: index id and version.
pub(crate) struct Target {
    pub index: u32,
    pub version: u64,
}

/// Opens the tables format version 2 added, so readers never meet a missing one.
pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<(), StorageError> {
    txn.open_table(TAGS)?;
    txn.open_table(ALIASES)?;
    txn.open_table(SERVING)?;
    txn.open_table(REQUEST_LOG)?;
    Ok(())
}

/// Refuses names that could not be told apart in a target (`index@version`, `alias` routes
/// `index@version:weight,…`) or on a command line.
pub(crate) fn validate_name(name: &str, kind: NameKind) -> Result<(), IndexError> {
    let rule = if name.is_empty() {
        NameRule::Empty
    } else if name.len() > MAX_NAME {
        NameRule::TooLong { max: MAX_NAME }
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        NameRule::Characters
    } else if name.parse::<u64>().is_ok() {
        NameRule::Number
    } else {
        return Ok(());
    };
    Err(IndexError::InvalidName {
        name: name.to_string(),
        kind,
        rule,
    })
}

/// Which bucket (0..100) of alias `alias` a route key falls in: FNV-1a 64 over the alias
/// name, a 0xFF byte (never in UTF-8) and the key, then the splitmix64 finaliser, modulo
/// 100. Stable across runs, machines and folio versions: the same key always gets the same
/// version while the alias's routes stay the same.
pub fn route_bucket(alias: &str, key: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in alias.as_bytes().iter().chain(&[0xFF]).chain(key) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // FNV's low bits mix poorly for short keys; the finaliser spreads every input bit.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h % 100) as u32
}

/// The route whose cumulative weight range holds `bucket`.
fn pick(routes: &[AliasRoute], bucket: u32) -> Option<&AliasRoute> {
    let mut upto = 0u32;
    for route in routes {
        upto = upto.saturating_add(route.weight);
        if bucket < upto {
            return Some(route);
        }
    }
    routes.last()
}

pub(crate) fn read_alias(
    txn: &ReadTransaction,
    alias: &str,
) -> Result<Option<AliasRecord>, StorageError> {
    let table = txn.open_table(ALIASES)?;
    let Some(value) = table.get(alias)? else {
        return Ok(None);
    };
    Ok(Some(decode(value.value(), "alias record")?))
}

pub(crate) fn read_serving(txn: &ReadTransaction, index: u32) -> Result<Option<u64>, StorageError> {
    Ok(txn.open_table(SERVING)?.get(index)?.map(|v| v.value()))
}

/// `name@version`, `name@tag`, a bare index name (its serving version) or an alias.
pub(crate) fn resolve(
    txn: &ReadTransaction,
    indexes: &BTreeMap<String, Arc<IndexState>>,
    target: &str,
    route_key: &[u8],
) -> Result<Target, ReadError> {
    if let Some((name, after)) = target.rsplit_once('@') {
        let state = indexes.get(name).ok_or_else(|| ReadError::UnknownIndex {
            name: name.to_string(),
        })?;
        let version = match after.parse::<u64>() {
            Ok(version) => version,
            Err(_) => txn
                .open_table(TAGS)?
                .get((state.id(), after))?
                .map(|v| v.value())
                .ok_or_else(|| ReadError::UnknownTag {
                    index: name.to_string(),
                    tag: after.to_string(),
                })?,
        };
        return Ok(Target {
            index: state.id(),
            version,
        });
    }
    if let Some(state) = indexes.get(target) {
        let version = read_serving(txn, state.id())?.unwrap_or(state.head().version());
        return Ok(Target {
            index: state.id(),
            version,
        });
    }
    let alias = read_alias(txn, target)?.ok_or_else(|| ReadError::UnknownTarget {
        name: target.to_string(),
    })?;
    let route = pick(&alias.routes, route_bucket(target, route_key))
        .ok_or_else(|| StorageError::corrupt(format!("alias `{target}` has no routes")))?;
    Ok(Target {
        index: route.index,
        version: route.version,
    })
}

/// The versions of each index (by id) that a tag, an alias or a serving pin names.
pub(crate) fn named_versions(
    txn: &ReadTransaction,
) -> Result<BTreeMap<u32, BTreeSet<u64>>, StorageError> {
    let mut out: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for entry in txn.open_table(TAGS)?.iter()? {
        let (key, version) = entry?;
        out.entry(key.value().0)
            .or_default()
            .insert(version.value());
    }
    for entry in txn.open_table(ALIASES)?.iter()? {
        let (_, value) = entry?;
        let alias: AliasRecord = decode(value.value(), "alias record")?;
        for route in alias.routes {
            out.entry(route.index).or_default().insert(route.version);
        }
    }
    for entry in txn.open_table(SERVING)?.iter()? {
        let (index, version) = entry?;
        out.entry(index.value())
            .or_default()
            .insert(version.value());
    }
    Ok(out)
}

fn name_in(indexes: &BTreeMap<String, Arc<IndexState>>, id: u32) -> Option<String> {
    indexes
        .values()
        .find(|s| s.id() == id)
        .map(|s| s.name().to_string())
}

fn routes_of(indexes: &BTreeMap<String, Arc<IndexState>>, record: &AliasRecord) -> Vec<Route> {
    record
        .routes
        .iter()
        .map(|r| Route {
            index: name_in(indexes, r.index).unwrap_or_else(|| format!("#{}", r.index)),
            version: r.version,
            weight: r.weight,
        })
        .collect()
}

fn version_exists(txn: &WriteTransaction, index: u32, version: u64) -> Result<bool, StorageError> {
    Ok(txn.open_table(VERSIONS)?.get((index, version))?.is_some())
}

impl Store {
    fn state_of(&self, index: &str) -> Result<Arc<IndexState>, IndexError> {
        self.index(index).ok_or_else(|| IndexError::UnknownIndex {
            name: index.to_string(),
        })
    }

    fn name_of(&self, id: u32) -> Option<String> {
        name_in(&self.indexes(), id)
    }

    /// Names version `version` of `index` `tag`. Tags are permanent names: tagging another
    /// version with a taken tag is refused (remove it first); the same version is a no-op.
    pub fn tag(&self, index: &str, version: u64, tag: &str) -> Result<(), IndexError> {
        validate_name(tag, NameKind::Tag)?;
        let _writer = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = self.db().begin_write()?;
        if !version_exists(&txn, state.id(), version)? {
            return Err(IndexError::UnknownVersion {
                index: index.to_string(),
                version,
            });
        }
        {
            let mut tags = txn.open_table(TAGS)?;
            if let Some(existing) = tags.get((state.id(), tag))?.map(|v| v.value()) {
                if existing == version {
                    return Ok(());
                }
                return Err(IndexError::TagExists {
                    index: index.to_string(),
                    tag: tag.to_string(),
                    version: existing,
                });
            }
            tags.insert((state.id(), tag), version)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Removes a tag; returns the version it named (which a later `gc` may now delete).
    pub fn remove_tag(&self, index: &str, tag: &str) -> Result<u64, IndexError> {
        let _writer = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = self.db().begin_write()?;
        let version = txn
            .open_table(TAGS)?
            .remove((state.id(), tag))?
            .map(|v| v.value())
            .ok_or_else(|| IndexError::UnknownTag {
                index: index.to_string(),
                tag: tag.to_string(),
            })?;
        txn.commit()?;
        Ok(version)
    }

    /// Points `alias` at one version (weight 100) or splits its traffic between several
    /// (weights 1..=100 summing to 100), atomically: a search sees the old routes or the
    /// new ones. Routes may name versions of different indexes.
    pub fn set_alias(&self, alias: &str, routes: &[Route]) -> Result<(), IndexError> {
        validate_name(alias, NameKind::Alias)?;
        if routes.is_empty() {
            return Err(InvalidParameter::new("routes", "none", "at least one route").into());
        }
        let total: u32 = routes.iter().map(|r| r.weight).sum();
        if routes.iter().any(|r| r.weight == 0 || r.weight > 100) || total != 100 {
            let weights: Vec<String> = routes.iter().map(|r| r.weight.to_string()).collect();
            return Err(InvalidParameter::new(
                "weights",
                format_args!("{} (sum {total})", weights.join(",")),
                "1..=100 each, summing to 100",
            )
            .into());
        }
        let _writer = self.lock_writer()?;
        let txn = self.db().begin_write()?;
        // Under the writer lock, so an index being created cannot take the name meanwhile.
        if txn.open_table(INDEXES)?.get(alias)?.is_some() {
            return Err(IndexError::NameTaken {
                name: alias.to_string(),
                other: NameKind::Index,
            });
        }
        let mut stored = Vec::with_capacity(routes.len());
        for route in routes {
            let state = self.state_of(&route.index)?;
            if !version_exists(&txn, state.id(), route.version)? {
                return Err(IndexError::UnknownVersion {
                    index: route.index.clone(),
                    version: route.version,
                });
            }
            let entry = AliasRoute {
                index: state.id(),
                version: route.version,
                weight: route.weight,
            };
            if stored
                .iter()
                .any(|r: &AliasRoute| (r.index, r.version) == (entry.index, entry.version))
            {
                return Err(IndexError::DuplicateRoute {
                    alias: alias.to_string(),
                    index: route.index.clone(),
                    version: route.version,
                });
            }
            stored.push(entry);
        }
        let record = AliasRecord { routes: stored };
        txn.open_table(ALIASES)?
            .insert(alias, encode(&record).as_slice())?;
        txn.commit()?;
        Ok(())
    }

    /// Deletes an alias (the versions it named stay until a `gc` finds them unnamed).
    pub fn remove_alias(&self, alias: &str) -> Result<(), IndexError> {
        let _writer = self.lock_writer()?;
        let txn = self.db().begin_write()?;
        if txn.open_table(ALIASES)?.remove(alias)?.is_none() {
            return Err(IndexError::UnknownAlias {
                name: alias.to_string(),
            });
        }
        txn.commit()?;
        Ok(())
    }

    /// Every alias and its routes, by name.
    pub fn aliases(&self) -> Result<Vec<AliasInfo>, ReadError> {
        let (txn, indexes) = self.snapshot()?;
        let mut out = Vec::new();
        for entry in txn.open_table(ALIASES)?.iter()? {
            let (name, value) = entry?;
            let record: AliasRecord = decode(value.value(), "alias record")?;
            out.push(AliasInfo {
                name: name.value().to_string(),
                routes: routes_of(&indexes, &record),
            });
        }
        Ok(out)
    }

    /// Serves an earlier (or any retained) version, in O(1): for an alias, all its traffic
    /// goes to `version` of its index; for an index name, `version` becomes the version its
    /// bare name serves (writes still build on the head; [`Store::unpin`] undoes it).
    pub fn rollback(&self, target: &str, version: u64) -> Result<Rollback, IndexError> {
        let _writer = self.lock_writer()?;
        let txn = self.db().begin_write()?;
        let result = if let Some(state) = self.index(target) {
            if !version_exists(&txn, state.id(), version)? {
                return Err(IndexError::UnknownVersion {
                    index: target.to_string(),
                    version,
                });
            }
            txn.open_table(SERVING)?.insert(state.id(), version)?;
            Rollback {
                target: target.to_string(),
                index: target.to_string(),
                version,
                alias: false,
            }
        } else {
            let record = {
                let table = txn.open_table(ALIASES)?;
                let value = table
                    .get(target)?
                    .ok_or_else(|| IndexError::UnknownTarget {
                        name: target.to_string(),
                    })?;
                decode::<AliasRecord>(value.value(), "alias record")?
            };
            let index = record
                .routes
                .first()
                .map(|r| r.index)
                .filter(|i| record.routes.iter().all(|r| r.index == *i))
                .ok_or_else(|| IndexError::SplitAlias {
                    alias: target.to_string(),
                })?;
            let name = self.name_of(index).ok_or_else(|| {
                StorageError::corrupt(format!("alias `{target}` names index id {index}"))
            })?;
            if !version_exists(&txn, index, version)? {
                return Err(IndexError::UnknownVersion {
                    index: name,
                    version,
                });
            }
            let record = AliasRecord {
                routes: vec![AliasRoute {
                    index,
                    version,
                    weight: 100,
                }],
            };
            txn.open_table(ALIASES)?
                .insert(target, encode(&record).as_slice())?;
            Rollback {
                target: target.to_string(),
                index: name,
                version,
                alias: true,
            }
        };
        txn.commit()?;
        Ok(result)
    }

    /// Makes the bare index name serve the head again; returns the version it was pinned to.
    pub fn unpin(&self, index: &str) -> Result<Option<u64>, IndexError> {
        let _writer = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = self.db().begin_write()?;
        let old = txn
            .open_table(SERVING)?
            .remove(state.id())?
            .map(|v| v.value());
        txn.commit()?;
        Ok(old)
    }

    /// The route of `alias` that `key` takes (what a search with that route key uses).
    pub fn route(&self, alias: &str, key: &str) -> Result<Route, ReadError> {
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

    /// The retained versions of `index`, oldest first.
    pub fn versions(&self, index: &str) -> Result<Vec<VersionInfo>, ReadError> {
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
            .range((id, "")..(id.saturating_add(1), ""))?
        {
            let (key, version) = entry?;
            tags.entry(version.value())
                .or_default()
                .push(key.value().1.to_string());
        }
        let mut aliases: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for entry in txn.open_table(ALIASES)?.iter()? {
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
        for entry in txn.open_table(VERSIONS)?.range((id, 0)..=(id, u64::MAX))? {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_spread() {
        // Pinned values (also computed independently): routing must not change between
        // builds or folio versions, or users would hop between versions.
        assert_eq!(route_bucket("prod", b"alice"), 32);
        assert_eq!(route_bucket("prod", b"bob"), 68);
        assert_eq!(route_bucket("canary", b"alice"), 87);
        assert_eq!(route_bucket("prod", b""), 19);
        let mut counts = [0u32; 100];
        for i in 0..100_000u32 {
            counts[route_bucket("prod", format!("user-{i}").as_bytes()) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn weights_pick_contiguous_buckets() {
        let routes = [
            AliasRoute {
                index: 0,
                version: 3,
                weight: 90,
            },
            AliasRoute {
                index: 0,
                version: 4,
                weight: 10,
            },
        ];
        assert_eq!(pick(&routes, 0).map(|r| r.version), Some(3));
        assert_eq!(pick(&routes, 89).map(|r| r.version), Some(3));
        assert_eq!(pick(&routes, 90).map(|r| r.version), Some(4));
        assert_eq!(pick(&routes, 99).map(|r| r.version), Some(4));
    }
}
