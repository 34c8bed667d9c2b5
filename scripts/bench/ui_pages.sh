#!/usr/bin/env bash
# Page render times of `folio ui` on a large store: The Rust Programming Language book as
# HTML (the toolchain's rust-docs component: `rustc --print sysroot`/share/doc/rust/html/book,
# its top-level pages) and the first 300 crate READMEs of the local cargo registry (sorted
# by path), ingested in two versions, with a few logged searches. Each page is fetched
# ROUNDS times with curl after one warm-up; the table gives the median and the slowest
# time. The figures of docs/benchmarks/ui.md.
#
#   scripts/bench/ui_pages.sh OUT_DIR [ROUNDS]      (FOLIO: the binary, default target/release/folio)
set -euo pipefail
out=${1:?usage: ui_pages.sh OUT_DIR [ROUNDS]}
rounds=${2:-20}
folio=${FOLIO:-target/release/folio}
folio=$(cd "$(dirname "$folio")" && pwd)/$(basename "$folio")
book=${BOOK:-$(rustc --print sysroot)/share/doc/rust/html/book}
mkdir -p "$out/corpus/book" "$out/corpus/crates"
cp "$book"/*.html "$out/corpus/book/"
find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -mindepth 3 -maxdepth 3 -name README.md | sort | sed -n 1,300p |
  while read -r readme; do
    crate=$(basename "$(dirname "$readme")")
    cp "$readme" "$out/corpus/crates/$crate.md"
  done
cd "$out/corpus"
store=store.folio
rm -f "$store"
started=$(date +%s.%N)
"$folio" ingest "$store" book >/dev/null
"$folio" ingest "$store" crates --acl crates-team >/dev/null
echo "ingest: $(echo "$(date +%s.%N) - $started" | bc) s; $(ls book | wc -l) book pages, $(ls crates | wc -l) READMEs"
"$folio" stats "$store" > ../stats.txt
head -3 ../stats.txt
for q in "how do I read a file line by line" "what is ownership" "async runtime" "serialize to json"; do
  "$folio" search "$store" "$q" --as crates-team --log >/dev/null
done
"$folio" ui "$store" --port 0 > ../ui.out 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q token= ../ui.out 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' ../ui.out)
base=${url%%/\?*}
token=${url##*token=}
biggest=$(ls -S book | sed -n 1p)
pages=(
  "documents|/documents"
  "documents, page 5|/documents?page=5"
  "documents as a principal|/documents?principal=crates-team"
  "document (largest book page)|/document?id=book/$biggest"
  "search as a principal|/search?q=how+do+I+read+a+file+line+by+line&as=crates-team"
  "search, public only|/search?q=what+is+ownership"
  "versions|/versions"
  "changes between versions|/versions/diff?index=default&from=1&to=2"
  "request log|/log"
)
echo
echo "| page | bytes | median ms | slowest ms |"
echo "|---|---|---|---|"
for entry in "${pages[@]}"; do
  name=${entry%%|*}
  path=${entry#*|}
  sep='?'
  [[ $path == *\?* ]] && sep='&'
  target="$base$path${sep}token=$token"
  bytes=$(curl -s -o /dev/null -w '%{size_download}' "$target")
  times=$(for _ in $(seq "$rounds"); do curl -s -o /dev/null -w '%{time_total}\n' "$target"; done | sort -n)
  median=$(echo "$times" | awk '{a[NR]=$1} END {printf "%.1f", 1000 * (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}')
  slowest=$(echo "$times" | tail -1 | awk '{printf "%.1f", 1000 * $1}')
  echo "| $name | $bytes | $median | $slowest |"
done
