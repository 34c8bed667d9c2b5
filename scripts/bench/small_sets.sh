#!/usr/bin/env bash
# Small visible sets beside numpy's exact scan over the same rows, in alternating rounds
# (docs/benchmarks/ann.md, "Small visible sets").
#
#   scripts/bench/small_sets.sh OUT ROUNDS DATA_DIR [DATA_DIR ...]
#
# DATA_DIR: a dataset written by the kit's ann_data.py. Per dataset the store is built once
# (OUT/stores/NAME.folio, kept), then each round runs the kit's numpy `exact` peer and folio
# one after the other on the filters below. Environment: FOLIO (the binary, default
# target/release/folio), FOLIO_BEFORE (optional: a second binary run in the same rounds,
# its order alternating with FOLIO's), PY (a Python with the kit's numpy), KIT (the kit,
# default ../shared/bench), FILTERS. Then: scripts/bench/small_sets.py OUT.
set -euo pipefail
out=$1 rounds=$2
shift 2
FOLIO=${FOLIO:-target/release/folio}
PY=${PY:-python3}
KIT=${KIT:-../shared/bench}
FILTERS=${FILTERS:-none,random_0.1,correlated_0.1,random_0.01,correlated_0.01,correlated_0.001}
R="--time-budget 1 --min-queries 100 --queries 500 --stop-recall 0.99"
mkdir -p "$out/stores"
for data in "$@"; do
    name=$(basename "$data")
    store="$out/stores/$name.folio"
    [ -f "$store" ] || "$FOLIO" bench ann --data "$data" --store "$store" --build-threads 2 \
        --filters "$FILTERS" --ef 64 --queries 100 > "$out/stores/$name.build.txt"
done
folio_round() { # binary label dir data
    "$1" bench ann --data "$4" --store "$out/stores/$(basename "$4").folio" --reuse-store \
        --filters "$FILTERS" --json "$3/$2.json" $R > "$3/$2.txt"
}
for r in $(seq 1 "$rounds"); do
    for data in "$@"; do
        dir="$out/$(basename "$data")/round$r"
        mkdir -p "$dir"
        "$PY" "$KIT/ann_peers.py" --data "$data" --out "$dir/exact" --peers exact \
            --filters "$FILTERS" $R > "$dir/exact.txt"
        if [ -n "${FOLIO_BEFORE:-}" ] && [ $((r % 2)) -eq 0 ]; then
            folio_round "$FOLIO_BEFORE" before "$dir" "$data"
            folio_round "$FOLIO" folio "$dir" "$data"
        else
            folio_round "$FOLIO" folio "$dir" "$data"
            [ -z "${FOLIO_BEFORE:-}" ] || folio_round "$FOLIO_BEFORE" before "$dir" "$data"
        fi
        echo "round $r $(basename "$data") done"
    done
done
