#!/usr/bin/env bash
# The official MCP conformance suite against our server framework: builds
# `conformance-server`, starts it on a free loopback port, runs the
# 2026-07-28 set (37 scenarios), the three pending core scenarios that are
# not scored yet, the ten tasks-extension scenarios (not scored either), the
# three skills-extension scenarios (not scored; run strict: a skipped or
# warned check fails, so they cannot pass by skipping) against the
# compiled-in skills and again against a second server reading them from
# crates/conformance-server/skills, the 2025-11-25 set (30 scenarios, legacy
# clients on the same endpoint), and the 2025-11-25 scenarios not scored
# (server-session-lifecycle, json-schema-2020-12, and server-sse-polling,
# which finds nothing to check: the server answers a tool call with JSON,
# not an SSE stream to resume), then stops them.
# Usage: ./scripts/conformance-server.sh
# Exit status: 0 when every scenario passed, 1 otherwise (2 on a setup error).
# Needs npm (the runner installs the pinned suite on first use; see
# conformance/).
set -euo pipefail
# shellcheck source=listening.sh
. "$(dirname "$0")/listening.sh"
cd "$(dirname "$0")/.."

bin=$(scripts/workspace-bin.sh conformance-server)

log=$(mktemp "${TMPDIR:-/tmp}/conformance-server.XXXXXX")
disk_log=$(mktemp "${TMPDIR:-/tmp}/conformance-server-disk.XXXXXX")
"$bin" --listen 127.0.0.1:0 2>"$log" &
pid=$!
disk_pid=""
stop() {
  for p in $pid $disk_pid; do kill "$p" 2>/dev/null || true; done
  for p in $pid $disk_pid; do wait "$p" 2>/dev/null || true; done
  rm -f "$log" "$disk_log"
}
trap stop EXIT

# The server prints its address once it listens.
url=$(listening_url "$log" "$pid" "conformance-server")
echo "conformance-server at $url"
# The same fixtures, the skills read from disk (ServerBuilder::skills_dir).
"$bin" --listen 127.0.0.1:0 --skills-dir crates/conformance-server/skills 2>"$disk_log" &
disk_pid=$!
disk_url=$(listening_url "$disk_log" "$disk_pid" "conformance-server --skills-dir")
echo "conformance-server --skills-dir at $disk_url"
skills="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest"

status=0
echo "== 2026-07-28 (required set)"
conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (pending core scenarios, not scored yet)"
MCP_CONFORMANCE_SCENARIOS="json-schema-2020-12 http-header-validation http-custom-header-server-validation" \
  conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (tasks extension, io.modelcontextprotocol/tasks, not scored)"
MCP_CONFORMANCE_SCENARIOS="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error tasks-mrtr-composition" \
  conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (skills extension, io.modelcontextprotocol/skills, not scored; strict)"
MCP_CONFORMANCE_STRICT=1 MCP_CONFORMANCE_SCENARIOS=$skills conformance/server.sh "$url" || status=1
echo "== 2026-07-28 (skills extension, the skills read from a directory; strict)"
MCP_CONFORMANCE_STRICT=1 MCP_CONFORMANCE_SCENARIOS=$skills conformance/server.sh "$disk_url" || status=1
echo "== 2025-11-25 (legacy clients)"
MCP_CONFORMANCE_REVISION=2025-11-25 conformance/server.sh "$url" || status=1
echo "== 2025-11-25 (not scored: added after the anchor release, or pending)"
MCP_CONFORMANCE_REVISION=2025-11-25 \
  MCP_CONFORMANCE_SCENARIOS="server-session-lifecycle json-schema-2020-12 server-sse-polling" \
  conformance/server.sh "$url" || status=1
exit $status
