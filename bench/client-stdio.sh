#!/usr/bin/env bash
# client-stdio.sh — our Client's stdio round trips next to the reference
# client (stdio-rtt), both driving the same `floor stdio` server, pinned to one
# CPU, in the same run.
#
# Usage: bench/client-stdio.sh BENCH_DIR        (or SWITCHBOARD_BENCH_DIR=...)
#   BENCH_DIR        the performance referee's folder (holds peers/floor and
#                    stdio-rtt; not part of this repository)
#   N=20000          timed requests per figure (after 200 warm-up requests)
#   REPS=5           rounds; each round measures all four figures, interleaved
#   CPU=1            the CPU both processes are pinned to (taskset)
#   BENCH_TARGET_DIR where the referee's binaries are built
#                    (default: $HOME/.cache/switchboard-bench-target)
#
# Prints one line per figure and a summary: medians over rounds and the
# median of the per-round ratios ours ÷ stdio-rtt (targets: ≥ 0.5).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="${1:-${SWITCHBOARD_BENCH_DIR:-}}"
if [[ -z "$BENCH_DIR" || ! -d "$BENCH_DIR/peers/floor" || ! -d "$BENCH_DIR/stdio-rtt" ]]; then
  echo "usage: $0 BENCH_DIR (a folder with peers/floor and stdio-rtt)" >&2
  exit 2
fi
N="${N:-20000}"
REPS="${REPS:-5}"
CPU="${CPU:-1}"
TARGET="${BENCH_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-bench-target}"
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }

echo "== building the referee's floor and stdio-rtt into $TARGET"
for d in peers/floor stdio-rtt; do
  (cd "$BENCH_DIR/$d" && CARGO_TARGET_DIR="$TARGET" cargo build --release --locked --quiet)
done
FLOOR="$TARGET/release/floor"
RTT="$TARGET/release/stdio-rtt"

echo "== building our bench (cargo bench -p switchboard-client --bench stdio)"
OURS="$(cd "$HERE" && cargo bench -p switchboard-client --bench stdio --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "stdio" and m.get("executable"):
        print(m["executable"])')"
[[ -x "$OURS" ]] || { echo "could not find the bench executable" >&2; exit 1; }

RESULTS="$(mktemp)"
trap 'rm -f "$RESULTS"' EXIT
for round in $(seq 1 "$REPS"); do
  for mode in seq pipe; do
    rtt=$(taskset -c "$CPU" "$RTT" --n "$N" --mode "$mode" --window 64 --json --quiet-stderr -- "$FLOOR" stdio)
    ours=$(taskset -c "$CPU" "$OURS" --n "$N" --mode "$mode" --window 64 --json -- "$FLOOR" stdio)
    echo "round $round $mode stdio-rtt $rtt"
    echo "round $round $mode ours      $ours"
    echo "$round $mode $rtt $ours" >>"$RESULTS"
  done
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    rnd, mode, rest = line.split(" ", 2)
    dec = json.JSONDecoder()
    rtt, end = dec.raw_decode(rest)
    ours, _ = dec.raw_decode(rest[end:].lstrip())
    rows.setdefault(mode, []).append((rtt, ours))
print()
print("| mode | stdio-rtt rt/s | ours rt/s | ours ÷ stdio-rtt | ours p50 µs | ours p99 µs |")
print("|---|---:|---:|---:|---:|---:|")
for mode in ("seq", "pipe"):
    r = rows.get(mode, [])
    if not r:
        continue
    med = lambda xs: statistics.median(xs)
    ratio = med([o["rps"] / t["rps"] for t, o in r])
    label = "sequential" if mode == "seq" else "64 in flight"
    print(f"| {label} | {med([t['rps'] for t, _ in r]):,.0f} | {med([o['rps'] for _, o in r]):,.0f} "
          f"| {ratio:.2f} | {med([o['p50_us'] for _, o in r]):.1f} | {med([o['p99_us'] for _, o in r]):.1f} |")
print(f"\nmedians over {len(rows.get('seq', []))} rounds; ratio = median of per-round ratios")
PY
