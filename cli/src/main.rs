//! The `folio` command: see `folio --help`; a thin shell over the library and the
//! measurement harness.

mod bench;
mod commands;
mod common;
mod demo;
mod dump;
mod eval;
mod external;
mod ingest;
mod log;
mod output;
mod progress;
mod ui;
mod versions;

fn main() -> std::process::ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`folio search ... | head`)
    // would panic; a command-line tool should just stop, as `cat` does.
    #[cfg(unix)]
    // SAFETY: called first thing, before any thread exists; only resets a signal disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    quiet_redb_panics();
    commands::main()
}

/// redb can panic on a damaged page; the library catches those panics and reports the
/// damage as a typed error ("the store is damaged: ..."), so the default hook's message and
/// backtrace would only bury that error. One line stays, for a panic nothing catches.
fn quiet_redb_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        match info.location().filter(|at| at.file().contains("redb-")) {
            Some(at) => eprintln!(
                "note: redb stopped on a damaged page ({}:{})",
                at.file().rsplit("/src/").next().unwrap_or(at.file()),
                at.line()
            ),
            None => default_hook(info),
        }
    }));
}
