#!/usr/bin/env bash
# The whole test suite: unit and integration tests, doc tests, the
# selftest, the demo eval set, and the official MCP conformance suite
# against our server, our client and the gateway (needs npm; the suite is installed into
# the user cache on first use).
# Usage: ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== unit and integration tests"
if command -v cargo-nextest >/dev/null; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
echo "== doc tests"
cargo test --workspace --locked --doc
# The binary the tests were built with (no second build; see workspace-bin.sh).
switchboard=$(scripts/workspace-bin.sh switchboard)
echo "== selftest (the built binary, real processes and sockets)"
selftest_out=$("$switchboard" selftest) || {
  echo "$selftest_out"
  exit 1
}
echo "$selftest_out"
grep -qx "14 passed, 0 failed" <<<"$selftest_out"
echo "== chat with the mock model on the demo (offline), as JSON events"
chat_out=$(cd "$(mktemp -d)" && MOCK=1 SWITCHBOARD_CONFIG= "$switchboard" chat -p "printers?" --json) || {
  echo "$chat_out"
  exit 1
}
for want in \
  '"type":"tool_call","id":"mock_0_0","name":"mcp__notes__list_notes"' \
  '"name":"mcp__tickets__search","is_error":false,"outcome":"ok"' \
  '"type":"approval","id":"mock_1_0","name":"mcp__notes__search"' \
  'over the budget of 8000' \
  '"name":"mcp__archive__search","is_error":true,"outcome":"transport"' \
  '"type":"usage"'; do
  grep -qF -- "$want" <<<"$chat_out" || {
    echo "$chat_out"
    echo "chat: missing $want"
    exit 1
  }
done
[ "$(tail -n 1 <<<"$chat_out")" = '{"type":"done","stop":"end_turn"}' ] || {
  echo "$chat_out"
  echo "chat: the last event is not done/end_turn"
  exit 1
}
echo "chat: ok ($(wc -l <<<"$chat_out") events)"
echo "== evals: the demo set with the offline keyword selector (a stand-in, not a model), and the cases' own check"
"$switchboard" eval evals/demo.json --model mock
"$switchboard" eval evals/demo.json --check-assertions
echo "== evals: the demo set through the scripted model, offered the demo servers' real tool definitions"
(cd "$(mktemp -d)" && SWITCHBOARD_CONFIG= "$switchboard" \
  eval "$OLDPWD/evals/demo.json" --model "script:$OLDPWD/evals/demo.script.jsonl" --concurrency 1)
echo "== official MCP conformance suite: our server"
./scripts/conformance-server.sh
echo "== official MCP conformance suite: our client"
./scripts/conformance-client.sh
echo "== official MCP conformance suite: through the gateway"
./scripts/conformance-gateway.sh
echo "== container files: the Dockerfile (hadolint) and the Kubernetes manifests (kubernetes-validate)"
./scripts/container-check.sh
