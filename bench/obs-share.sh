#!/usr/bin/env bash
# obs-share.sh — the share of the gateway's CPU that observability takes,
# by profile attribution rather than by comparing two gateways' CPU per
# call (which on a noisy machine varies more, round to round, than the
# 5 % it is meant to resolve; see gateway.sh's CONTROL=1).
#
# The tickets demo server and `switchboard serve --http` with --metrics
# and an OTLP endpoint (bench/otlp-sink.py) are pinned to one CPU, wrk
# (the bench suite's http-load.sh) to another; `perf record` samples the
# gateway with DWARF call graphs while wrk calls get_ticket through it.
# Each sample is put in one bucket: the trace SDK's export thread, span
# work on the runtime (building and ending spans, posting the exports),
# metrics, the telemetry glue, or the rest. perf slows the gateway, so
# the shares matter, not the request rate.
#
# Usage: bench/obs-share.sh
# Env:
#   BENCH_DIR     the bench suite (default ../shared/bench, relative to the repo)
#   BIN           a built switchboard binary (default: built with PROFILE)
#   PROFILE       cargo profile to build (default dist)
#   C             connections (default 64)    SECS  seconds sampled (default 5)
#   SERVER_CPU    CPU of both servers (default 0)   LOADGEN_CPUS  wrk's (default 1)
#   PORT          first of three ports used (default 18421)
#   SWITCHBOARD_OTEL_DOWNSTREAM_SPANS=1  the gateway's two-span mode (a
#                 client span per downstream call besides its server span)
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(cd "${BENCH_DIR:-../shared/bench}" && pwd)
C=${C:-64}; SECS=${SECS:-5}; PORT=${PORT:-18421}; PROFILE=${PROFILE:-dist}
SERVER_CPU=${SERVER_CPU:-0}; LOADGEN_CPUS=${LOADGEN_CPUS:-1}
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }
# shellcheck source=bench/common.sh
source bench/common.sh
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
build_switchboard
start_scratch obs-share

tickets_port=$PORT; gw_port=$((PORT + 1)); sink_port=$((PORT + 2))
taskset -c "$SERVER_CPU" "$BIN" demo-server tickets --port "$tickets_port" 2>"$work/tickets.log" &
pids+=("$!")
wait_up "http://127.0.0.1:$tickets_port/mcp"
taskset -c "$LOADGEN_CPUS" python3 bench/otlp-sink.py "$sink_port" 2>"$work/sink.log" &
pids+=("$!")
cat >"$work/config.json" <<EOF
{
  "audit": "audit.jsonl",
  "mcpServers": {
    "tickets": {"url": "http://127.0.0.1:$tickets_port/mcp", "permissions": {"allow": ["*"]}}
  }
}
EOF
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port" SWITCHBOARD_CONFIG="$work/config.json" \
  SWITCHBOARD_STATE_DIR="$work/state" taskset -c "$SERVER_CPU" "$BIN" serve --http "127.0.0.1:$gw_port" \
  --metrics 2>"$work/gw.log" &
gw_pid=$!; pids+=("$gw_pid")
wait_up "http://127.0.0.1:$gw_port/mcp"

load() { # SECONDS
  MCP_TOOL=mcp__tickets__get_ticket MCP_ARGS='{"id":"T-1"}' RAW=1 LOADGEN_CPUS=$LOADGEN_CPUS \
    "$BENCH_DIR/http-load.sh" "http://127.0.0.1:$gw_port/mcp" "$C" "$1"
}
load 2 >/dev/null # warm-up
perf record -q -F 2999 --call-graph dwarf,32768 -p "$gw_pid" -o "$work/perf.data" -- sleep "$SECS" \
  >/dev/null 2>&1 &
perf_pid=$!
load "$SECS" | sed 's/^/wrk under perf: /'
wait "$perf_pid" || true
perf script -i "$work/perf.data" 2>/dev/null | python3 -c '
import collections, sys

buckets = collections.Counter()
total = 0

def classify(head, frames):
    text = " ".join(frames)
    if head.startswith("OpenTelemetry"):
        return "trace export thread (SDK: conversion, protobuf)"
    if "switchboard_gateway::otel" in text or "opentelemetry" in text:
        return "spans on the runtime (build, end, post exports)"
    if "switchboard_gateway::metrics" in text or "prometheus_client" in text:
        return "metrics"
    if "switchboard_gateway::telemetry" in text:
        return "telemetry glue"
    return None

sample = []
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.strip():
        sample.append(line.strip())
        continue
    if sample:
        total += 1
        bucket = classify(sample[0], sample[1:])
        if bucket:
            buckets[bucket] += 1
        sample = []
if not total:
    sys.exit("perf recorded no samples")
for name, n in buckets.most_common():
    print(f"  {name:<50} {100 * n / total:5.2f} %")
label = "observability, all"
print(f"  {label:<50} {100 * sum(buckets.values()) / total:5.2f} %  (of {total} samples; target <= 5 %)")
'
