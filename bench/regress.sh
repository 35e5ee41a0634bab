#!/usr/bin/env bash
# regress.sh — the check a change touching a hot path runs before it lands:
# the server bench (bench/server/run.sh: HTTP c1/c64, stdio sequential and
# 64 in flight, peak RSS, each over the floor measured in the same round;
# stdio also with the serverInfo _meta off, and the ceiling of each answer),
# our client over the reference clients (bench/client-stdio.sh,
# bench/client-http.sh) and the gateway over the server it mounts
# (bench/gateway.sh), all short, and the instructions each costs (the
# stdio server's per round trip, bench/server/count.py; the gateway's per
# proxied call, bench/gateway-ir.sh: counts that do not move with the
# machine's load), compared with the figures recorded in
# bench/baseline.json by bench/regress.py. Exits 1 when a figure dropped by
# more than 15 % beyond the run's noise (regress.py says exactly how that
# is computed), and prints every figure with its rounds; put that output in
# the change's note.
#
# Not a test: it takes a few minutes, wants a quiet machine and builds the
# dist profile (what ships). Timing figures belong here, not in CI.
#
# Usage: bench/regress.sh [BENCH_DIR]      (default ../shared/bench, relative to the repo)
# Env:
#   PARTS        which benches (default "server client-stdio client-http gateway
#                counts"; counts needs valgrind)
#   REPS=3       rounds of each bench       SECS=3   seconds per HTTP figure
#   STDIO_N      stdio requests per figure (default 50000)
#   QUIET_WAIT   seconds each bench waits for the machine to go quiet before
#                a figure (default 20; run-all.sh's own default is 600)
#   BENCH_TARGET_DIR  where the bench's floor and stdio-rtt are built
#                (default ${TMPDIR:-/tmp}/switchboard-bench-target)
#   SB_BIN       a folder with a built bench-echo (skips building it)
#   BIN          a built switchboard binary for the gateway bench
#   BASELINE     the figures to compare with (default bench/baseline.json)
#   RECORD=1     write this run's figures to BASELINE instead of comparing
#                (NOTE="..." is recorded with them: the machine, what changed)
#   KEEP=DIR     keep the logs in DIR (default: a temp dir, removed at exit)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${1:-${BENCH_DIR:-../shared/bench}}" && pwd)
PARTS=${PARTS:-server client-stdio client-http gateway counts}
REPS=${REPS:-3}; SECS=${SECS:-3}; STDIO_N=${STDIO_N:-50000}; QUIET_WAIT=${QUIET_WAIT:-20}
BASELINE=${BASELINE:-bench/baseline.json}
TARGET=${BENCH_TARGET_DIR:-${TMPDIR:-/tmp}/switchboard-bench-target}
export REPS SECS QUIET_WAIT
if [[ -n ${KEEP:-} ]]; then
  logs=$KEEP; mkdir -p "$logs"
else
  logs=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-regress.XXXXXX")
  trap 'rm -rf "$logs"' EXIT
fi
want() { [[ " $PARTS " == *" $1 "* ]]; }
# shellcheck source=bench/common.sh
source bench/common.sh

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; REPS=$REPS SECS=$SECS STDIO_N=$STDIO_N"
echo "== building the bench's floor and stdio-rtt into $TARGET"
for d in peers/floor stdio-rtt; do
  (cd "$BENCH_DIR/$d" && CARGO_TARGET_DIR="$TARGET" cargo build --release --locked --quiet)
done

if want server; then
  echo "== server: bench/server/run.sh (floor, switchboard, the ceiling, and both with the serverInfo _meta off)"
  WORK_DIR="$logs/server" BENCH_BIN="$TARGET/release" PEERS="floor switchboard ceiling switchboard-lean ceiling-lean" STDIO_N="$STDIO_N" \
    bench/server/run.sh "$BENCH_DIR" | tee "$logs/server.log"
  raw=$(ls -d "$logs"/server/results/*/raw.tsv | tail -n 1)
  cp "$raw" "$logs/server.tsv"
fi
if want client-stdio; then
  echo "== client, stdio: bench/client-stdio.sh"
  BENCH_TARGET_DIR="$TARGET" N=20000 bench/client-stdio.sh "$BENCH_DIR" | tee "$logs/client-stdio.log"
fi
if want client-http; then
  echo "== client, HTTP: bench/client-http.sh"
  BENCH_DIR="$BENCH_DIR" FLOOR="$TARGET/release/floor" bench/client-http.sh | tee "$logs/client-http.log"
fi
if want gateway; then
  echo "== gateway: bench/gateway.sh"
  BENCH_DIR="$BENCH_DIR" bench/gateway.sh | tee "$logs/gateway.log"
fi

if want counts; then
  echo "== instructions: bench/server/count.py (stdio server per round trip), bench/gateway-ir.sh (gateway per call)"
  command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
  if [[ -n ${SB_BIN:-} ]]; then
    echo_bin=$SB_BIN/bench-echo
  else
    cargo build --profile dist --locked --quiet -p switchboard-conformance-server --bin bench-echo
    echo_bin=$(target_dir)/dist/bench-echo
  fi
  [[ -x $echo_bin ]] || { echo "regress.sh: no bench-echo at $echo_bin (SB_BIN names the folder holding it)" >&2; exit 2; }
  for round in $(seq "$REPS"); do
    for mode in seq pipe; do
      n=$(NO_PERF=1 RTT="$TARGET/release/stdio-rtt" python3 bench/server/count.py --json --mode "$mode" -- "$echo_bin" --stdio |
        python3 -c 'import json, sys; print(round(json.load(sys.stdin)["per_round_trip"]["instr"]["median"]))')
      echo "round $round stdio $mode $n instructions per round trip"
    done
  done | tee "$logs/counts.log"
  BENCH_DIR="$BENCH_DIR" RUNS="$REPS" bench/gateway-ir.sh | tee -a "$logs/counts.log"
fi

echo "== figures against $BASELINE"
if [[ ${RECORD:-0} == 1 ]]; then
  python3 bench/regress.py "$logs" "$BASELINE" --record --note "${NOTE:-}"
else
  python3 bench/regress.py "$logs" "$BASELINE"
fi
