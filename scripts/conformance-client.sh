#!/usr/bin/env bash
# The official MCP conformance suite against our client (conformance-client:
# switchboard-client's Client over Streamable HTTP, with its OAuthProvider as
# the authorization hook in the auth/* scenarios). No expected failures:
#   1. the 2026-07-28 client set (32 scenarios, 25 of them auth/*);
#   2. the whole 2025-11-25 client set on the legacy wire (18, 14 auth/*);
#   3. the OAuth extensions (not scored): client credentials
#      (auth/client-credentials-basic, -jwt), enterprise-managed authorization
#      (auth/enterprise-managed-authorization), workload identity
#      (auth/wif-jwt-bearer) and DPoP (auth/dpop, auth/dpop-nonce);
#   4. json-schema-2020-12-preservation (not scored) at both revisions;
#   5. the skills extension (not scored; strict: a skipped check fails):
#      sep-2640-client-no-prefetch (list, read nothing), -verify-digest,
#      -verify-size and -verify-frontmatter (the tampered SKILL.md is
#      refused and no file of the skill is read).
# Exits non-zero when any scenario of any stage fails.
# Usage: ./scripts/conformance-client.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bin=$(scripts/workspace-bin.sh conformance-client)

status=0
start=$SECONDS
stage() { # NAME, then the environment and the client.sh arguments
  local name=$1 began=$SECONDS; shift
  echo "== client conformance, $name"
  env "$@" || status=1
  echo "== $name: $((SECONDS - began)) s"
}

stage "2026-07-28" conformance/client.sh "$bin"
stage "2025-11-25 (legacy wire)" MCP_CONFORMANCE_REVISION=2025-11-25 conformance/client.sh "$bin"
stage "OAuth extensions (not scored)" \
  MCP_CONFORMANCE_SCENARIOS="auth/client-credentials-basic auth/client-credentials-jwt auth/enterprise-managed-authorization auth/wif-jwt-bearer auth/dpop auth/dpop-nonce" \
  conformance/client.sh "$bin"

stage "json-schema-2020-12-preservation (not scored)" \
  MCP_CONFORMANCE_SCENARIOS=json-schema-2020-12-preservation conformance/client.sh "$bin"
stage "json-schema-2020-12-preservation, 2025-11-25 (not scored)" MCP_CONFORMANCE_REVISION=2025-11-25 \
  MCP_CONFORMANCE_SCENARIOS=json-schema-2020-12-preservation conformance/client.sh "$bin"
stage "skills extension (not scored; strict)" MCP_CONFORMANCE_STRICT=1 \
  MCP_CONFORMANCE_SCENARIOS="sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size sep-2640-client-verify-frontmatter" \
  conformance/client.sh "$bin"
echo "== all stages: $((SECONDS - start)) s, $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
