#!/usr/bin/env bash
# The browser tests of `folio ui` (ui/tests/browser): Debian's chromium and chromedriver,
# and a virtual environment with the pinned packages of ui/tests/browser/requirements.txt
# (selenium, pytest), then pytest against the `folio` binary in FOLIO_BIN_DIR (default
# target/release).
#
# `--prepare` only installs (no compiling; `scripts/ci/test.sh` runs it while Rust
# compiles), `--test` only runs the tests; no argument does both. The browser is pinned to
# CHROMIUM_VERSION; Debian's security archive keeps only its newest build, so when that
# version is gone the newest one is installed and the version used is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/ui
CHROMIUM_VERSION=156.0.8078.114-1~deb12u1

install_browser() {
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    return
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  if ! $sudo apt-get install -y -qq --no-install-recommends \
    "chromium=$CHROMIUM_VERSION" "chromium-driver=$CHROMIUM_VERSION" >/dev/null; then
    echo "test_ui: chromium $CHROMIUM_VERSION is no longer in Debian's archive; installing the newest" >&2
    $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
  fi
}

prepare() {
  install_browser
  rm -rf "$out/venv"
  python3 -m venv "$out/venv"
  "$out/venv/bin/pip" install --quiet --disable-pip-version-check --no-compile \
    -r ui/tests/browser/requirements.txt
}

test_ui() {
  [ -x "$out/venv/bin/python" ] || prepare
  dpkg-query -W chromium chromium-driver
  export FOLIO_BIN_DIR=${FOLIO_BIN_DIR:-target/release}
  FOLIO_BIN_DIR=$(cd "$FOLIO_BIN_DIR" && pwd)
  (cd ui/tests/browser && "../../../$out/venv/bin/python" -m pytest -q -p no:cacheprovider .)
}

case "${1:-}" in
  --prepare) prepare ;;
  --test) test_ui ;;
  *) prepare && test_ui ;;
esac
