//! `folio ui`: the store's local web page (the `folio-ui` crate), opened read-only with the
//! embedder the command line names.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use folio::store::Store;

use crate::common::EmbedArgs;
use crate::output::{err, CliResult};

#[derive(Args)]
pub(crate) struct UiArgs {
    /// The store file.
    store: PathBuf,
    /// The port (0: any free one).
    #[arg(long, default_value_t = 7411)]
    port: u16,
    /// The address to listen on: loopback by default. Another address exposes a page that
    /// can search as any principal to whoever holds the token.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// A per-question file of `folio eval --jsonl` or `folio replay --jsonl` the evaluation
    /// page lists (repeatable).
    #[arg(long = "eval")]
    evals: Vec<PathBuf>,
    /// A chart of `folio eval --plot` the evaluation page shows (repeatable).
    #[arg(long = "plot")]
    plots: Vec<PathBuf>,
    /// The embedder the store's index was built with (for searches).
    #[command(flatten)]
    embed: EmbedArgs,
}

pub(crate) fn run(args: UiArgs) -> CliResult {
    let embed = args.embed.clone();
    let server = folio_ui::Server::bind(folio_ui::Options {
        store: args.store.clone(),
        addr: SocketAddr::new(args.bind, args.port),
        evals: args.evals,
        plots: args.plots,
        open: Arc::new(move |path| embed.open(path, Store::builder().read_only(true))),
    })
    .map_err(err)?;
    println!(
        "folio ui: {} on {}\n(the address carries the access token; the pages answer only requests that have it. Ctrl-C stops.)",
        args.store.display(),
        server.url()
    );
    use std::io::Write;
    std::io::stdout().flush().map_err(err)?;
    server.serve().map_err(err)
}
