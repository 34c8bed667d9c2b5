//! Hybrid ranking: two first stages (the dense leg and the lexical leg), each asked for its
//! own depth, fused into one ranking by reciprocal rank fusion or a normalised weighted sum.
//!
//! Scores of the fused ranking (what hits carry in [`super::SearchMode::Hybrid`]):
//! - [`Fusion::Rrf`]: `Σ 1 / (k + rank)` over the legs that ranked the child (rank from 1),
//!   in `(0, 2 / (k + 1)]`;
//! - [`Fusion::Weighted`]: `w · dense + (1 − w) · lexical`, each leg's scores min-max
//!   normalised over its own list (a list whose scores are all equal normalises to 1; a leg
//!   that did not rank the child gives 0), in `[0, 1]`.

use std::collections::HashMap;

use serde::Serialize;

use super::rank::Rank;
use super::QueryError;
use super::SearchMode;
use crate::index::{ChildSearch, Neighbor};
use crate::limits::{check, InvalidParameter, DENSE_WEIGHT, LEG_DEPTH, RRF_K};

/// Reciprocal rank fusion's `k` when none is given (the value of Cormack et al.'s paper;
/// not the default fusion: see [`Hybrid::default`]).
pub const DEFAULT_RRF_K: u32 = 60;

/// The dense leg's weight in a new [`Hybrid`]'s [`Fusion::Weighted`] (the lexical leg's is
/// `1 − w`), chosen by measurement (`docs/benchmarks/hybrid.md`): of the fusions tried, the
/// only one that lost to dense on none of four question sets, by leaving one set out.
pub const DEFAULT_DENSE_WEIGHT: f32 = 0.7;

/// Children the dense leg is asked for by a new [`Hybrid`] (at least what the search wants):
/// what a dense search of 10 units gathers, so the dense leg costs what dense search does.
/// Both legs 100 deep answered no better on the four question sets and made hybrid 1.6x
/// dense's latency (`docs/benchmarks/hybrid.md`, `docs/benchmarks/lexical.md`).
pub const DEFAULT_DENSE_DEPTH: usize = 40;

/// Children the lexical leg is asked for by a new [`Hybrid`] (at least what the search wants);
/// see [`DEFAULT_DENSE_DEPTH`].
pub const DEFAULT_LEXICAL_DEPTH: usize = 40;

/// How two legs' rankings become one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Fusion {
    /// Reciprocal rank fusion: a child scores `Σ 1 / (k + rank)` over the legs ranking it.
    Rrf {
        /// Damps the weight of the first ranks ([`DEFAULT_RRF_K`] by default).
        k: u32,
    },
    /// Each leg's scores min-max normalised over its list, then `w · dense + (1 − w) ·
    /// lexical`.
    Weighted {
        /// `w`, in `0.0..=1.0` ([`DEFAULT_DENSE_WEIGHT`] by default).
        dense_weight: f32,
    },
}

/// A hybrid search's settings: the fusion and each leg's depth. The default fuses by
/// [`Fusion::Weighted`] with [`DEFAULT_DENSE_WEIGHT`], each leg asked for 100 children.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hybrid {
    /// How the legs are fused (the weighted sum with [`DEFAULT_DENSE_WEIGHT`] by default).
    pub fusion: Fusion,
    /// Children the dense leg ranks: `max(dense_depth, wanted)`.
    pub dense_depth: usize,
    /// Children the lexical leg ranks: `max(lexical_depth, wanted)`.
    pub lexical_depth: usize,
}

impl Default for Hybrid {
    fn default() -> Self {
        Hybrid {
            fusion: Fusion::Weighted {
                dense_weight: DEFAULT_DENSE_WEIGHT,
            },
            dense_depth: DEFAULT_DENSE_DEPTH,
            lexical_depth: DEFAULT_LEXICAL_DEPTH,
        }
    }
}

impl Hybrid {
    /// Fuses by reciprocal rank fusion with this `k`.
    pub fn rrf(mut self, k: u32) -> Self {
        self.fusion = Fusion::Rrf { k };
        self
    }

    /// Fuses by the normalised weighted sum with this dense weight.
    pub fn weighted(mut self, dense_weight: f32) -> Self {
        self.fusion = Fusion::Weighted { dense_weight };
        self
    }

    /// Asks the dense leg for `n` children (see the field of that name).
    pub fn dense_depth(mut self, n: usize) -> Self {
        self.dense_depth = n;
        self
    }

    /// Asks the lexical leg for `n` children (see the field of that name).
    pub fn lexical_depth(mut self, n: usize) -> Self {
        self.lexical_depth = n;
        self
    }

    /// Refuses a `k`, weight or depth outside [`crate::limits`]' bounds.
    pub fn validate(&self) -> Result<(), InvalidParameter> {
        match self.fusion {
            Fusion::Rrf { k } => check("rrf_k", k, &RRF_K).map(drop)?,
            Fusion::Weighted { dense_weight } => {
                check("dense_weight", dense_weight, &DENSE_WEIGHT).map(drop)?
            }
        }
        check("dense_depth", self.dense_depth, &LEG_DEPTH)?;
        check("lexical_depth", self.lexical_depth, &LEG_DEPTH)?;
        Ok(())
    }
}

/// A hybrid search's settings as the command line and the bindings take them: each unset
/// unless given (see [`SearchMode::from_settings`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HybridSettings {
    /// `rrf` or `weighted`.
    pub fusion: Option<String>,
    /// RRF's `k`.
    pub rrf_k: Option<u32>,
    /// The weighted sum's dense weight.
    pub dense_weight: Option<f32>,
    /// Children the dense leg ranks.
    pub dense_depth: Option<usize>,
    /// Children the lexical leg ranks.
    pub lexical_depth: Option<usize>,
}

impl SearchMode {
    /// The mode named `name` (`dense`, `lexical` or `hybrid`); a hybrid one with `settings`,
    /// the unset ones [`Hybrid::default`]'s (`rrf_k` alone means RRF, `dense_weight` alone
    /// the weighted sum). A setting given to another mode, or to the other fusion, is
    /// refused rather than ignored.
    pub fn from_settings(
        name: &str,
        settings: &HybridSettings,
    ) -> Result<SearchMode, InvalidParameter> {
        let mode = match name {
            "dense" => SearchMode::Dense,
            "lexical" => SearchMode::Lexical,
            "hybrid" => SearchMode::Hybrid(Hybrid::default()),
            other => {
                return Err(InvalidParameter::new(
                    "mode",
                    other,
                    "dense, lexical or hybrid",
                ))
            }
        };
        let SearchMode::Hybrid(default) = mode else {
            if *settings != HybridSettings::default() {
                let allowed = "hybrid (fusion, rrf_k, dense_weight and the depths are hybrid's)";
                return Err(InvalidParameter::new("mode", name, allowed));
            }
            return Ok(mode);
        };
        let hybrid = match (
            settings.fusion.as_deref(),
            settings.rrf_k,
            settings.dense_weight,
        ) {
            (None, None, None) => default,
            (Some("rrf") | None, k, None) => default.rrf(k.unwrap_or(DEFAULT_RRF_K)),
            (Some("weighted") | None, None, w) => {
                default.weighted(w.unwrap_or(DEFAULT_DENSE_WEIGHT))
            }
            (fusion @ (Some("rrf" | "weighted") | None), _, _) => {
                let allowed = "rrf_k with rrf, dense_weight with weighted, not both";
                return Err(InvalidParameter::new(
                    "fusion",
                    fusion.unwrap_or("unset"),
                    allowed,
                ));
            }
            (Some(other), _, _) => {
                return Err(InvalidParameter::new("fusion", other, "rrf or weighted"))
            }
        };
        let hybrid = hybrid
            .dense_depth(settings.dense_depth.unwrap_or(DEFAULT_DENSE_DEPTH))
            .lexical_depth(settings.lexical_depth.unwrap_or(DEFAULT_LEXICAL_DEPTH));
        hybrid.validate()?;
        Ok(SearchMode::Hybrid(hybrid))
    }
}

/// Two legs fused. Asked again for more, it asks both legs again, deeper (each for at
/// least `wanted`), and fuses anew: a deeper leg may change the fused order, which the
/// collector handles by grouping again.
pub(crate) struct Fused<'a> {
    dense: &'a mut dyn Rank,
    lexical: &'a mut dyn Rank,
    hybrid: Hybrid,
    /// Each child's score in the dense and in the lexical leg of the last ranking, where
    /// that leg ranked it: the stage scores hits carry.
    legs: HashMap<u32, (Option<f32>, Option<f32>)>,
    /// Microseconds spent fusing (the legs' own time is theirs), over every call.
    pub(crate) micros: u64,
}

impl<'a> Fused<'a> {
    pub(crate) fn new(dense: &'a mut dyn Rank, lexical: &'a mut dyn Rank, hybrid: Hybrid) -> Self {
        Fused {
            dense,
            lexical,
            hybrid,
            legs: HashMap::new(),
            micros: 0,
        }
    }

    /// Child `id`'s dense and lexical scores in the last ranking.
    pub(crate) fn leg_scores(&self, id: u32) -> (Option<f32>, Option<f32>) {
        self.legs.get(&id).copied().unwrap_or_default()
    }
}

impl Rank for Fused<'_> {
    fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
        let dense = self.dense.rank(self.hybrid.dense_depth.max(wanted))?;
        let lexical = self.lexical.rank(self.hybrid.lexical_depth.max(wanted))?;
        let fusion = self.hybrid.fusion;
        let neighbors = super::timed("fuse", &mut self.micros, || {
            let mut neighbors = fuse(fusion, &dense.neighbors, &lexical.neighbors);
            neighbors.sort_by(Neighbor::rank);
            neighbors.truncate(wanted);
            neighbors
        });
        self.legs.clear();
        for n in &dense.neighbors {
            self.legs.entry(n.id).or_default().0 = Some(n.score);
        }
        for n in &lexical.neighbors {
            self.legs.entry(n.id).or_default().1 = Some(n.score);
        }
        Ok(ChildSearch { neighbors, ..dense })
    }
}

/// Every child of either list with its fused score, unordered.
fn fuse(fusion: Fusion, dense: &[Neighbor], lexical: &[Neighbor]) -> Vec<Neighbor> {
    let mut fused: HashMap<u32, f64> = HashMap::with_capacity(dense.len() + lexical.len());
    match fusion {
        Fusion::Rrf { k } => {
            for list in [dense, lexical] {
                for (rank, n) in list.iter().enumerate() {
                    *fused.entry(n.id).or_default() += 1.0 / (f64::from(k) + rank as f64 + 1.0);
                }
            }
        }
        Fusion::Weighted { dense_weight } => {
            let w = f64::from(dense_weight);
            for (list, weight) in [(dense, w), (lexical, 1.0 - w)] {
                let normalised = min_max(list);
                for (n, score) in list.iter().zip(normalised) {
                    *fused.entry(n.id).or_default() += weight * score;
                }
            }
        }
    }
    fused
        .into_iter()
        .map(|(id, score)| Neighbor {
            id,
            score: score as f32,
        })
        .collect()
}

/// `list`'s scores mapped onto `[0, 1]` by its own minimum and maximum; all 1 when they
/// are equal (one child, or a tie throughout), so a leg that ranked children still counts.
fn min_max(list: &[Neighbor]) -> impl Iterator<Item = f64> + '_ {
    let scores = list.iter().map(|n| f64::from(n.score));
    let min = scores.clone().fold(f64::INFINITY, f64::min);
    let max = scores.clone().fold(f64::NEG_INFINITY, f64::max);
    scores.map(move |s| {
        if max > min {
            (s - min) / (max - min)
        } else {
            1.0
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leg that answers a fixed ranking's first `wanted`, and counts how deep it was asked.
    struct Fixed(Vec<Neighbor>, Vec<usize>);

    impl Rank for Fixed {
        fn rank(&mut self, wanted: usize) -> Result<ChildSearch, QueryError> {
            self.1.push(wanted);
            Ok(ChildSearch {
                neighbors: self.0.iter().take(wanted).copied().collect(),
                paths: Vec::new(),
                distances: 0,
                rescored: 0,
                lists: 0,
            })
        }
    }

    fn list(pairs: &[(u32, f32)]) -> Vec<Neighbor> {
        pairs
            .iter()
            .map(|&(id, score)| Neighbor { id, score })
            .collect()
    }

    #[test]
    fn asked_deeper_both_legs_are_asked_deeper() {
        let mut dense = Fixed(list(&[(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]), Vec::new());
        let mut lexical = Fixed(list(&[(4, 9.0), (5, 3.0)]), Vec::new());
        let hybrid = Hybrid::default()
            .rrf(DEFAULT_RRF_K)
            .dense_depth(1)
            .lexical_depth(1);
        let mut fused = Fused::new(&mut dense, &mut lexical, hybrid);
        let first = fused.rank(2).unwrap().neighbors;
        let second = fused.rank(4).unwrap().neighbors;
        assert_eq!(fused.leg_scores(4), (Some(0.6), Some(9.0)));
        assert_eq!(fused.leg_scores(5), (None, Some(3.0)));
        assert_eq!((dense.1, lexical.1), (vec![2, 4], vec![2, 4]));
        // Child 4 ties child 1 at first (each first of one leg); asked deeper, the dense
        // leg ranks it too and it leads.
        assert_eq!(first.iter().map(|n| n.id).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(
            second.iter().map(|n| n.id).collect::<Vec<_>>(),
            [4, 1, 2, 5]
        );
        let k = f64::from(DEFAULT_RRF_K);
        let both = (1.0 / (k + 4.0) + 1.0 / (k + 1.0)) as f32;
        assert_eq!(second[0].score, both);
    }

    #[test]
    fn weighted_scores_lie_in_the_unit_interval_and_ties_go_to_the_smaller_child() {
        let dense = list(&[(7, 0.5), (3, 0.2)]);
        let lexical = list(&[(3, 4.0), (7, 1.0)]);
        let mut fused = fuse(Fusion::Weighted { dense_weight: 0.5 }, &dense, &lexical);
        fused.sort_by(Neighbor::rank);
        // Each child is first in one leg and last in the other: 0.5 each, 3 before 7.
        assert_eq!(fused, list(&[(3, 0.5), (7, 0.5)]));
        let single = fuse(
            Fusion::Weighted { dense_weight: 0.25 },
            &list(&[(1, 0.3)]),
            &[],
        );
        assert_eq!(single, list(&[(1, 0.25)]));
    }

    #[test]
    fn settings_make_the_mode_and_refuse_what_they_would_ignore() {
        let mode =
            |name: &str, settings: HybridSettings| SearchMode::from_settings(name, &settings);
        let none = HybridSettings::default;
        assert_eq!(mode("dense", none()), Ok(SearchMode::Dense));
        assert_eq!(mode("lexical", none()), Ok(SearchMode::Lexical));
        assert_eq!(
            mode("hybrid", none()),
            Ok(SearchMode::Hybrid(Hybrid::default()))
        );
        let rrf = HybridSettings {
            rrf_k: Some(10),
            ..none()
        };
        assert_eq!(
            mode("hybrid", rrf.clone()),
            Ok(SearchMode::Hybrid(Hybrid::default().rrf(10)))
        );
        let weighted = HybridSettings {
            fusion: Some("weighted".into()),
            dense_weight: Some(0.25),
            dense_depth: Some(30),
            ..none()
        };
        let want = Hybrid::default().weighted(0.25).dense_depth(30);
        assert_eq!(mode("hybrid", weighted), Ok(SearchMode::Hybrid(want)));
        let named_rrf = HybridSettings {
            fusion: Some("rrf".into()),
            ..none()
        };
        let want = Hybrid::default().rrf(DEFAULT_RRF_K);
        assert_eq!(mode("hybrid", named_rrf), Ok(SearchMode::Hybrid(want)));
        let refused = |name: &str, settings: HybridSettings| {
            mode(name, settings).map(|_| ()).map_err(|e| e.name)
        };
        assert_eq!(refused("lexical", rrf), Err("mode"));
        assert_eq!(refused("sparse", none()), Err("mode"));
        let both = HybridSettings {
            rrf_k: Some(5),
            dense_weight: Some(0.5),
            ..none()
        };
        assert_eq!(refused("hybrid", both), Err("fusion"));
        let crossed = HybridSettings {
            fusion: Some("weighted".into()),
            rrf_k: Some(5),
            ..none()
        };
        assert_eq!(refused("hybrid", crossed), Err("fusion"));
        let unknown = HybridSettings {
            fusion: Some("max".into()),
            ..none()
        };
        assert_eq!(refused("hybrid", unknown), Err("fusion"));
        let heavy = HybridSettings {
            dense_weight: Some(1.5),
            ..none()
        };
        assert_eq!(refused("hybrid", heavy), Err("dense_weight"));
    }
}
