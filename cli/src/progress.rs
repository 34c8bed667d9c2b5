//! Terminal progress bars for long writes (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use folio::store::Progress;

pub(crate) struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub(crate) fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} {per_sec} ({eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        bar.set_style(style);
        Bar { bar }
    }

    /// Runs `f` (which prints) with the bar out of the way, terminal or not.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Prints a line above the bar.
    pub(crate) fn println(&self, line: &str) {
        self.bar.println(line);
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.bar.set_message(name.to_string());
        self.bar.set_length(total);
        self.bar.set_position(0);
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn set_done(&self, done: u64) {
        self.bar.set_position(done);
    }
}
