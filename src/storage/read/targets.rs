//! Names for versions as stored: tags, aliases (one version, or several with traffic
//! weights) and the serving pin a rollback sets on a bare index name; resolving a search
//! target.
//!
//! Every change here is one small record written in one transaction, so switching or
//! rolling back an alias costs the same whatever the size of the index.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use redb::ReadTransaction;

use crate::storage::error::{ReadError, StorageError};
use crate::storage::file::records::{decode, decode_u64, AliasRecord, AliasRoute};
use crate::storage::file::sealed::ReadSealed;
use crate::storage::file::tables::{ALIASES, SERVING, TAGS};
use crate::storage::read::state::IndexState;

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
pub(crate) fn pick(routes: &[AliasRoute], bucket: u32) -> Option<&AliasRoute> {
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
    let Some(value) = table.read(alias)? else {
        return Ok(None);
    };
    Ok(Some(decode(value.value(), "alias record")?))
}

pub(crate) fn read_serving(txn: &ReadTransaction, index: u32) -> Result<Option<u64>, StorageError> {
    txn.open_table(SERVING)?
        .read(index)?
        .map(|v| decode_u64(v.value(), "serving pin"))
        .transpose()
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
                .read((state.id(), after))?
                .map(|v| decode_u64(v.value(), "tag"))
                .transpose()?
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
    for entry in txn.open_table(TAGS)?.all()? {
        let (key, version) = entry?;
        out.entry(key.value().0)
            .or_default()
            .insert(decode_u64(version.value(), "tag")?);
    }
    for entry in txn.open_table(ALIASES)?.all()? {
        let (_, value) = entry?;
        let alias: AliasRecord = decode(value.value(), "alias record")?;
        for route in alias.routes {
            out.entry(route.index).or_default().insert(route.version);
        }
    }
    for entry in txn.open_table(SERVING)?.all()? {
        let (index, version) = entry?;
        out.entry(index.value())
            .or_default()
            .insert(decode_u64(version.value(), "serving pin")?);
    }
    Ok(out)
}

pub(crate) fn name_in(indexes: &BTreeMap<String, Arc<IndexState>>, id: u32) -> Option<String> {
    indexes
        .values()
        .find(|s| s.id() == id)
        .map(|s| s.name().to_string())
}

pub(crate) fn routes_of(
    indexes: &BTreeMap<String, Arc<IndexState>>,
    record: &AliasRecord,
) -> Vec<Route> {
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
