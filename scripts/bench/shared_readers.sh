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
#   env: N (200000), EF (64, the readers' beam), ROUNDS (3), COUNTS (1,4,8), PY (the kit's
#   venv, scripts/bench/requirements.txt, default target/bench/venv), BENCH (the kit), DATA
#   (generated datasets, default target/bench/ann-scale), FOLIO (the binary)
set -u
OUT=${1:-target/bench/shared-readers}
N=${N:-200000}
EF=${EF:-64}
ROUNDS=${ROUNDS:-3}
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
echo "| step | seconds |" > "$OUT/steps.md"
echo "|---|---:|" >> "$OUT/steps.md"

step() {
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  echo "== $name $(date +%T)"
  "$@" > "$log" 2>&1 || { echo "failed: $* (see $log)"; exit 1; }
  echo "| $name | $((SECONDS - t0)) |" >> "$OUT/steps.md"
}

if [ ! -f "$SET/meta.json" ]; then
  # Only the unfiltered set: the readers search without a filter.
  step data "$OUT/data.log" $NICE $PY $BENCH/ann_data.py --out "$DATA" --dataset normalized-384 \
    --n $N --queries 1000 --selectivities "" --kinds "" --name $NAME
fi
if [ ! -f "$STORE" ]; then
  step "folio build" "$OUT/folio-build.log" $NICE $FOLIO bench ann --data "$SET" --store "$STORE" \
    --build-threads 2 --filters none --ef $EF --time-budget 1
fi
[ -f "$OUT/hnswlib.bin" ] || step "hnswlib build" "$OUT/hnswlib-build.log" $NICE $PY \
  "$HERE/shared_readers.py" build-hnswlib "$SET" "$OUT/hnswlib.bin" --threads 2
[ -f "$OUT/usearch.usearch" ] || step "usearch build" "$OUT/usearch-build.log" $NICE $PY \
  "$HERE/shared_readers.py" build-usearch "$SET" "$OUT/usearch.usearch" --threads 2
# The shared files are made by the first mapped reader of the memory step (its 1-reader run).
rm -rf "$STORE.segments"
step memory "$OUT/memory.log" $NICE $PY "$HERE/shared_readers.py" measure --set "$SET" \
  --folio "$FOLIO" --store "$STORE" --hnswlib "$OUT/hnswlib.bin" --usearch "$OUT/usearch.usearch" \
  --counts $COUNTS --ef $EF --json "$OUT/memory.json"
for r in $(seq 1 $ROUNDS); do
  for mode in mapped resident; do
    shared=$([ $mode = mapped ] && echo on || echo off)
    step "qps $mode $r" "$OUT/qps-$mode-$r.log" $NICE $FOLIO --shared-segments $shared bench ann \
      --data "$SET" --store "$STORE" --reuse-store --read-only --filters none --ef 16,32,64,128 \
      --time-budget 3 --json "$OUT/qps-$mode-$r.json"
  done
done
$PY "$HERE/shared_readers.py" qps "$OUT"/qps-*.json | tee "$OUT/qps.md"
tail -n +1 "$OUT/memory.log" | grep '^|'
cat "$OUT/steps.md"
