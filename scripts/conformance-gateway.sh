#!/usr/bin/env bash
# The official MCP conformance suite (server role) against the gateway:
# builds `switchboard` and `conformance-server`, mounts the conformance
# server (over stdio, every tool allowed) in `switchboard serve --http` on a
# free loopback port, and runs the 2026-07-28 scenarios that are meaningful
# through a proxy against the gateway's URL.
#
# Run, with the checks that cannot pass through a proxy listed in
# conformance/gateway-expected-failures.yaml: server-stateless, tools-list,
# server-sse-multiple-streams, sep-2164-resource-not-found,
# dns-rebinding-protection, input-required-result-missing-input-response,
# input-required-result-unsupported-methods,
# input-required-result-ignore-extra-params,
# input-required-result-validate-input, resources-list, resources-read-text,
# resources-read-binary, resources-templates-read, prompts-list, and the
# pending http-header-validation and http-custom-header-server-validation;
# then, for
# legacy (2025-11-25, initialize-handshake) clients: server-initialize
# logging-set-level ping tools-list server-sse-multiple-streams
# dns-rebinding-protection.
#
# Excluded, and why:
# - The gateway names every tool mcp__ALIAS__TOOL (here mcp__conformance__…),
#   and these scenarios call a fixture by its fixed name (test_simple_text,
#   test_tool_with_progress, json_schema_2020_12_tool, …), which the gateway
#   does not serve: tools-call-simple-text tools-call-image tools-call-audio
#   tools-call-embedded-resource tools-call-mixed-content tools-call-error
#   tools-call-with-progress input-required-result-basic-elicitation
#   input-required-result-basic-sampling input-required-result-basic-list-roots
#   input-required-result-request-state
#   input-required-result-multiple-input-requests
#   input-required-result-multi-round input-required-result-result-type
#   input-required-result-tampered-state
#   input-required-result-capability-check json-schema-2020-12, the ten
#   tasks-extension scenarios, and in the 2025-11-25 set the tools-call-*
#   and elicitation-* scenarios.
# - Prompts, resources and completions pass through the gateway: the
#   resources keep their URIs (no collision with one server), so
#   resources-list resources-read-text resources-read-binary
#   resources-templates-read and prompts-list run. Excluded: the scenarios
#   that name a prompt or a completion reference by its fixed name (the
#   gateway serves prompts as mcp__ALIAS__PROMPT): prompts-get-simple
#   prompts-get-with-args prompts-get-embedded-resource
#   prompts-get-with-image completion-complete
#   input-required-result-non-tool-request caching, and the 2025-11-25
#   resources-* and prompts-* scenarios (not run on the legacy era here).
#
# Usage: ./scripts/conformance-gateway.sh
#   ALL=1 runs the whole 2026-07-28 set instead (to see what the exclusions
#   do; failures are then expected).
# Exit status: 0 when every scenario run passed, 1 otherwise (2 on a setup
# error). Needs npm (the runner installs the pinned suite on first use).
set -euo pipefail
# shellcheck source=listening.sh
. "$(dirname "$0")/listening.sh"
cd "$(dirname "$0")/.."

# The scenarios meaningful through a proxy (see above for the others).
scenarios="server-stateless tools-list server-sse-multiple-streams
 sep-2164-resource-not-found dns-rebinding-protection
 input-required-result-missing-input-response
 input-required-result-unsupported-methods
 input-required-result-ignore-extra-params input-required-result-validate-input
 http-header-validation http-custom-header-server-validation
 resources-list resources-read-text resources-read-binary resources-templates-read
 prompts-list"
legacy="server-initialize logging-set-level ping tools-list server-sse-multiple-streams
 dns-rebinding-protection"

cargo build --locked --quiet -p switchboard --bin switchboard \
  -p switchboard-conformance-server --bin conformance-server
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
switchboard="$target_dir/debug/switchboard"
fixtures="$target_dir/debug/conformance-server"

work=$(mktemp -d "${TMPDIR:-/tmp}/conformance-gateway.XXXXXX")
cat >"$work/config.json" <<EOF
{
  "mcpServers": {
    "conformance": {
      "command": "$fixtures",
      "args": ["--stdio"],
      "permissions": {"allow": ["*"]}
    }
  }
}
EOF
SWITCHBOARD_STATE_DIR="$work/state" XDG_CONFIG_HOME="$work/xdg" \
  "$switchboard" --config "$work/config.json" serve --http 127.0.0.1:0 2>"$work/gateway.log" &
pid=$!
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

# The gateway prints its address once it listens.
url=$(listening_url "$work/gateway.log" "$pid" "the gateway")
echo "gateway at $url, mounting conformance-server"

if [[ ${ALL:-0} == 1 ]]; then
  status=0
  conformance/server.sh "$url" || status=1
  MCP_CONFORMANCE_REVISION=2025-11-25 conformance/server.sh "$url" || status=1
  exit $status
fi
status=0
echo "== 2026-07-28 (the scenarios meaningful through a proxy)"
MCP_CONFORMANCE_SCENARIOS=$(tr '\n' ' ' <<<"$scenarios") \
  conformance/server.sh "$url" conformance/gateway-expected-failures.yaml || status=1
echo "== 2025-11-25 (legacy clients; the scenarios meaningful through a proxy)"
MCP_CONFORMANCE_REVISION=2025-11-25 MCP_CONFORMANCE_SCENARIOS=$(tr '\n' ' ' <<<"$legacy") \
  conformance/server.sh "$url" || status=1
exit $status
