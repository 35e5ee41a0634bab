#!/usr/bin/env bash
# client-http.sh — our Client over Streamable HTTP against the bench suite's
# `floor http` server, next to wrk with mcp-call.lua against the same server
# in the same run: tools/call, 1 and 64 in flight. Server, wrk and our
# client all run pinned to one CPU (see the bench suite's README: the
# figures are "total CPU cost of one exchange on one vCPU").
#
# Usage: bench/client-http.sh
# Env:
#   BENCH_DIR    the bench suite (default ../shared/bench, relative to the repo)
#   FLOOR        a built floor binary (default: built from BENCH_DIR/peers/floor
#                into FLOOR_TARGET_DIR, default ${TMPDIR:-/tmp}/switchboard-bench-target)
#   CPU          the CPU everything is pinned to (default 1)
#   SECS         seconds per figure (default 5)     REPS  rounds (default 3)
#   PORT         the floor's port (default 18390)
# Prints one line per figure and the medians with ratios; exits 1 when a
# median ratio is below the 0.5 target and STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${BENCH_DIR:-../shared/bench}" && pwd)
CPU=${CPU:-1}; SECS=${SECS:-5}; REPS=${REPS:-3}; PORT=${PORT:-18390}
URL=http://127.0.0.1:$PORT/mcp

command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
if [[ -z ${FLOOR:-} ]]; then
  export CARGO_TARGET_DIR=${FLOOR_TARGET_DIR:-${TMPDIR:-/tmp}/switchboard-bench-target}
  (cd "$BENCH_DIR/peers/floor" && cargo build --release --locked -q)
  FLOOR=$CARGO_TARGET_DIR/release/floor
  unset CARGO_TARGET_DIR
fi
ours=$(cargo bench -p switchboard-client --bench http_calls --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*http_calls[^"]*\)".*/\1/p' | tail -n 1)
[[ -x $ours ]] || { echo "could not build the http_calls bench" >&2; exit 2; }

taskset -c "$CPU" "$FLOOR" http "127.0.0.1:$PORT" 2>/dev/null &
floor_pid=$!
trap 'kill $floor_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -s -o /dev/null -X POST "$URL" -d '{}' && break
  sleep 0.1
done

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<" $2"; }
declare -A W O
echo "pinned to CPU $CPU; $SECS s per figure, $REPS rounds; wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
# Warm-up, discarded.
RAW=1 LOADGEN_CPUS=$CPU SKIP_CHECK=1 "$BENCH_DIR/http-load.sh" "$URL" 64 2 >/dev/null
for r in $(seq "$REPS"); do
  for c in 1 64; do
    w=$(RAW=1 LOADGEN_CPUS=$CPU "$BENCH_DIR/http-load.sh" "$URL" "$c" "$SECS")
    o=$(taskset -c "$CPU" "$ours" "$URL" --concurrency "$c" --seconds "$SECS" --warmup 1)
    W[$r,$c]=$(field rps "$w"); O[$r,$c]=$(field rps "$o")
    [[ $(field errors "$o") == 0 ]] || { echo "our client saw errors: $o" >&2; exit 1; }
    printf 'round %s c%-2s  wrk %9.1f req/s (p50 %s us)   client %9.1f req/s (p50 %s us)   ratio %.2f\n' \
      "$r" "$c" "${W[$r,$c]}" "$(field p50_us "$w")" "${O[$r,$c]}" "$(field p50_us "$o")" \
      "$(echo "${O[$r,$c]} / ${W[$r,$c]}" | bc -l)"
  done
done
status=0
for c in 1 64; do
  ws=(); os=(); rs=()
  for r in $(seq "$REPS"); do
    ws+=("${W[$r,$c]}"); os+=("${O[$r,$c]}"); rs+=("$(echo "${O[$r,$c]} / ${W[$r,$c]}" | bc -l)")
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  ratio=$(med "${rs[@]}")
  printf 'median c%-2s  wrk %9.1f req/s   client %9.1f req/s   ratio %.2f (target >= 0.50)\n' \
    "$c" "$(med "${ws[@]}")" "$(med "${os[@]}")" "$ratio"
  (( $(echo "$ratio < 0.5" | bc -l) )) && status=1
done
[[ ${STRICT:-0} == 1 ]] && exit $status
exit 0
