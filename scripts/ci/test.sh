#!/usr/bin/env bash
# The whole test suite, the command the README names and `.ci/run` ends with: the pinned
# test models, milvus-lite, the Python test environment and the browser (downloaded while
# Rust compiles);
# the Rust tests of every crate but the Python one in one cargo invocation (the library and
# the dependencies they share compile once, with the features unified); the Python wheel,
# which reuses that build (tools/workspace-hack); then, beside the Rust tests, the wheel's
# pytest and the README's quick path as printed, with the binary the build made.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p target
(scripts/ci/test_models.sh && scripts/ci/install_milvus_lite.sh &&
  scripts/ci/test_python.sh --prepare && scripts/ci/test_ui.sh --prepare) \
  > target/test-downloads.log 2>&1 &
downloads=$!
trap 'kill "$downloads" 2>/dev/null || true' EXIT
cargo test --release --workspace --exclude folio-python --no-run \
  --message-format=json-render-diagnostics > target/test-build.json
wait "$downloads" || { cat target/test-downloads.log >&2; exit 1; }
trap - EXIT
scripts/ci/test_python.sh --build
# Beside the Rust tests: the wheel's pytest, the quick path and the browser tests of
# `folio ui`, and the store's kill test,
# which spends its 30 s mostly waiting on the writers it kills (one test binary at a time,
# cargo would leave a core idle that long). It runs from its binary, as cargo runs it.
crash_test=crash_kill::killed_writers_leave_whole_batches
store_tests=$(python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "store" and m.get("executable"):
        print(m["executable"])
' < target/test-build.json)
[ -x "$store_tests" ] || { echo "no store test binary in the build's output" >&2; exit 1; }
"$store_tests" --exact "$crash_test" > target/test-crash.log 2>&1 &
crash=$!
(scripts/ci/test_python.sh --test && FOLIO_BIN_DIR=target/release scripts/ci/quickstart.sh &&
  FOLIO_BIN_DIR=target/release scripts/ci/test_ui.sh --test) > target/test-python.log 2>&1 &
beside=$!
trap 'kill "$beside" "$crash" 2>/dev/null || true' EXIT
cargo test --release --workspace --exclude folio-python -- --skip "$crash_test"
status=0
wait "$crash" || status=$?
wait "$beside" || status=$?
trap - EXIT
cat target/test-crash.log target/test-python.log
exit "$status"
