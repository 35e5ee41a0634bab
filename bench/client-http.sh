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
#   QUIET_WAIT   seconds to wait for the machine to go quiet before a figure
#                (default 20)
# Prints one line per figure, with the CPU other processes used meanwhile
# (in % of one CPU), and the medians with ratios, taken over the rounds
# where that stayed under 15 % for both figures (all rounds, marked *, when
# none did); exits 1 when a median ratio is below the 0.5 target and
# STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${BENCH_DIR:-../shared/bench}" && pwd)
CPU=${CPU:-1}; SECS=${SECS:-5}; REPS=${REPS:-3}; PORT=${PORT:-18390}
QUIET_WAIT=${QUIET_WAIT:-20}
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
# Contention: CPU time the machine spent on anything but this benchmark
# (the floor, wrk or our client) while a figure was taken, in % of one CPU.
# Other sessions may share the machine; their work skews a figure.
busy_jiffies() { awk '/^cpu / {print $2+$3+$4+$7+$8}' /proc/stat; }
floor_jiffies() { awk '{print $14+$15}' "/proc/$floor_pid/stat"; }
child_centis() { # user+sys of this shell's finished children, in 1/100 s
  times | tail -n 1 | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 6000 + a[2] * 100 } } END { printf "%d", t }'
}
busy_now() { local b; b=$(busy_jiffies); sleep 0.5; echo $(( ($(busy_jiffies) - b) * 100 / 50 )); }
wait_quiet() { # until the whole machine is < 10 % busy, or QUIET_WAIT s
  local end=$((SECONDS + QUIET_WAIT))
  while (( SECONDS < end )); do
    (( $(busy_now) < 10 )) && return 0
  done
  return 0
}
# Runs a command and measures the others' CPU use; sets OUT and OTHER.
measured() {
  wait_quiet
  local b0 f0 c0 t0 b1 f1 c1 t1
  b0=$(busy_jiffies); f0=$(floor_jiffies); c0=$(child_centis); t0=$(date +%s%N)
  OUT=$("$@")
  b1=$(busy_jiffies); f1=$(floor_jiffies); c1=$(child_centis); t1=$(date +%s%N)
  local wall=$(( (t1 - t0) / 10000000 ))
  OTHER=$(( ((b1 - b0) - (f1 - f0) - (c1 - c0)) * 100 / (wall > 0 ? wall : 1) ))
  (( OTHER < 0 )) && OTHER=0
  return 0
}
declare -A W O C
echo "pinned to CPU $CPU; $SECS s per figure, $REPS rounds; wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
# Warm-up, discarded.
RAW=1 LOADGEN_CPUS=$CPU SKIP_CHECK=1 "$BENCH_DIR/http-load.sh" "$URL" 64 2 >/dev/null
for r in $(seq "$REPS"); do
  for c in 1 64; do
    measured env RAW=1 LOADGEN_CPUS="$CPU" "$BENCH_DIR/http-load.sh" "$URL" "$c" "$SECS"
    w=$OUT; wb=$OTHER
    measured taskset -c "$CPU" "$ours" "$URL" --concurrency "$c" --seconds "$SECS" --warmup 1
    o=$OUT; ob=$OTHER
    W[$r,$c]=$(field rps "$w"); O[$r,$c]=$(field rps "$o")
    C[$r,$c]=$(( wb >= 15 || ob >= 15 ))
    [[ $(field errors "$o") == 0 ]] || { echo "our client saw errors: $o" >&2; exit 1; }
    note=""; (( C[$r,$c] )) && note=" (contended)"
    printf 'round %s c%-2s  wrk %9.1f req/s (p50 %s us)   client %9.1f req/s (p50 %s us)   ratio %.2f   other load %s%%/%s%%%s\n' \
      "$r" "$c" "${W[$r,$c]}" "$(field p50_us "$w")" "${O[$r,$c]}" "$(field p50_us "$o")" \
      "$(echo "${O[$r,$c]} / ${W[$r,$c]}" | bc -l)" "$wb" "$ob" "$note"
  done
done
status=0
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for c in 1 64; do
  clean=0
  for r in $(seq "$REPS"); do (( C[$r,$c] )) || clean=$((clean + 1)); done
  ws=(); os=(); rs=(); mark=""
  (( clean == 0 )) && mark="*"
  for r in $(seq "$REPS"); do
    (( clean > 0 && C[$r,$c] )) && continue
    ws+=("${W[$r,$c]}"); os+=("${O[$r,$c]}"); rs+=("$(echo "${O[$r,$c]} / ${W[$r,$c]}" | bc -l)")
  done
  ratio=$(med "${rs[@]}")
  printf 'median c%-2s  wrk %9.1f req/s   client %9.1f req/s   ratio %.2f%s (target >= 0.50; %s of %s rounds clean)\n' \
    "$c" "$(med "${ws[@]}")" "$(med "${os[@]}")" "$ratio" "$mark" "$clean" "$REPS"
  (( $(echo "$ratio < 0.5" | bc -l) )) && status=1
done
[[ ${STRICT:-0} == 1 ]] && exit $status
exit 0
