#!/usr/bin/env bash
# The whole test suite: unit and integration tests, doc tests, and the
# official MCP conformance suite against our server and client (needs npm;
# the suite is installed into the user cache on first use).
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
echo "== selftest (the built binary, real processes and sockets)"
selftest_out=$(cargo run --locked --quiet -p switchboard -- selftest) || {
  echo "$selftest_out"
  exit 1
}
echo "$selftest_out"
grep -qx "14 passed, 0 failed" <<<"$selftest_out"
echo "== official MCP conformance suite: our server"
./scripts/conformance-server.sh
echo "== official MCP conformance suite: our client"
./scripts/conformance-client.sh
