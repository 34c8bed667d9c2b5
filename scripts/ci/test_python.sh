#!/usr/bin/env bash
# Builds the Python package (python/, PyO3 + maturin) into an abi3 wheel, installs it in a
# fresh virtual environment with pinned pytest, numpy and the adapters' frameworks
# (langchain-core, llama-index-core), and runs python/tests. The build tools live in
# target/python/tools (installed once, pinned); the test environment is made anew each run,
# so the wheel is tested as a user installs it.
#
# `--prepare` only makes the tools and the fresh environment (the downloads, no compiling):
# `scripts/ci/test.sh` does it in the background while Rust compiles; the next run without
# it then uses that environment once (and makes a new one when there is none). `--build`
# only builds the wheel, `--test` only installs and tests the wheel built last: test.sh runs
# the tests beside the Rust ones (cargo's lock on target/ would hold a build back).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/python
tools=$out/tools

prepare() {
  if [ ! -x "$tools/bin/maturin" ]; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet --disable-pip-version-check --no-compile maturin==1.16.0
  fi
  rm -rf "$out/venv"
  python3 -m venv "$out/venv"
  "$out/venv/bin/pip" install --quiet --disable-pip-version-check --no-compile pytest==9.0.3 numpy==2.4.6 \
    langchain-core==1.8.1 langchain-tests==1.1.9 llama-index-core==0.14.25
  touch "$out/venv/unused"
}

build() {
  [ -x "$tools/bin/maturin" ] || prepare
  rm -rf "$out/wheels"
  "$tools/bin/maturin" build --release --strip --quiet --manifest-path python/Cargo.toml --out "$out/wheels"
}

test_wheel() {
  [ -f "$out/venv/unused" ] || prepare
  rm "$out/venv/unused"
  "$out/venv/bin/pip" install --quiet --disable-pip-version-check "$out"/wheels/folio_store-*.whl
  cd python/tests && "../../$out/venv/bin/python" -m pytest -q -p no:cacheprovider .
}

case "${1:-}" in
  --prepare) prepare ;;
  --build) build ;;
  --test) test_wheel ;;
  *) build && test_wheel ;;
esac
