#!/usr/bin/env bash
# Reproduces docs/benchmarks/chunking.md's tables: folio's strategies and the peers' chunks
# on the three shared data sets, with the built-in hash embedder (dim 2048).
#
#   scripts/eval/eval_chunking.sh [OUT_DIR]      # default: target/eval
#
# Needs the peers' chunks first (see scripts/eval/peer_chunks.py for the venv):
#   python scripts/eval/peer_chunks.py --docs ../shared/data/$SET/docs.jsonl --out $OUT_DIR/peers/$SET
# Data sets whose peer folder is missing are run with folio's strategies only.
set -euo pipefail

cd "$(dirname "$0")/../.."
out=${1:-target/eval}
data=${DATA:-../shared/data}
mkdir -p "$out"
cargo build --release --quiet
folio=target/release/folio

ours=(
  --strategy fixed:500 --strategy fixed:500/80
  --strategy structure:500 --strategy structure:500/80
  --strategy parent-child:1200/300 --strategy window:300/1
)

# The peers of one data set, as `--strategy NAME=external:FILE` arguments.
peers() {
  local dir=$out/peers/$1
  shift
  for name in "$@"; do
    if [[ -f $dir/$name.jsonl ]]; then
      printf -- '--strategy\n%s=external:%s\n' "$name" "$dir/$name.jsonl"
    fi
  done
}

# run NAME DATASET QUERIES [extra args...]
run() {
  local name=$1 set=$2 queries=$3
  shift 3
  local peer_args
  mapfile -t peer_args < <(peers "$set" "${PEERS[@]}")
  echo "== $name" >&2
  command time -f "$name: %e s wall" "$folio" eval \
    --docs "$data/$set/${DOCS:-docs.jsonl}" --queries "$data/$set/$queries" \
    "${ours[@]}" "${peer_args[@]}" "$@" \
    --csv "$out/$name.csv" --md "$out/$name.md" --plot "$out/$name.png" | tee "$out/$name.txt"
}

PEERS=(lc-rec lc-rec-ov80 lc-md-rec sts-text chonkie-rec)
run chunkeval chunkeval queries.jsonl

PEERS=(lc-rec lc-rec-ov80 lc-md-rec lc-md-rec-strip sts-text sts-md chonkie-rec)
run conditionalqa conditionalqa queries.jsonl

# The same pages as HTML: folio's strategies only (the peers' chunks are of the Markdown).
PEERS=()
DOCS=docs_html.jsonl run conditionalqa-html conditionalqa queries_html.jsonl


# Why answers differ, question by question: structure:500 against the others.
replay() {
  local name=$1 set=$2
  shift 2
  "$folio" replay --docs "$data/$set/docs.jsonl" --queries "$data/$set/queries.jsonl" \
    --strategy structure:500 "$@" --jsonl "$out/replay-$name.jsonl" | tee "$out/replay-$name.txt"
}
replay chunkeval chunkeval --strategy fixed:500 --strategy structure:500/80 \
  --strategy parent-child:1200/300 --strategy "chonkie-rec=external:$out/peers/chunkeval/chonkie-rec.jsonl"
replay conditionalqa conditionalqa --strategy fixed:500 --strategy structure:500/80 \
  --strategy parent-child:1200/300 --strategy "lc-rec=external:$out/peers/conditionalqa/lc-rec.jsonl"

PEERS=(lc-rec lc-md-rec sts-text sts-md chonkie-rec)
run drcd-sentence drcd queries_sentence.jsonl
run drcd-answer drcd queries.jsonl
