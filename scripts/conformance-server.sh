#!/usr/bin/env bash
# The official MCP conformance suite against our server framework: builds
# `conformance-server`, starts it on a free loopback port, runs the
# 2026-07-28 set (37 scenarios), the three pending core scenarios that are
# not scored yet, the ten tasks-extension scenarios (not scored either),
# and the 2025-11-25 set (30 scenarios, legacy clients on the same
# endpoint), then stops it.
# Usage: ./scripts/conformance-server.sh
# Exit status: 0 when every scenario passed, 1 otherwise (2 on a setup error).
# Needs npm (the runner installs the pinned suite on first use; see
# conformance/).
set -euo pipefail
# shellcheck source=listening.sh
. "$(dirname "$0")/listening.sh"
cd "$(dirname "$0")/.."

cargo build --locked --quiet -p switchboard-conformance-server --bin conformance-server
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/debug/conformance-server"

log=$(mktemp "${TMPDIR:-/tmp}/conformance-server.XXXXXX")
"$bin" --listen 127.0.0.1:0 2>"$log" &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT

# The server prints its address once it listens.
url=$(listening_url "$log" "$pid" "conformance-server")
echo "conformance-server at $url"

status=0
echo "== 2026-07-28 (required set)"
conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (pending core scenarios, not scored yet)"
MCP_CONFORMANCE_SCENARIOS="json-schema-2020-12 http-header-validation http-custom-header-server-validation" \
  conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (tasks extension, io.modelcontextprotocol/tasks, not scored)"
MCP_CONFORMANCE_SCENARIOS="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error tasks-mrtr-composition" \
  conformance/server.sh "$url" || status=1
echo "== 2025-11-25 (legacy clients)"
MCP_CONFORMANCE_REVISION=2025-11-25 conformance/server.sh "$url" || status=1
exit $status
