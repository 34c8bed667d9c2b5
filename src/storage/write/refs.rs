//! Changing names for versions: tags, aliases and the serving pin a rollback sets on a bare
//! index name. Every change is one small record written in one transaction, so switching or
//! rolling back an alias costs the same whatever the size of the index.

use std::sync::Arc;

use redb::{ReadableTable, WriteTransaction};

use crate::limits::InvalidParameter;
use crate::storage::error::{IndexError, NameKind, NameRule, StorageError};
use crate::storage::file::records::{decode, decode_u64, encode, AliasRecord, AliasRoute};
use crate::storage::file::sealed::{ReadSealed, WriteSealed};
use crate::storage::file::tables::{ALIASES, INDEXES, SERVING, TAGS, VERSIONS};
use crate::storage::read::state::IndexState;
use crate::storage::read::targets::{name_in, Rollback, Route};
use crate::storage::write::outbox::record_alias;
use crate::storage::write::writer::Writer;

/// The longest index, alias or tag name.
const MAX_NAME: usize = 128;

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

fn read_alias_record(
    txn: &WriteTransaction,
    alias: &str,
) -> Result<Option<AliasRecord>, StorageError> {
    txn.open_table(ALIASES)?
        .read(alias)?
        .map(|v| decode::<AliasRecord>(v.value(), "alias record"))
        .transpose()
}

fn version_exists(txn: &WriteTransaction, index: u32, version: u64) -> Result<bool, StorageError> {
    Ok(txn.open_table(VERSIONS)?.get((index, version))?.is_some())
}

impl Writer<'_> {
    fn state_of(&self, index: &str) -> Result<Arc<IndexState>, IndexError> {
        self.index(index).ok_or_else(|| IndexError::UnknownIndex {
            name: index.to_string(),
        })
    }

    fn name_of(&self, id: u32) -> Option<String> {
        name_in(&self.indexes(), id)
    }

    pub(crate) fn tag(&self, index: &str, version: u64, tag: &str) -> Result<(), IndexError> {
        validate_name(tag, NameKind::Tag)?;
        let mut turn = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = turn.txn()?;
        if !version_exists(&txn, state.id(), version)? {
            return Err(IndexError::UnknownVersion {
                index: index.to_string(),
                version,
            });
        }
        {
            let mut tags = txn.open_table(TAGS)?;
            let existing = tags
                .read((state.id(), tag))?
                .map(|v| decode_u64(v.value(), "tag"))
                .transpose()?;
            if let Some(existing) = existing {
                if existing == version {
                    return Ok(());
                }
                return Err(IndexError::TagExists {
                    index: index.to_string(),
                    tag: tag.to_string(),
                    version: existing,
                });
            }
            tags.put((state.id(), tag), &version.to_le_bytes())?;
        }
        txn.commit()?;
        Ok(())
    }

    pub(crate) fn remove_tag(&self, index: &str, tag: &str) -> Result<u64, IndexError> {
        let mut turn = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = turn.txn()?;
        let version = txn
            .open_table(TAGS)?
            .take((state.id(), tag))?
            .map(|v| decode_u64(&v, "tag"))
            .transpose()?
            .ok_or_else(|| IndexError::UnknownTag {
                index: index.to_string(),
                tag: tag.to_string(),
            })?;
        txn.commit()?;
        Ok(version)
    }

    pub(crate) fn set_alias(&self, alias: &str, routes: &[Route]) -> Result<(), IndexError> {
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
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
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
        let before = read_alias_record(&txn, alias)?;
        txn.open_table(ALIASES)?
            .put(alias, encode(&record).as_slice())?;
        record_alias(&txn, alias, before.as_ref(), Some(&record))?;
        txn.commit()?;
        Ok(())
    }

    pub(crate) fn remove_alias(&self, alias: &str) -> Result<(), IndexError> {
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
        let before = txn
            .open_table(ALIASES)?
            .take(alias)?
            .map(|bytes| decode::<AliasRecord>(&bytes, "alias record"))
            .transpose()?
            .ok_or_else(|| IndexError::UnknownAlias {
                name: alias.to_string(),
            })?;
        record_alias(&txn, alias, Some(&before), None)?;
        txn.commit()?;
        Ok(())
    }

    pub(crate) fn rollback(&self, target: &str, version: u64) -> Result<Rollback, IndexError> {
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
        let result = if let Some(state) = self.index(target) {
            if !version_exists(&txn, state.id(), version)? {
                return Err(IndexError::UnknownVersion {
                    index: target.to_string(),
                    version,
                });
            }
            txn.open_table(SERVING)?
                .put(state.id(), &version.to_le_bytes())?;
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
                    .read(target)?
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
            let rolled = AliasRecord {
                routes: vec![AliasRoute {
                    index,
                    version,
                    weight: 100,
                }],
            };
            txn.open_table(ALIASES)?
                .put(target, encode(&rolled).as_slice())?;
            record_alias(&txn, target, Some(&record), Some(&rolled))?;
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

    pub(crate) fn unpin(&self, index: &str) -> Result<Option<u64>, IndexError> {
        let mut turn = self.lock_writer()?;
        let state = self.state_of(index)?;
        let txn = turn.txn()?;
        let old = txn
            .open_table(SERVING)?
            .take(state.id())?
            .map(|v| decode_u64(&v, "serving pin"))
            .transpose()?;
        txn.commit()?;
        Ok(old)
    }
}
