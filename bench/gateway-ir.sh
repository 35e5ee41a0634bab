#!/usr/bin/env bash
# gateway-ir.sh — the gateway's user-space instructions per proxied call,
# counted by callgrind: steadier than CPU time on a shared machine, so a
# change of 1 % shows. The gateway (no audit log) proxies `get_ticket` to
# the tickets demo; wrk (the bench suite's http-load.sh) warms it up, then
# callgrind counts only while LOAD_SECS more seconds of calls run.
#
#   bench/gateway-ir.sh                    # the dist build, one connection
#   BIN=/path/to/switchboard RUNS=3 bench/gateway-ir.sh
#
# Env:
#   BIN        the switchboard binary to measure (default: built with PROFILE)
#   PROFILE    cargo profile to build when BIN is not given (default dist)
#   BENCH_DIR  the bench suite (default ../shared/bench, relative to the repo)
#   CONC       connections (default 1)
#   LOAD_SECS  seconds counted (default 8); RUNS: how many counts (default 1)
#   PORT       tickets' port; the gateway takes PORT+1 (default 18491)
#   KEEP       a folder to keep each run's callgrind files in, for
#              callgrind_annotate (by default they go with the scratch dir)
#
# Prints one line per run: requests counted and instructions per call.
# Needs valgrind (callgrind_control) and wrk; installs them when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${BENCH_DIR:-../shared/bench}" && pwd)
PROFILE=${PROFILE:-dist}; CONC=${CONC:-1}; LOAD_SECS=${LOAD_SECS:-8}
RUNS=${RUNS:-1}; PORT=${PORT:-18491}

# shellcheck source=bench/common.sh
source bench/common.sh
for tool in wrk:wrk callgrind_control:valgrind; do
  command -v "${tool%%:*}" >/dev/null || { apt-get update -qq && apt-get install -y -qq "${tool##*:}"; }
done
build_switchboard
start_scratch gateway-ir

tickets_port=$PORT; gw_port=$((PORT + 1))
"$BIN" demo-server tickets --port "$tickets_port" 2>"$work/tickets.log" &
pids+=("$!")
wait_up "http://127.0.0.1:$tickets_port/mcp"
cat >"$work/config.json" <<JSON
{ "mcpServers": { "tickets": { "url": "http://127.0.0.1:$tickets_port/mcp", "permissions": {"allow": ["*"]} } } }
JSON

load() { # SECONDS LOG: wrk's RESULT line
  MCP_TOOL=mcp__tickets__get_ticket MCP_ARGS='{"id":"T-1"}' RAW=1 SKIP_CHECK=1 \
    "$BENCH_DIR/http-load.sh" "http://127.0.0.1:$gw_port/mcp" "$CONC" "$1" 2>&1 | grep RESULT || {
    echo "gateway-ir.sh: wrk got no answer from the gateway; its log:" >&2
    cat "$2" >&2
    exit 1
  }
}

for run in $(seq "$RUNS"); do
  out=$work/run$run; mkdir -p "$out"
  SWITCHBOARD_CONFIG="$work/config.json" SWITCHBOARD_STATE_DIR="$out" \
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.%p" \
    "$BIN" serve --http "127.0.0.1:$gw_port" 2>"$out/gateway.log" &
  gw=$!
  pids+=("$gw")
  wait_up "http://127.0.0.1:$gw_port/mcp"
  load 3 "$out/gateway.log" >/dev/null
  callgrind_control -i on "$gw" >/dev/null 2>&1
  result=$(load "$LOAD_SECS" "$out/gateway.log")
  callgrind_control -i off "$gw" >/dev/null 2>&1
  callgrind_control -d "$gw" >/dev/null 2>&1
  sleep 1
  kill -INT "$gw"; wait "$gw" 2>/dev/null || true
  requests=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$result")
  # Every dump's total (the one asked for and the one at exit).
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    for f in "$out"/cg.*; do cp "$f" "$KEEP/run$run.${f##*/}"; done
  fi
  total=$(for f in "$out"/cg.*; do
    callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
  done | awk '{s += $1} END {print s + 0}')
  python3 -c "import sys; n, ir = int(sys.argv[1]), int(sys.argv[2]); print(f'run {sys.argv[3]}: {n} calls at c{sys.argv[4]}, {round(ir / n)} instructions per call')" \
    "$requests" "$total" "$run" "$CONC"
done
