//! How long writes report their progress.

/// Reports the progress of long writes (a terminal progress bar, a log line).
pub trait Progress: Sync {
    /// A new stage begins, with `total` units of work.
    fn stage(&self, name: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// `done` units of the stage are done in all.
    fn set_done(&self, done: u64);
}

/// Reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn set_done(&self, _: u64) {}
}
