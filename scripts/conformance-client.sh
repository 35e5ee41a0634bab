#!/usr/bin/env bash
# The official MCP conformance suite against our client (conformance-client,
# built on switchboard-client's Client over Streamable HTTP):
#   1. the 2026-07-28 client set, with conformance/client-expected-failures.yaml
#      (only auth/* may fail, until OAuth lands);
#   2. the 2025-11-25 scenarios a dual-era client must pass on the legacy wire;
#   3. json-schema-2020-12-preservation (not scored) when the pinned suite has it.
# Exits non-zero when any of them fails. Usage: ./scripts/conformance-client.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bin=$(cargo build -p switchboard-conformance-client --locked --message-format=json-render-diagnostics |
  sed -n 's/.*"executable":"\([^"]*conformance-client\)".*/\1/p' | tail -n 1)
[[ -x $bin ]] || { echo "conformance-client was not built" >&2; exit 2; }

status=0
echo "== client conformance, 2026-07-28"
conformance/client.sh "$bin" conformance/client-expected-failures.yaml || status=1

echo "== client conformance, 2025-11-25 (legacy wire)"
MCP_CONFORMANCE_REVISION=2025-11-25 \
  MCP_CONFORMANCE_SCENARIOS="initialize tools_call elicitation-sep1034-client-defaults sse-retry" \
  conformance/client.sh "$bin" || status=1

extra=json-schema-2020-12-preservation
suite=${MCP_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-conformance}/suite-${MCP_CONFORMANCE_VERSION:-0.2.0-alpha.10}
if grep -qs -- "$extra" "$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"; then
  echo "== client conformance, $extra (not scored)"
  MCP_CONFORMANCE_SCENARIOS=$extra conformance/client.sh "$bin" || status=1
else
  echo "== $extra: not in suite ${MCP_CONFORMANCE_VERSION:-0.2.0-alpha.10}; skipped"
fi
exit $status
