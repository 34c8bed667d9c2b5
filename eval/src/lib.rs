//! The chunking-evaluation harness: chunking strategies × questions with gold spans → metrics.
//!
//! Each [`Strategy`] is built as its own index over the same documents with the same
//! embedder ([`build`]), every question is asked of every index ([`run`]), and the answers
//! are scored with [`metrics`] ([`score`]), printed ([`report`], `plot` with feature `plot`) or compared
//! question by question ([`replay`]). [`versions`] replays a question set (a request log's
//! failures, say) between versions of one store instead ([`version_report`]).

pub mod ann;
pub mod build;
pub mod data;
mod error;
pub mod metrics;
pub mod plan;
#[cfg(feature = "plot")]
pub mod plot;
pub mod replay;
pub mod report;
pub mod run;
pub mod score;
pub mod spec;
pub mod trace;
pub mod version_report;
pub mod versions;

pub use build::{build_index, BuiltIndex, EmbedSetup, Workspace};
pub use data::{
    read_question_records, read_questions, Corpus, Gold, GoldRecord, Question, QuestionRecord,
    QuestionSet, RequestOrigin,
};
pub use error::EvalError;
pub use plan::{Plan, PlanError, PlanRerank};
pub use run::{ask_all, embed_questions, Answer, Settings, Unit};
pub use score::{against_dense, score_strategy, AgainstDense, Scores, StrategyReport};
pub use spec::{SpecError, Strategy, StrategyKind};
pub use version_report::VersionReport;
pub use versions::VersionReplay;

/// Builds every strategy over `corpus` in turn, asks it every question and scores the
/// answers by dense search: the reports `folio eval` prints, in the order of `strategies`. Each strategy's
/// store is closed before the next is built. Questions without a vector get one first
/// ([`embed_questions`]).
pub fn evaluate(
    corpus: &Corpus,
    questions: &mut [Question],
    strategies: &[Strategy],
    setup: &EmbedSetup,
    settings: &Settings,
    workspace: &Workspace,
    progress: &dyn folio::store::Progress,
) -> Result<Vec<StrategyReport>, EvalError> {
    embed_questions(questions, setup.embedder.as_ref(), progress)?;
    let questions = &*questions;
    strategies
        .iter()
        .enumerate()
        .map(|(n, strategy)| {
            let built = build_index(n, strategy, corpus, setup, workspace, progress)?;
            let plan = Plan::dense();
            let answers = ask_all(&built, corpus, questions, &plan, settings, progress)?;
            score_strategy(&built, &plan, corpus, questions, &answers, settings)
        })
        .collect()
}
