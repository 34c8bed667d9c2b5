//! Store operations checked against a plain in-memory model, in the manner of redb's
//! `fuzz_redb`: `fuzz/fuzz_targets/store_ops.rs` runs random sequences of them, and
//! `tests/store/fuzz_regressions.rs` replays the crashers kept there as tests.
//!
//! The model knows each document's incarnation (a new one after every delete) and ACL now,
//! and what every version of every index held. A search of any target (a version, a tag,
//! an alias with one route or a gray release, the bare index, pinned or not) must return
//! only documents that version held and whose current incarnation and ACL still admit
//! the caller, filled to `min(k, visible)`; every text is one chunk, so units are
//! documents. A write fault (the Nth write, sync or resize of the next operation fails,
//! the backend of `tests/store/crash_faults.rs`) may or may not land the operation: the store is
//! reopened and the model follows what the file says. `check` must stay clean.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use folio::chunk::ChunkSpec;
use folio::query::SearchRequest;
use folio::store::{Access, MergePolicy, Store, StoreBuilder};

use crate::versions::{config_like_default, doc, route, small_options, TestBackend};

pub const DOCS: usize = 6;
pub const PRINCIPALS: [&str; 3] = ["a", "b", "c"];
pub const WORDS: [&str; 8] = [
    "falcon", "budget", "memo", "hotel", "printer", "badge", "kernel", "invoice",
];
const INDEXES: [&str; 2] = ["default", "second"];

/// One document operation inside a batch. `acl` is a bit set over [`PRINCIPALS`].
#[derive(Debug, Clone)]
pub enum DocOp {
    Upsert {
        doc: usize,
        words: Vec<usize>,
        acl: u8,
    },
    Delete {
        doc: usize,
    },
    SetAcl {
        doc: usize,
        acl: u8,
    },
}

/// One step. Positions (`version`, `target`, …) pick among what exists, modulo its count.
#[derive(Debug, Clone)]
pub enum Op {
    Batch(Vec<DocOp>),
    Tag {
        index: usize,
        version: usize,
    },
    /// Point alias `al{alias}` at one retained version of `default`, or split it 60/40.
    Alias {
        alias: usize,
        version: usize,
        split: Option<usize>,
    },
    /// Roll the bare `default` back to a retained version, or unpin it (`None`).
    Pin {
        version: Option<usize>,
    },
    RollbackAlias {
        alias: usize,
        version: usize,
    },
    Compact {
        index: usize,
    },
    Gc {
        keep: usize,
    },
    CreateIndex,
    DropIndex,
    Reopen,
    /// The next operation's `after`-th write, sync or resize fails.
    Fault {
        after: u32,
    },
    /// Search a target as principals (a bit set; `None`: unrestricted) for `k` units.
    Search {
        target: usize,
        principals: Option<u8>,
        k: usize,
        key: u8,
    },
}

/// A document as the model knows it.
#[derive(Debug, Clone, PartialEq)]
struct Known {
    incarnation: u64,
    acl: Vec<&'static str>,
}

type Snapshot = BTreeMap<usize, Known>;

/// The principals of bit set `bits` (bit `i` is `PRINCIPALS[i]`).
pub fn principals(bits: u8) -> Vec<&'static str> {
    PRINCIPALS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, p)| *p)
        .collect()
}

/// Whether an ACL admits a caller: an empty ACL is public.
pub fn admits(acl: &[&str], caller: &[&str]) -> bool {
    acl.is_empty() || acl.iter().any(|p| caller.contains(p))
}

struct Model {
    now: Snapshot,
    incarnations: u64,
    /// Per index name: what each version held.
    versions: BTreeMap<&'static str, BTreeMap<u64, Snapshot>>,
}

impl Model {
    /// `now` after `ops`, applied in order as the store applies them; the ops on absent
    /// documents are left out of the returned batch.
    fn batch(&self, ops: &[DocOp]) -> (Snapshot, u64, Vec<DocOp>) {
        let (mut now, mut incarnations) = (self.now.clone(), self.incarnations);
        let mut kept = Vec::new();
        for op in ops {
            match op {
                DocOp::Upsert { doc, acl, .. } => {
                    let incarnation = match now.get(doc) {
                        Some(k) => k.incarnation,
                        None => {
                            incarnations += 1;
                            incarnations
                        }
                    };
                    let acl = principals(*acl);
                    now.insert(*doc, Known { incarnation, acl });
                }
                DocOp::Delete { doc } => {
                    if now.remove(doc).is_none() {
                        continue;
                    }
                }
                DocOp::SetAcl { doc, acl } => match now.get_mut(doc) {
                    Some(k) => k.acl = principals(*acl),
                    None => continue,
                },
            }
            kept.push(op.clone());
        }
        (now, incarnations, kept)
    }

    /// The documents a search of `index`@`version` may return to `caller` (`None`:
    /// unrestricted).
    fn visible(&self, index: &str, version: u64, caller: Option<&[&str]>) -> BTreeSet<String> {
        let then = self
            .versions
            .get(index)
            .and_then(|v| v.get(&version))
            .unwrap_or_else(|| panic!("{index}@{version} answered; the model never made it"));
        then.iter()
            .filter(|(id, was)| {
                self.now.get(id).is_some_and(|now| {
                    now.incarnation == was.incarnation
                        && caller.is_none_or(|c| admits(&was.acl, c) && admits(&now.acl, c))
                })
            })
            .map(|(id, _)| format!("d{id}"))
            .collect()
    }
}

/// A store on the fault-injecting backend, and the model it must agree with.
pub struct Run {
    _dir: tempfile::TempDir,
    path: PathBuf,
    options: StoreBuilder,
    store: Option<Store>,
    backend: (
        std::sync::Arc<std::sync::atomic::AtomicI64>,
        std::sync::Arc<std::sync::atomic::AtomicU64>,
    ),
    model: Model,
    /// Writes, syncs and resizes the next operation may make before one fails.
    fault: Option<u32>,
    tags: u64,
}

impl Run {
    /// A new store; `merges` turns on the default merge policy (merges after commits).
    pub fn new(merges: bool) -> Run {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.folio");
        let options = if merges {
            small_options().merge(MergePolicy::default())
        } else {
            small_options()
        };
        let mut run = Run {
            _dir: dir,
            path,
            options,
            store: None,
            backend: Default::default(),
            model: Model {
                now: Snapshot::new(),
                incarnations: 0,
                versions: BTreeMap::from([("default", BTreeMap::from([(0, Snapshot::new())]))]),
            },
            fault: None,
            tags: 0,
        };
        run.open();
        run
    }

    fn open(&mut self) {
        self.store = None;
        let backend = TestBackend::open(&self.path);
        self.backend = (backend.budget.clone(), backend.failed.clone());
        let store = (self.options.clone())
            .open_with_backend(&self.path, backend)
            .unwrap_or_else(|e| panic!("open: {e}"));
        self.store = Some(store);
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("open store")
    }

    /// Reopens, checks the file, and follows it: versions made since the model last
    /// looked hold the documents as they are now.
    fn reopen(&mut self) {
        self.open();
        if let Some(store) = self.store.as_mut() {
            let report = store.check_integrity().expect("check");
            assert!(report.is_consistent(), "{:?}", report.problems);
        }
    }

    /// The retained versions of `index`.
    fn retained(&self, index: &str) -> Vec<u64> {
        self.store()
            .versions(index)
            .list()
            .expect("versions")
            .iter()
            .map(|v| v.version)
            .collect()
    }

    /// Every version made since the model last looked holds `now` (batches set it first;
    /// merges and compactions keep the content).
    fn follow(&mut self) {
        let indexes: Vec<(&'static str, u64)> = INDEXES
            .iter()
            .filter_map(|name| Some((*name, self.head_of(name)?)))
            .collect();
        self.model
            .versions
            .retain(|name, _| indexes.iter().any(|(n, _)| n == name));
        for (name, head) in indexes {
            let versions = self
                .model
                .versions
                .entry(name)
                .or_insert_with(|| BTreeMap::from([(0, Snapshot::new())]));
            let known = versions.keys().next_back().copied().unwrap_or(0);
            for v in known + 1..=head {
                versions.insert(v, self.model.now.clone());
            }
        }
    }

    /// Runs `op` with the pending fault armed; when the fault hit (or the op failed), the
    /// store is reopened and `landed` says, from the file, whether the op took effect.
    fn guarded<T>(
        &mut self,
        op: impl FnOnce(&Store) -> Result<T, String>,
    ) -> Option<Result<T, String>> {
        if let Some(after) = self.fault.take() {
            self.backend.1.store(0, Ordering::SeqCst);
            self.backend.0.store(i64::from(after), Ordering::SeqCst);
        }
        let result = op(self.store());
        self.backend.0.store(-1, Ordering::SeqCst);
        let hit = self.backend.1.swap(0, Ordering::SeqCst) != 0;
        if hit {
            self.reopen();
            return None;
        }
        if let Err(e) = &result {
            panic!("an operation failed without a fault: {e}");
        }
        Some(result)
    }

    pub fn step(&mut self, op: &Op) {
        match op {
            Op::Batch(ops) => {
                let (now, incarnations, ops) = self.model.batch(ops);
                if ops.is_empty() {
                    return;
                }
                let before = self.head("default");
                let done = self.guarded(|store| {
                    let mut batch = store.batch();
                    for op in &ops {
                        match op {
                            DocOp::Upsert { doc: d, words, acl } => {
                                let text: Vec<&str> =
                                    words.iter().map(|w| WORDS[w % WORDS.len()]).collect();
                                let document = doc(&format!("d{d}"), &text.join(" "))
                                    .with_acl(principals(*acl));
                                batch.upsert(document);
                            }
                            DocOp::Delete { doc } => {
                                batch.delete(&format!("d{doc}"));
                            }
                            DocOp::SetAcl { doc, acl } => {
                                batch.set_acl(&format!("d{doc}"), principals(*acl));
                            }
                        }
                    }
                    batch.commit().map(drop).map_err(|e| e.to_string())
                });
                // A batch that failed on its final sync may be in the file whole.
                if done.is_some() || self.head("default") > before {
                    self.model.now = now;
                    self.model.incarnations = incarnations;
                }
            }
            Op::Tag { index, version } => {
                let name = INDEXES[index % 2];
                if !self.has_index(name) {
                    return;
                }
                let v = pick(&self.retained(name), *version);
                self.tags += 1;
                let tag = format!("t{}", self.tags);
                self.guarded(|s| s.versions(name).tag(v, &tag).map_err(|e| e.to_string()));
            }
            Op::Alias {
                alias,
                version,
                split,
            } => {
                let list = self.retained("default");
                let v = pick(&list, *version);
                let routes = match split.map(|w| pick(&list, w)) {
                    Some(w) if w != v => vec![route("default", v, 60), route("default", w, 40)],
                    _ => vec![route("default", v, 100)],
                };
                let name = format!("al{}", alias % 2);
                self.guarded(|s| s.aliases().set(&name, &routes).map_err(|e| e.to_string()));
            }
            Op::Pin { version } => {
                let v = version.map(|i| pick(&self.retained("default"), i));
                self.guarded(|s| {
                    match v {
                        Some(v) => s.rollback("default", v).map(drop),
                        None => s.versions("default").unpin().map(drop),
                    }
                    .map_err(|e| e.to_string())
                });
            }
            Op::RollbackAlias { alias, version } => {
                let name = format!("al{}", alias % 2);
                let exists = self
                    .store()
                    .aliases()
                    .list()
                    .expect("aliases")
                    .iter()
                    .any(|a| a.name == name);
                if exists {
                    let v = pick(&self.retained("default"), *version);
                    self.guarded(|s| s.rollback(&name, v).map(drop).map_err(|e| e.to_string()));
                }
            }
            Op::Compact { index } => {
                let name = INDEXES[index % 2];
                if self.has_index(name) {
                    self.guarded(|s| {
                        s.indexes()
                            .compact(name)
                            .map(drop)
                            .map_err(|e| e.to_string())
                    });
                }
            }
            Op::Gc { keep } => {
                self.guarded(|s| s.gc(*keep).map(drop).map_err(|e| e.to_string()));
            }
            Op::CreateIndex => {
                if !self.has_index("second") {
                    self.guarded(|s| {
                        let config = config_like_default(s, ChunkSpec::default());
                        s.indexes()
                            .create("second", config)
                            .map(drop)
                            .map_err(|e| e.to_string())
                    });
                }
            }
            Op::DropIndex => {
                if self.has_index("second") {
                    self.guarded(|s| s.indexes().drop("second").map_err(|e| e.to_string()));
                }
            }
            Op::Reopen => self.reopen(),
            Op::Fault { after } => self.fault = Some(*after),
            Op::Search {
                target,
                principals: caller,
                k,
                key,
            } => self.search(*target, *caller, *k, *key),
        }
        self.follow();
    }

    fn head(&self, index: &str) -> u64 {
        self.head_of(index).unwrap_or(0)
    }

    fn has_index(&self, index: &str) -> bool {
        self.store().index_names().iter().any(|name| name == index)
    }

    /// The newest version of `index`, if it exists.
    fn head_of(&self, index: &str) -> Option<u64> {
        let indexes = self.store().indexes().list().expect("list indexes");
        indexes
            .into_iter()
            .find(|i| i.name == index)
            .map(|i| i.head)
    }

    fn search(&self, t: usize, caller: Option<u8>, k: usize, key: u8) {
        let store = self.store();
        let mut targets = vec!["default".to_string()];
        for name in INDEXES {
            if !self.has_index(name) {
                continue;
            }
            targets.push(name.to_string());
            for v in store.versions(name).list().expect("versions") {
                targets.push(format!("{name}@{}", v.version));
                targets.extend(v.tags.iter().map(|tag| format!("{name}@{tag}")));
            }
        }
        for alias in store.aliases().list().expect("aliases") {
            targets.push(alias.name);
        }
        let target = &targets[t % targets.len()];
        let k = k.clamp(1, 8);
        let caller = caller.map(principals);
        let access = match &caller {
            None => Access::Unrestricted,
            Some(p) => Access::principals(p.iter().copied()),
        };
        let mut request = SearchRequest::text("falcon budget memo")
            .access(access)
            .target(target)
            .route_key(format!("user-{key}"))
            .k(k);
        request.dedup = None;
        let response = store
            .search(&request)
            .unwrap_or_else(|e| panic!("search {target}: {e}"));
        let allowed = self
            .model
            .visible(&response.index, response.version, caller.as_deref());
        for hit in &response.results {
            assert!(
                allowed.contains(&hit.doc_id),
                "{target} ({}@{}) as {caller:?} returned {}; the model allows {allowed:?}",
                response.index,
                response.version,
                hit.doc_id
            );
        }
        assert_eq!(
            response.results.len(),
            k.min(allowed.len()),
            "{target} as {caller:?}: {allowed:?}"
        );
        assert_eq!(response.stats.visible, allowed.len() as u64, "{target}");
    }

    /// The final check: the file is consistent.
    pub fn finish(mut self) {
        self.reopen();
    }
}

fn pick(list: &[u64], i: usize) -> u64 {
    list[i % list.len()]
}

/// Runs `ops` on a new store and checks every step.
pub fn run(merges: bool, ops: &[Op]) {
    let mut run = Run::new(merges);
    for op in ops {
        run.step(op);
    }
    run.finish();
}
