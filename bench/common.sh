# common.sh — sourced by the gateway bench scripts (gateway.sh,
# obs-share.sh): building what they measure, a scratch directory with
# the processes they start (both cleaned up at exit), and waiting for a
# server to answer.

# The target directory cargo builds into.
target_dir() {
  cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

# Sets BIN to a switchboard binary built with PROFILE, unless BIN is set.
build_switchboard() {
  if [[ -z ${BIN:-} ]]; then
    cargo build --locked --quiet --profile "$PROFILE" -p switchboard --bin switchboard
    BIN=$(target_dir)/$PROFILE/switchboard
  fi
  [[ -x $BIN ]] || { echo "no switchboard binary at $BIN" >&2; exit 2; }
}

# A scratch directory ($work) and the started processes ($pids), removed
# and stopped at exit.
start_scratch() { # NAME
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  pids=()
  trap stop_scratch EXIT
}
stop_scratch() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}

# Waits until URL answers a POST with any HTTP status.
wait_up() {
  for _ in $(seq 100); do
    curl -s -o /dev/null -X POST "$1" -d '{}' && return 0
    sleep 0.1
  done
  echo "nothing answers at $1" >&2
  exit 2
}
