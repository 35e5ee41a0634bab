#!/usr/bin/env bash
# The fuzz campaign: runs each target (default: all, one after another, one
# job each) until RUNS executions or SECONDS seconds, whichever comes first,
# starting from its seeds in corpus/TARGET, and prints one table row per
# target for README.md. Needs nightly and cargo-fuzz (`cargo install
# cargo-fuzz`); libFuzzer without sanitizers (the crates forbid unsafe code).
#
#   fuzz/campaign.sh [RUNS] [SECONDS] [TARGET...]
#   fuzz/campaign.sh 10000000 3600            # the campaign in README.md
#
# FUZZ_PREBUILT=1 skips the build (runs the binaries already built).
# New inputs go to a scratch folder ($FUZZ_WORK, default a temporary one),
# never into corpus/; crashes land in artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-10000000}
seconds=${2:-3600}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^switchboard-fuzz$')
fi
work=${FUZZ_WORK:-$(mktemp -d)}
# Build once; the runs then use the binaries directly, so editing the
# sources while a campaign runs never rebuilds under it.
[ -n "${FUZZ_PREBUILT:-}" ] || cargo +nightly fuzz build --sanitizer none >&2
bins=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../crates . || echo ' + local changes')" >&2
echo "| target | executions | duration (s) | edges (cov) | features (ft) | slowest input (s) | crashes |"
echo "|---|---:|---:|---:|---:|---:|---|"
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  log="$work/$t.log"
  status=0
  mkdir -p "artifacts/$t"
  "$bins/$t" -runs="$runs" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" "$work/$t" "corpus/$t" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  slowest=$(sed -n 's/^stat::slowest_unit_time_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  crash=none
  if [ "$status" -ne 0 ]; then
    crash="exit $status: $(grep -m1 -E 'panicked|ERROR: libFuzzer' "$log" | cut -c1-120)"
  fi
  # libFuzzer keeps inputs slower than -report_slow_units (10 s) as
  # slow-unit-* files: each is a finding, like a crash.
  slow=$(find "artifacts/$t" -name 'slow-unit-*' | wc -l)
  (( slow == 0 )) || crash="$crash; $slow slow inputs in artifacts/$t"
  echo "| \`$t\` | ${execs:-?} | ${secs:-?} | ${cov:-?} | ${ft:-?} | ${slowest:-?} | $crash |"
done
echo "(logs and new inputs: $work)" >&2
