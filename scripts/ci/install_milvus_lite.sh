#!/usr/bin/env bash
# Installs milvus-lite (the single-process Milvus test server the folio-milvus tests start on
# 127.0.0.1) into target/milvus-lite, pinned, once. milvus-lite 3.2.2 imports pymilvus's gRPC
# stubs without declaring it, so pymilvus is pinned beside it. The tests find the server at
# target/milvus-lite/bin/milvus-lite, or at $FOLIO_MILVUS_LITE.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/milvus-lite
pins="milvus-lite==3.2.2 pymilvus==3.0.2"
if [ -x "$venv/bin/milvus-lite" ] && [ "$(cat "$venv/pins" 2>/dev/null)" = "$pins" ]; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC2086
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile $pins
echo "$pins" > "$venv/pins"
