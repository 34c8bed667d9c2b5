//! `folio publish STORE TARGET --milvus URI`: the `folio` command runs this program for
//! `publish` (found beside its own executable, then on PATH).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use folio::store::Progress;
use folio::Store;
use folio_milvus::{PublishOptions, Remote, VectorIndex, DEFAULT_BATCH, DEFAULT_PREFIX};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Publish one index version to Milvus as one collection (resumable: a rerun finishes an
/// interrupted publish without duplicate rows).
#[derive(Parser)]
#[command(name = "folio publish", version)]
struct Args {
    /// The store file.
    store: PathBuf,
    /// `index`, `index@version`, `index@tag` or an alias.
    target: String,
    /// The Milvus server, e.g. http://127.0.0.1:19530.
    #[arg(long, value_name = "URI")]
    milvus: String,
    /// Collection names start with this: PREFIX_INDEX_vVERSION.
    #[arg(long = "collection", value_name = "PREFIX", default_value = DEFAULT_PREFIX)]
    prefix: String,
    /// Rows per upsert.
    #[arg(long, default_value_t = DEFAULT_BATCH)]
    batch: usize,
    /// Exact search (a FLAT index) instead of HNSW.
    #[arg(long)]
    flat: bool,
}

/// A progress bar on stderr (hidden when it is not a terminal).
struct Bar(ProgressBar);

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.0.set_message(name.to_string());
        self.0.set_length(total);
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
    fn set_done(&self, done: u64) {
        self.0.set_position(done);
    }
}

fn run(args: Args) -> Result<(), String> {
    // Open for writing: the publish marks the index published, so that from then on its
    // changes are recorded for `folio milvus follow`. A store this user may only read is
    // published all the same, unmarked.
    let store = match Store::builder().open(&args.store) {
        Ok(store) => store,
        Err(writing) => {
            let store = Store::builder()
                .read_only(true)
                .open(&args.store)
                .map_err(|_| writing.to_string())?;
            eprintln!(
                "note: the store cannot be written here ({writing}): published without the mark, so `folio milvus follow` will not apply its changes (use `folio milvus sync`)"
            );
            store
        }
    };
    let remote = Remote::connect(&args.milvus).map_err(|e| e.to_string())?;
    let mut options = PublishOptions {
        prefix: args.prefix,
        batch: args.batch,
        ..PublishOptions::default()
    };
    if args.flat {
        options.index = VectorIndex::Flat;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} {per_sec} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let report = remote
        .publish(&store, &args.target, &options, &Bar(bar.clone()))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    println!(
        "published {}@{} as `{}`: {} rows ({} written now, {} stale removed), complete",
        report.index,
        report.version,
        report.collection,
        report.rows,
        report.written,
        report.removed
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
