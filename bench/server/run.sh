#!/usr/bin/env bash
# run.sh BENCH_DIR — reproduces the server performance table: switchboard's
# echo server (`bench-echo`) against the bench floor (and rmcp, when built),
# with the shared bench's run-all.sh.
#
#   bench/server/run.sh /path/to/bench            # full: REPS=3 SECS=10 STDIO_N=10000
#   PEERS="floor switchboard" REPS=1 SECS=5 bench/server/run.sh /path/to/bench
#   PEERS="floor switchboard ceiling switchboard-lean ceiling-lean" ...   # stdio answers with and without serverInfo
#
# BENCH_DIR is the shared bench folder (README.md, run-all.sh, peers/, stdio-rtt/).
# It is copied to a work directory (WORK_DIR, default a new temp dir), so the
# original stays untouched; its Rust peers are built there unless already built
# (set BENCH_BIN to reuse binaries; SB_BIN, a folder holding a built bench-echo, skips
# building ours). Results land in WORK_DIR/results/<stamp>/.
# Env passed through to run-all.sh: REPS SECS STDIO_N PEERS SERVER_CPUS LOADGEN_CPUS
# MONITOR_CPU QUIET_WAIT PORT. bench-echo is built into the caller's CARGO_TARGET_DIR
# (or the repository's target/). Needs cargo, wrk, taskset, python3 (and npm for the
# TypeScript peers, which this peers file leaves out).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bench="${1:?usage: run.sh BENCH_DIR}"
bench="$(cd "$bench" && pwd)"
work="${WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/switchboard-bench.XXXXXX")}"
mkdir -p "$work"
cp -r "$bench/." "$work/"
chmod -R u+w "$work"
# The caller's target directory, for building bench-echo below.
own_target="${CARGO_TARGET_DIR:-}"
export CARGO_TARGET_DIR="${BENCH_TARGET_DIR:-$work/target}"
if [[ -z "${BENCH_BIN:-}" ]]; then
  for d in stdio-rtt peers/floor; do
    (cd "$work/$d" && cargo build --release --locked --quiet)
  done
  if [[ " ${PEERS:-floor rmcp switchboard switchboard-mt} " == *" rmcp "* ]]; then
    (cd "$work/peers/rmcp-echo" && cargo build --release --locked --quiet)
  fi
  BENCH_BIN="$CARGO_TARGET_DIR/release"
fi
if [[ -n "$own_target" ]]; then export CARGO_TARGET_DIR="$own_target"; else unset CARGO_TARGET_DIR; fi
if [[ -n "${SB_BIN:-}" ]]; then
  sb_bin="$SB_BIN"
else
  (cd "$repo" && cargo build --profile dist --locked --quiet -p switchboard-conformance-server --bin bench-echo)
  sb_bin="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/dist"
fi
export SB_BIN="$sb_bin" BIN="$BENCH_BIN"
PEERS="${PEERS:-floor rmcp switchboard switchboard-mt}" PEERS_FILE="$here/peers.conf" "$work/run-all.sh"
