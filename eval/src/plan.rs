//! Search plans: how a strategy's index is asked, from the short strings `folio eval --mode`
//! takes. `dense`, `lexical`, `hybrid` (the library's default fusion), `hybrid:rrf:K`,
//! `hybrid:weighted:W`, either fusion followed by the legs' depths (`hybrid:rrf:10:100:100`,
//! dense then lexical); `NAME=PLAN` sets the label. A plan is a struct, not a bare mode, so
//! that later stages (a reranker) join it as fields.

use std::sync::Arc;

use folio::embed::Reranker;
use folio::query::{Hybrid, Rerank, SearchMode};

/// One way of asking an index, under evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The label in tables: the `name=` prefix, or the spec itself.
    pub label: String,
    /// How children are ranked.
    pub mode: SearchMode,
    /// The rerank stage after grouping, if any.
    pub rerank: Option<PlanRerank>,
}

/// A plan's rerank stage: the reranker and how many units it scores.
#[derive(Clone)]
pub struct PlanRerank {
    /// The reranker, loaded once for every plan and strategy.
    pub reranker: Arc<dyn Reranker>,
    /// Units it scores (see [`Rerank::top`]).
    pub top: usize,
}

impl PlanRerank {
    /// The search request's stage.
    pub fn stage(&self) -> Rerank {
        Rerank::new(self.reranker.clone()).top(self.top)
    }
}

impl std::fmt::Debug for PlanRerank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (top {})", self.reranker.name(), self.top)
    }
}

/// Two stages are the same when they name the same reranker and depth (a loaded model has
/// no other identity).
impl PartialEq for PlanRerank {
    fn eq(&self, other: &Self) -> bool {
        self.reranker.name() == other.reranker.name() && self.top == other.top
    }
}

/// Why a plan spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mode `{spec}`: {reason}")]
pub struct PlanError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

const GRAMMAR: &str = "expected dense, lexical, hybrid, hybrid:rrf:K or hybrid:weighted:W, \
the last two optionally followed by :DENSE_DEPTH:LEXICAL_DEPTH, and optionally prefixed by NAME=";

impl Plan {
    /// Dense search, the plan of a run that names none.
    pub fn dense() -> Plan {
        Plan {
            label: "dense".into(),
            mode: SearchMode::Dense,
            rerank: None,
        }
    }

    /// This plan followed by `rerank`, labelled `LABEL+rerank`.
    pub fn reranked(&self, rerank: PlanRerank) -> Plan {
        Plan {
            label: format!("{}+rerank", self.label),
            mode: self.mode,
            rerank: Some(rerank),
        }
    }

    /// Parses a spec; see the module documentation for the forms.
    pub fn parse(input: &str) -> Result<Plan, PlanError> {
        let fail = |reason: &str| PlanError {
            spec: input.to_string(),
            reason: reason.to_string(),
        };
        let (label, spec) = match input.split_once('=') {
            Some((name, spec)) if !name.is_empty() => (name, spec),
            Some(_) => return Err(fail("empty name before `=`")),
            None => (input, input),
        };
        let parts: Vec<&str> = spec.split(':').collect();
        let mode = match parts.as_slice() {
            ["dense"] => SearchMode::Dense,
            ["lexical"] => SearchMode::Lexical,
            ["hybrid"] => SearchMode::Hybrid(Hybrid::default()),
            ["hybrid", fusion, value, depths @ ..] => {
                let hybrid = match *fusion {
                    "rrf" => Hybrid::default().rrf(number(value).ok_or_else(|| fail(GRAMMAR))?),
                    "weighted" => {
                        Hybrid::default().weighted(number(value).ok_or_else(|| fail(GRAMMAR))?)
                    }
                    _ => return Err(fail(GRAMMAR)),
                };
                let hybrid = match depths {
                    [] => hybrid,
                    [dense, lexical] => hybrid
                        .dense_depth(number(dense).ok_or_else(|| fail(GRAMMAR))?)
                        .lexical_depth(number(lexical).ok_or_else(|| fail(GRAMMAR))?),
                    _ => return Err(fail(GRAMMAR)),
                };
                hybrid.validate().map_err(|e| fail(&e.to_string()))?;
                SearchMode::Hybrid(hybrid)
            }
            _ => return Err(fail(GRAMMAR)),
        };
        Ok(Plan {
            label: label.to_string(),
            mode,
            rerank: None,
        })
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

fn number<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use folio::query::Fusion;

    #[test]
    fn every_form_parses_to_its_mode() {
        assert_eq!(Plan::parse("dense").unwrap(), Plan::dense());
        assert_eq!(Plan::parse("lexical").unwrap().mode, SearchMode::Lexical);
        assert_eq!(
            Plan::parse("hybrid").unwrap().mode,
            SearchMode::Hybrid(Hybrid::default())
        );
        let rrf = Plan::parse("hybrid:rrf:10").unwrap();
        assert_eq!(rrf.label, "hybrid:rrf:10");
        assert_eq!(rrf.mode, SearchMode::Hybrid(Hybrid::default().rrf(10)));
        let weighted = Plan::parse("w=hybrid:weighted:0.3:50:200").unwrap();
        assert_eq!(weighted.label, "w");
        let SearchMode::Hybrid(h) = weighted.mode else {
            panic!("{weighted:?}");
        };
        assert_eq!(h.fusion, Fusion::Weighted { dense_weight: 0.3 });
        assert_eq!((h.dense_depth, h.lexical_depth), (50, 200));
    }

    #[test]
    fn malformed_or_out_of_range_plans_are_refused() {
        for bad in [
            "",
            "sparse",
            "hybrid:rrf",
            "hybrid:rrf:x",
            "hybrid:max:3",
            "hybrid:rrf:10:100",
            "hybrid:weighted:1.5",
            "=dense",
        ] {
            let error = Plan::parse(bad).unwrap_err();
            assert_eq!(error.spec, bad);
        }
    }
}
