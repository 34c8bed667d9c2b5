# Sourced by the bench scripts that time their steps: `step NAME LOG CMD...` runs CMD with
# its output in LOG, stops the script when it fails, and adds its wall time to
# OUT/steps.md (a table this file starts).
echo "| step | seconds |" > "$OUT/steps.md"
echo "|---|---:|" >> "$OUT/steps.md"

step() {
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  echo "== $name $(date +%T)"
  "$@" > "$log" 2>&1 || { echo "failed: $* (see $log)"; exit 1; }
  echo "| $name | $((SECONDS - t0)) |" >> "$OUT/steps.md"
}
