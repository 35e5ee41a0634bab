#!/usr/bin/env bash
# What the stdio sandbox adds to a server's start: spawn to first answer of
# the testkit's hostile-server (tiny, single-threaded), under no sandbox,
# the baseline (no_new_privs + seccomp), file-system confinement, the
# limits, and strict (file system + network namespace). Runs are
# interleaved mode by mode; the load average is printed before and after,
# since start-up time is wall time.
#
# Usage: bench/sandbox-start.sh [RUNS]   (default 300 per mode)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-300}"
cargo build -q -p switchboard-testkit --bin hostile-server
cargo build -q -p switchboard-client --example sandbox_start
target="${CARGO_TARGET_DIR:-target}/debug"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  cpus: $(nproc)  kernel: $(uname -r)"
"$target/examples/sandbox_start" --n "$runs" -- "$target/hostile-server" env
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
