#!/usr/bin/env bash
# The soak: N concurrent tools/call (default 10,000) through one Host to the
# testkit's mock server over stdio (answering in random order after random
# delays) and the notes and tickets demos over HTTP; then the same with
# short timeouts, the breaker, and the stdio server killed with SIGKILL at
# random moments. Each run prints
#   SOAK <name>: N calls, 0 lost, 0 mismatched, peak RSS X MiB, fds before/after A/B, tasks before/after C/D, children after: 0
# and the script exits non-zero when either run loses, mismatches or leaks.
#
#   bench/soak.sh [N]        # CI runs it with 1000
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for test in soak::soak_steady soak::soak_with_kills; do
  # --workspace: the test suite's build (and features), so nothing is
  # built again; the other packages' `tests` targets have no such test.
  SWITCHBOARD_SOAK_CALLS=$n cargo test --workspace --locked --quiet --test tests -- \
    --ignored --exact "$test" --nocapture >"$out" 2>&1 || status=1
  grep '^SOAK' "$out" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$out"
    exit 1
  fi
done
