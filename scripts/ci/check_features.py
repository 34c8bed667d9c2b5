#!/usr/bin/env python3
"""Fails when the test build and the Python wheel's build resolve a shared crate with
different features.

Cargo resolves features per invocation. `scripts/ci/test.sh` compiles the tests with
`cargo test --workspace` (dev-dependencies and the Milvus crate included), then maturin builds
`python/` alone; a crate both use but with other features is compiled twice, and with it
every crate above it (the library and candle, minutes on two cores). `tools/workspace-hack`
asks both builds for the union; this names what to add there when they drift apart.
"""
import subprocess
import sys

# Workspace crates the wheel builds with other features on purpose.
EXPECTED = {
    # The wheel has no charts (plotters, fonts); only this crate recompiles (seconds).
    "folio-eval",
}


def resolved(args):
    """Package -> features enabled, as `cargo tree` resolves them for one invocation."""
    out = subprocess.run(
        ["cargo", "tree", "--prefix", "none", "--no-dedupe", "-f", "{p} {f}"] + args,
        capture_output=True, text=True, check=True,
    ).stdout
    features = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        names = [p for p in parts[2:] if not (p.startswith("(") or p.endswith(")"))]
        found = features.setdefault((parts[0], parts[1]), set())
        found.update(f for f in ",".join(names).split(",") if f)
    return features


def main():
    wheel = resolved(["-p", "folio-python", "-e", "normal,build"])
    tests = resolved(["--workspace", "--exclude", "folio-python", "-e", "normal,build,dev"])
    drift = [
        (name, version, sorted(wheel[key] - tests[key]), sorted(tests[key] - wheel[key]))
        for key in sorted(wheel)
        for name, version in [key]
        if key in tests and wheel[key] != tests[key] and name not in EXPECTED
    ]
    for name, version, wheel_only, tests_only in drift:
        print(f"{name} {version}: only the wheel's build has {wheel_only}, "
              f"only the test build has {tests_only}", file=sys.stderr)
    if drift:
        print("add these features to tools/workspace-hack/Cargo.toml", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
