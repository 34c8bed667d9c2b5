//! The `folio` command: see `folio --help`; the work is done in `folio::cli`.

fn main() -> std::process::ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`folio search ... | head`)
    // would panic; a command-line tool should just stop, as `cat` does.
    #[cfg(unix)]
    // SAFETY: called first thing, before any thread exists; only resets a signal disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    folio::cli::main()
}
