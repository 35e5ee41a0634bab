#!/usr/bin/env bash
# rounds.sh — pipelined stdio round trips, peers alternating: the floor,
# then bench-echo with the default answer, with the serverInfo _meta left
# out (--no-server-info), and the ceilings of both answers (--ceiling: the
# answer's bytes, no server work). Each figure is printed over the floor
# measured just before it in the same round, as run-all.sh pins them: every
# process on one vCPU.
#
# Usage: BENCH_BIN=DIR bench/server/rounds.sh [ROUNDS]
#   BENCH_BIN  folder with the shared bench's built floor and stdio-rtt
#   SB         bench-echo to measure (default target/dist/bench-echo)
#   N          round trips per figure (default 100000)   CPU  vCPU (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BENCH_BIN:?set BENCH_BIN to the folder with the shared bench floor and stdio-rtt binaries}"
SB=${SB:-target/dist/bench-echo}; N=${N:-100000}; CPU=${CPU:-1}; ROUNDS=${1:-7}
rps() {
  taskset -c "$CPU" "$BENCH_BIN/stdio-rtt" --json --quiet-stderr --mode pipe --window 64 --n "$N" -- "$@" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["rps"])'
}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); $N round trips, 64 in flight, vCPU $CPU"
for round in $(seq 1 "$ROUNDS"); do
  floor=$(rps "$BENCH_BIN/floor" stdio)
  line="round $round floor=${floor%.*}/s"
  for peer in "default:--stdio" "lean:--stdio --no-server-info" \
    "ceiling:--stdio --ceiling" "ceiling-lean:--stdio --ceiling --no-server-info"; do
    name=${peer%%:*}
    read -r -a flags <<<"${peer#*:}"
    x=$(rps "$SB" "${flags[@]}")
    ratio=$(awk -v x="$x" -v floor="$floor" 'BEGIN { printf "%.3f", x / floor }')
    line="$line $name=$ratio"
  done
  echo "$line"
done
