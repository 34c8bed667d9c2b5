#!/usr/bin/env python3
"""Fails when the Python wheel's build would compile a crate the test build already compiled,
with other features.

Cargo resolves features per invocation. `scripts/ci/test.sh` compiles the tests with
`cargo test --release --workspace` (dev-dependencies and the Milvus crate included), then
maturin builds `python/` alone; a crate both use but with other features is compiled twice,
and with it every crate above it (the library and candle: minutes on two cores).
`tools/workspace-hack` asks both builds for the union; this names what to add there when
they drift apart. It compares cargo's unit graphs (what each build would compile, with
features and profile; `--unit-graph` is unstable, hence RUSTC_BOOTSTRAP for this one read).
"""
import json
import os
import subprocess
import sys

# Workspace crates the wheel builds with other features on purpose.
EXPECTED = {
    # The wheel has no charts (plotters, fonts); only this crate recompiles (seconds).
    "folio-eval",
}


def units(args):
    """(package, target, kind) -> the (features, profile) of each unit the build compiles."""
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(
        ["cargo"] + args + ["--unit-graph", "-Z", "unstable-options"],
        capture_output=True, text=True, check=True, env=env,
    ).stdout
    found = {}
    for unit in json.loads(out)["units"]:
        if unit["mode"] not in ("build", "run-custom-build"):
            continue
        package = unit["pkg_id"].split("#")[-1]
        key = (package, unit["target"]["name"], unit["target"]["kind"][0], unit["mode"])
        profile = json.dumps(unit["profile"], sort_keys=True)
        found.setdefault(key, set()).add((tuple(unit["features"]), profile))
    return found


def main():
    wheel = units(["build", "--release", "-p", "folio-python", "--lib"])
    tests = units(["test", "--release", "--workspace", "--exclude", "folio-python", "--no-run"])
    drift = [
        (key[0], sorted(f for f, _ in wheel[key] - tests[key]), sorted(f for f, _ in tests[key]))
        for key in sorted(wheel)
        if key in tests
        and not wheel[key] <= tests[key]
        and key[0].split("@")[0] not in EXPECTED
    ]
    for package, wheel_only, tests_has in drift:
        print(f"{package}: the wheel's build has {wheel_only} (features, or the profile), "
              f"the test build {tests_has}", file=sys.stderr)
    if drift:
        print("add these features to tools/workspace-hack/Cargo.toml", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
