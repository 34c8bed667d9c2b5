#!/bin/bash
# Many readers, one memory (docs/benchmarks/shared-readers.md): at one size of the kit's
# normalized-384 (default 200k), the summed PSS of 1, 4 and 8 reader processes of folio with
# its segments mapped from shared files, folio with them read into each process, hnswlib
# (each process loads the index) and usearch (each process views the mapped index file),
# one after another (scripts/bench/shared_readers.py); then one folio reader's QPS and
# recall@10, mapped against resident, in alternating rounds. Builds what is missing first
# (the dataset, the folio store, the hnswlib and usearch indexes, M=16, ef_construction=200,
# 2 threads), under nice. Each step's wall time goes to OUT/steps.md. CI does not run it.
# Usage, from the repository root: scripts/bench/shared_readers.sh [OUT]   (default
#   target/bench/shared-readers)
#   env: N (200000), EF (64, the readers' beam), ROUNDS (10), COUNTS (1,4,8), PY (the kit's
#   venv, scripts/bench/requirements.txt, default target/bench/venv), BENCH (the kit), DATA
#   (generated datasets, default target/bench/ann-scale), FOLIO (the binary), BASELINE (an
#   older folio binary, e.g. built from the commit before shared segments: its resident QPS
#   joins each round), QPS_ONLY (1: only the QPS rounds), PEERS (0: folio only, no hnswlib
#   or usearch build), RESIDENT_COUNTS (reader counts of folio resident, default COUNTS:
#   eight resident readers of 1M x 384 need 16 GiB)
set -u
OUT=${1:-target/bench/shared-readers}
N=${N:-200000}
EF=${EF:-64}
ROUNDS=${ROUNDS:-10}
COUNTS=${COUNTS:-1,4,8}
FOLIO=${FOLIO:-target/release/folio}
PY=${PY:-target/bench/venv/bin/python}
BENCH=${BENCH:-../shared/bench}
DATA=${DATA:-target/bench/ann-scale}
HERE=$(cd "$(dirname "$0")" && pwd)
NICE="nice -n 10"
export OPENBLAS_NUM_THREADS=1
NAME=normalized-384-$N
SET=$DATA/$NAME
STORE=$OUT/store.folio
mkdir -p "$OUT" "$DATA"
. "$HERE/steps.sh"

if [ ! -f "$SET/meta.json" ]; then
  # Only the unfiltered set: the readers search without a filter.
  step data "$OUT/data.log" $NICE $PY $BENCH/ann_data.py --out "$DATA" --dataset normalized-384 \
    --n $N --queries 1000 --selectivities "" --kinds "" --name $NAME
fi
if [ ! -f "$STORE" ]; then
  step "folio build" "$OUT/folio-build.log" $NICE $FOLIO bench ann --data "$SET" --store "$STORE" \
    --build-threads 2 --filters none --ef $EF --time-budget 1
fi
PEER_ARGS="--hnswlib $OUT/hnswlib.bin --usearch $OUT/usearch.usearch"
[ "${PEERS:-1}" = 0 ] && PEER_ARGS=--no-peers
[ "${PEERS:-1}" = 0 ] || [ -f "$OUT/hnswlib.bin" ] || step "hnswlib build" "$OUT/hnswlib-build.log" $NICE $PY \
  "$HERE/shared_readers.py" build-hnswlib "$SET" "$OUT/hnswlib.bin" --threads 2
[ "${PEERS:-1}" = 0 ] || [ -f "$OUT/usearch.usearch" ] || step "usearch build" "$OUT/usearch-build.log" $NICE $PY \
  "$HERE/shared_readers.py" build-usearch "$SET" "$OUT/usearch.usearch" --threads 2
# The shared files are made by the first mapped reader of the memory step (its 1-reader run).
[ "${QPS_ONLY:-0}" = 1 ] || rm -rf "$STORE.segments"
[ "${QPS_ONLY:-0}" = 1 ] || step memory "$OUT/memory.log" $NICE $PY "$HERE/shared_readers.py" measure --set "$SET" \
  --folio "$FOLIO" --store "$STORE" $PEER_ARGS --counts $COUNTS \
  --resident-counts ${RESIDENT_COUNTS:-$COUNTS} --ef $EF --json "$OUT/memory.json"
QUERY="--data $SET --store $STORE --reuse-store --filters none --ef 16,32,64,128"
rm -f "$OUT"/qps-*.json
for r in $(seq 1 $ROUNDS); do
  for mode in mapped resident; do
    shared=$([ $mode = mapped ] && echo on || echo off)
    step "qps $mode $r" "$OUT/qps-$mode-$r.log" $NICE $FOLIO --shared-segments $shared bench ann \
      $QUERY --read-only --json "$OUT/qps-$mode-$r.json"
  done
  if [ -n "${BASELINE:-}" ]; then
    step "qps baseline $r" "$OUT/qps-baseline-$r.log" $NICE $BASELINE bench ann $QUERY \
      --json "$OUT/qps-baseline-$r.json"
  fi
done
$PY "$HERE/shared_readers.py" qps "$OUT"/qps-*.json | tee "$OUT/qps.md"
grep '^|' "$OUT/memory.log"
cat "$OUT/steps.md"
