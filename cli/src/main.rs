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
    commands::main()
}
