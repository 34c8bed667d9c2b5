//! Which logged requests failed: the selection predicates of `folio log select`.

use std::collections::{HashMap, HashSet};

use super::record::{LogEntry, Rating, Verdict};

/// Which requests to pick. A request is picked when it lies in the window (every window
/// field given holds) and, if any failure criterion is given, meets at least one of them.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Selection {
    /// Failure: a thumb down.
    pub thumb_down: bool,
    /// Failure: a `wrong` verdict.
    pub wrong: bool,
    /// Failure: another request of the same session followed within this many seconds.
    pub follow_up_secs: Option<u64>,
    /// Failure: the best score is below this (or nothing was returned).
    pub score_below: Option<f32>,
    /// Window: the index that answered.
    pub index: Option<String>,
    /// Window: the version that answered.
    pub version: Option<u64>,
    /// Window: the route key given.
    pub route_key: Option<String>,
    /// Window: at or after this time (Unix milliseconds).
    pub since_ms: Option<u64>,
    /// Window: before this time (Unix milliseconds).
    pub until_ms: Option<u64>,
}

impl Selection {
    /// Whether a failure criterion is given (without one, the whole window is picked).
    pub fn has_failure_criterion(&self) -> bool {
        self.thumb_down || self.wrong || self.follow_up_secs.is_some() || self.score_below.is_some()
    }

    /// The entries picked, in log order.
    pub fn apply<'a>(&self, entries: &'a [LogEntry]) -> Vec<&'a LogEntry> {
        let followed = self
            .follow_up_secs
            .map(|secs| followed_up(entries, secs))
            .unwrap_or_default();
        entries
            .iter()
            .filter(|e| {
                self.in_window(e) && (!self.has_failure_criterion() || self.failed(e, &followed))
            })
            .collect()
    }

    fn in_window(&self, entry: &LogEntry) -> bool {
        let r = &entry.request;
        self.index.as_ref().is_none_or(|i| *i == r.index)
            && self.version.is_none_or(|v| v == r.version)
            && self
                .route_key
                .as_ref()
                .is_none_or(|k| r.route_key.as_ref() == Some(k))
            && self.since_ms.is_none_or(|t| r.time_ms >= t)
            && self.until_ms.is_none_or(|t| r.time_ms < t)
    }

    fn failed(&self, entry: &LogEntry, followed: &HashSet<u64>) -> bool {
        let r = &entry.request;
        let feedback = r.feedback.as_ref();
        (self.thumb_down && feedback.is_some_and(|f| f.rating == Some(Rating::Down)))
            || (self.wrong && feedback.is_some_and(|f| f.verdict == Some(Verdict::Wrong)))
            || followed.contains(&entry.request_id)
            || self
                .score_below
                .is_some_and(|t| r.best_score().is_none_or(|s| s < t))
    }
}

/// The requests another request of the same session followed within `secs` seconds
/// (strictly later, at most `secs` after).
pub fn followed_up(entries: &[LogEntry], secs: u64) -> HashSet<u64> {
    let mut sessions: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for e in entries {
        if let Some(session) = &e.request.outcome.session {
            sessions
                .entry(session)
                .or_default()
                .push((e.request.time_ms, e.request_id));
        }
    }
    let window = secs.saturating_mul(1000);
    let mut out = HashSet::new();
    for times in sessions.values_mut() {
        times.sort_unstable();
        for pair in times.windows(2) {
            let ((t0, id), (t1, _)) = (pair[0], pair[1]);
            if t1 > t0 && t1 - t0 <= window {
                out.insert(id);
            }
        }
    }
    out
}
