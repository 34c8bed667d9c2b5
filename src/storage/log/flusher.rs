//! The thread that writes a logging store's entries behind its searches: woken when
//! [`WRITE_EVERY`](super::WRITE_EVERY) entries wait, and every [`FLUSH_EVERY`] anyway, so
//! a search only appends to memory and never waits for a commit (the first search of a
//! handle aside, which reserves its first block of ids).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// How long an entry waits in memory at most, when fewer than `WRITE_EVERY` arrive.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The flusher's wake-up call, shared by the store's log and the thread.
#[derive(Default)]
pub(crate) struct Wake {
    due: Mutex<bool>,
    bell: Condvar,
}

impl Wake {
    /// Asks the thread to write now (enough entries wait, or the store is closing).
    pub(crate) fn ring(&self) {
        *self.due.lock() = true;
        self.bell.notify_one();
    }

    /// Waits until rung or [`FLUSH_EVERY`] passed.
    fn wait(&self) {
        let mut due = self.due.lock();
        if !*due {
            self.bell.wait_for(&mut due, FLUSH_EVERY);
        }
        *due = false;
    }
}

/// Starts the thread: it runs `flush` at every wake-up until `flush` returns `false` (the
/// store is gone). A failed write leaves the entries pending for the next one, so `flush`
/// reports only whether to go on.
pub(crate) fn start(wake: Arc<Wake>, flush: impl Fn() -> bool + Send + 'static) {
    // A thread that cannot start leaves the writes to the 64-entry threshold's fallback
    // and the close; nothing is lost.
    let _ = std::thread::Builder::new()
        .name("folio-log".into())
        .spawn(move || loop {
            wake.wait();
            if !flush() {
                return;
            }
        });
}
