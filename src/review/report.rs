//! Online metrics per version, route or day (`folio log report`), and two groups compared.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::record::{LogEntry, Rating, Verdict};
use super::select::followed_up;
use super::stats::{
    mean, mean_difference, quantile, quantile_difference, rate_difference, wilson, Estimate,
};

/// Seconds within which a next request of the same session counts as a follow-up, unless
/// told otherwise.
pub const DEFAULT_FOLLOW_UP_SECS: u64 = 60;

/// What rows a report has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum GroupBy {
    /// `index@version`: the version that answered.
    #[default]
    Version,
    /// The route key the caller gave (`-` without one).
    Route,
    /// The UTC day, `YYYY-MM-DD`.
    Day,
}

/// A rate with what it counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// The requests that had it.
    pub count: u64,
    /// The requests it is a rate of.
    pub of: u64,
    /// The rate and its Wilson interval; `None` when `of` is 0.
    pub estimate: Option<Estimate>,
}

impl Rate {
    fn new(count: u64, of: u64) -> Rate {
        Rate {
            count,
            of,
            estimate: wilson(count, of),
        }
    }
}

/// The metrics of one group of logged requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMetrics {
    /// The group (`kb@3`, a route key, a day).
    pub group: String,
    /// Requests in it.
    pub requests: u64,
    /// Thumbs up among the rated requests.
    pub thumb_up: Rate,
    /// Requests followed up within the session window, among those with a session.
    pub follow_up: Rate,
    /// `wrong` verdicts among the judged requests.
    pub wrong: Rate,
    /// Median search latency, milliseconds.
    pub latency_p50_ms: Option<Estimate>,
    /// 95th percentile search latency, milliseconds.
    pub latency_p95_ms: Option<Estimate>,
    /// Mean context tokens returned.
    pub context_tokens: Option<Estimate>,
}

/// Group B against group A: each metric's difference `B - A` with its interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Group A.
    pub a: String,
    /// Group B.
    pub b: String,
    /// Thumb-up rate (Newcombe).
    pub thumb_up: Option<Estimate>,
    /// Follow-up rate (Newcombe).
    pub follow_up: Option<Estimate>,
    /// Wrong-verdict rate (Newcombe).
    pub wrong: Option<Estimate>,
    /// p50 latency, ms (bootstrap).
    pub latency_p50_ms: Option<Estimate>,
    /// p95 latency, ms (bootstrap).
    pub latency_p95_ms: Option<Estimate>,
    /// Mean context tokens (Welch).
    pub context_tokens: Option<Estimate>,
}

/// A report: one row per group, and the comparison when asked (or when there are exactly
/// two groups by version).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogReport {
    /// How rows are grouped.
    pub by: GroupBy,
    /// The follow-up window, seconds.
    pub follow_up_secs: u64,
    /// The rows, in group order.
    pub groups: Vec<GroupMetrics>,
    /// B against A.
    pub comparison: Option<Comparison>,
}

/// The samples of one group, kept for comparisons.
#[derive(Default)]
struct Samples {
    requests: u64,
    up: u64,
    rated: u64,
    followed: u64,
    with_session: u64,
    wrong: u64,
    judged: u64,
    latency_ms: Vec<f64>,
    tokens: Vec<f64>,
}

/// The group key of an entry.
pub fn group_key(entry: &LogEntry, by: GroupBy) -> String {
    let r = &entry.request;
    match by {
        GroupBy::Version => format!("{}@{}", r.index, r.version),
        GroupBy::Route => r.route_key.clone().unwrap_or_else(|| "-".into()),
        GroupBy::Day => day(r.time_ms),
    }
}

fn day(time_ms: u64) -> String {
    crate::filter::format_date((time_ms / 86_400_000 * 86_400_000) as i64)
}

/// Computes the report of `entries`; `compare` names groups A and B.
pub fn report(
    entries: &[LogEntry],
    by: GroupBy,
    follow_up_secs: u64,
    compare: Option<(&str, &str)>,
) -> LogReport {
    let followed: HashSet<u64> = followed_up(entries, follow_up_secs);
    let mut groups: BTreeMap<String, Samples> = BTreeMap::new();
    for e in entries {
        let s = groups.entry(group_key(e, by)).or_default();
        let r = &e.request;
        s.requests += 1;
        if let Some(rating) = r.feedback.as_ref().and_then(|f| f.rating) {
            s.rated += 1;
            s.up += u64::from(rating == Rating::Up);
        }
        if let Some(verdict) = r.feedback.as_ref().and_then(|f| f.verdict) {
            s.judged += 1;
            s.wrong += u64::from(verdict == Verdict::Wrong);
        }
        if r.outcome.session.is_some() {
            s.with_session += 1;
            s.followed += u64::from(followed.contains(&e.request_id));
        }
        s.latency_ms.push(r.latency_us as f64 / 1000.0);
        s.tokens.push(r.context_tokens as f64);
    }
    for s in groups.values_mut() {
        s.latency_ms.sort_by(f64::total_cmp);
    }
    let rows = groups
        .iter()
        .map(|(g, s)| metrics(g, s))
        .collect::<Vec<_>>();
    let pair = match compare {
        Some((a, b)) => Some((a.to_string(), b.to_string())),
        None if by == GroupBy::Version && groups.len() == 2 => {
            let mut keys = groups.keys().cloned();
            keys.next().zip(keys.next())
        }
        None => None,
    };
    let comparison = pair.and_then(|(a, b)| {
        let (sa, sb) = (groups.get(&a)?, groups.get(&b)?);
        let (ma, mb) = (metrics(&a, sa), metrics(&b, sb));
        let diff = |x: &Rate, y: &Rate| Some(rate_difference(&x.estimate?, &y.estimate?));
        Some(Comparison {
            thumb_up: diff(&ma.thumb_up, &mb.thumb_up),
            follow_up: diff(&ma.follow_up, &mb.follow_up),
            wrong: diff(&ma.wrong, &mb.wrong),
            latency_p50_ms: quantile_difference(&sa.latency_ms, &sb.latency_ms, 0.5),
            latency_p95_ms: quantile_difference(&sa.latency_ms, &sb.latency_ms, 0.95),
            context_tokens: mean_difference(&sa.tokens, &sb.tokens),
            a,
            b,
        })
    });
    LogReport {
        by,
        follow_up_secs,
        groups: rows,
        comparison,
    }
}

fn metrics(group: &str, s: &Samples) -> GroupMetrics {
    GroupMetrics {
        group: group.to_string(),
        requests: s.requests,
        thumb_up: Rate::new(s.up, s.rated),
        follow_up: Rate::new(s.followed, s.with_session),
        wrong: Rate::new(s.wrong, s.judged),
        latency_p50_ms: quantile(&s.latency_ms, 0.5),
        latency_p95_ms: quantile(&s.latency_ms, 0.95),
        context_tokens: mean(&s.tokens),
    }
}
