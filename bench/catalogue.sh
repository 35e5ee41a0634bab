#!/usr/bin/env bash
# catalogue.sh — a realistic tool table: real third-party MCP servers from
# the npm registry and PyPI, at pinned versions, installed into a cache
# directory outside the repository and mounted by one config file.
#
# Every server here lists its tools offline: the ones that want an API key
# get a placeholder (they only use it when a tool is called), the file and
# git servers get folders inside the cache. Nothing here calls a tool.
#
# Usage:
#   bench/catalogue.sh install     install the servers and write the config
#   bench/catalogue.sh config      print the config's path (after install)
#   bench/catalogue.sh tools       `switchboard tools --all --json` over it,
#                                  into $CACHE/tools.json (BIN, or a debug build)
#   bench/catalogue.sh snapshot    tools, then the servers' definitions as
#                                  bench/catalogue-tools.json (committed: the
#                                  search's recall is tested on it offline)
#   bench/catalogue.sh strict      every server under "sandbox": "strict"
#                                  with its allowlist (catalogue-strict.json):
#                                  all must come up, and a call each to the
#                                  servers that touch files works
# Env:
#   CATALOGUE_DIR   where everything goes (default
#                   ${XDG_CACHE_HOME:-~/.cache}/switchboard-catalogue)
#   BIN             a built switchboard binary (default: a debug build)
#
# The config is $CATALOGUE_DIR/catalogue.json; bench/catalogue-queries.json
# holds the query set measured over it (crates/host/benches/search.rs).
set -euo pipefail

CACHE=${CATALOGUE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-catalogue}
REPO=$(cd "$(dirname "$0")/.." && pwd)

# Pinned versions: the table they list is what the figures were measured on.
NPM_PACKAGES=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
  "@modelcontextprotocol/server-github@2025.4.8"
  "@modelcontextprotocol/server-gitlab@2025.4.25"
  "@modelcontextprotocol/server-slack@2025.4.25"
  "@modelcontextprotocol/server-google-maps@0.6.2"
  "@modelcontextprotocol/server-brave-search@0.6.2"
  "@playwright/mcp@0.0.83"
  "@notionhq/notion-mcp-server@2.5.2"
)
PYPI_PACKAGES=(
  "mcp-server-git==2026.10.19"
  "mcp-server-time==2026.10.19"
  "mcp-server-fetch==2026.10.24"
)

install() {
  mkdir -p "$CACHE/npm" "$CACHE/files" "$CACHE/data"
  # No install scripts: nothing downloads a browser or a binary of its own.
  (cd "$CACHE/npm" &&
    [[ -f package.json ]] || echo '{"name": "catalogue", "private": true}' >"$CACHE/npm/package.json")
  npm install --prefix "$CACHE/npm" --ignore-scripts --no-audit --no-fund --save-exact \
    "${NPM_PACKAGES[@]}"
  if [[ ! -x $CACHE/py/bin/python ]]; then
    python3 -m venv "$CACHE/py"
  fi
  "$CACHE/py/bin/pip" install --quiet "${PYPI_PACKAGES[@]}"
  # A git repository for the git server, a folder for the file server.
  if [[ ! -d $CACHE/repo/.git ]]; then
    mkdir -p "$CACHE/repo"
    git -C "$CACHE/repo" init --quiet
    echo "catalogue" >"$CACHE/repo/README.md"
    git -C "$CACHE/repo" add README.md
    git -C "$CACHE/repo" -c user.name=bench -c user.email=bench@localhost commit --quiet -m init
  fi
  write_config
  write_strict_config
  echo "config: $CACHE/catalogue.json (strict: $CACHE/catalogue-strict.json)"
}

write_config() {
  local bin=$CACHE/npm/node_modules/.bin py=$CACHE/py/bin
  cat >"$CACHE/catalogue.json" <<EOF
{
  "mcpServers": {
    "filesystem": {"command": "$bin/mcp-server-filesystem", "args": ["$CACHE/files"]},
    "memory": {"command": "$bin/mcp-server-memory", "env": {"MEMORY_FILE_PATH": "$CACHE/data/memory.jsonl"}},
    "everything": {"command": "$bin/mcp-server-everything", "args": ["stdio"]},
    "thinking": {"command": "$bin/mcp-server-sequential-thinking"},
    "github": {"command": "$bin/mcp-server-github", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "placeholder"}},
    "gitlab": {"command": "$bin/mcp-server-gitlab", "env": {"GITLAB_PERSONAL_ACCESS_TOKEN": "placeholder", "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}},
    "slack": {"command": "$bin/mcp-server-slack", "env": {"SLACK_BOT_TOKEN": "placeholder", "SLACK_TEAM_ID": "T0000000"}},
    "maps": {"command": "$bin/mcp-server-google-maps", "env": {"GOOGLE_MAPS_API_KEY": "placeholder"}},
    "brave": {"command": "$bin/mcp-server-brave-search", "env": {"BRAVE_API_KEY": "placeholder"}},
    "browser": {"command": "$bin/playwright-mcp", "args": ["--headless"]},
    "notion": {"command": "$bin/notion-mcp-server", "env": {"NOTION_TOKEN": "placeholder"}},
    "git": {"command": "$py/mcp-server-git", "args": ["--repository", "$CACHE/repo"]},
    "time": {"command": "$py/mcp-server-time", "args": ["--local-timezone", "UTC"]},
    "fetch": {"command": "$py/mcp-server-fetch"}
  },
  "startupTimeoutMs": 60000,
  "lockfile": "$CACHE/switchboard.lock"
}
EOF
}

# The same servers, each under "strict" with what it needs beyond the
# system's runtime: the npm tree (node resolves modules up from the
# script), the venv and the interpreter it was made from (pyenv or another
# prefix outside /usr), and the folders the file, memory and git servers
# write. No server gets the network. git reads no ~/.gitconfig (outside
# the sandbox's reach): GIT_CONFIG_GLOBAL points it at nothing.
write_strict_config() {
  local pybase
  pybase=$("$CACHE/py/bin/python" -c 'import sys; print(sys.base_prefix)')
  python3 - "$CACHE" "$pybase" <<'EOF'
import json, sys
cache, pybase = sys.argv[1], sys.argv[2]
config = json.load(open(f"{cache}/catalogue.json"))
writes = {"filesystem": f"{cache}/files", "memory": f"{cache}/data", "git": f"{cache}/repo"}
for alias, server in config["mcpServers"].items():
    python = "/py/bin/" in server["command"]
    read = [f"{cache}/py", pybase] if python else [f"{cache}/npm"]
    fs = {"read": read}
    if alias in writes:
        fs["write"] = [writes[alias]]
    server["sandbox"] = {"fs": fs, "network": False}
config["mcpServers"]["git"]["env"] = {"GIT_CONFIG_GLOBAL": "/dev/null"}
config["defaults"] = {"sandbox": "strict"}
config["roots"] = [f"{cache}/files"]
config["lockfile"] = f"{cache}/strict.lock"
json.dump(config, open(f"{cache}/catalogue-strict.json", "w"), indent=1)
EOF
}

# Every server up under its strict sandbox, and the ones that touch files
# doing so within their allowlists.
strict() {
  bin_path
  write_strict_config
  local config=$CACHE/catalogue-strict.json
  "$BIN" --config "$config" servers --json >"$CACHE/strict-servers.json"
  python3 - "$CACHE/strict-servers.json" <<'EOF'
import json, sys
servers = json.load(open(sys.argv[1]))
down = [s for s in servers if s["status"] != "up"]
tools = sum(s.get("tools", 0) for s in servers)
print(f"{len(servers) - len(down)} of {len(servers)} servers up under strict, {tools} tools")
for s in down:
    print(f"  down: {s.get('alias')}: {s.get('reason', '')}")
sys.exit(1 if down else 0)
EOF
  call() { "$BIN" --config "$config" call "$1" "$2" --yes >/dev/null && echo "  ok: $1"; }
  call mcp__filesystem__write_file "{\"path\": \"$CACHE/files/strict.txt\", \"content\": \"written under strict\"}"
  call mcp__filesystem__read_text_file "{\"path\": \"$CACHE/files/strict.txt\"}"
  call mcp__memory__create_entities '{"entities": [{"name": "strict", "entityType": "check", "observations": ["written under strict"]}]}'
  call mcp__git__git_status "{\"repo_path\": \"$CACHE/repo\"}"
  call mcp__time__get_current_time '{"timezone": "UTC"}'
}

bin_path() {
  if [[ -z ${BIN:-} ]]; then
    cargo build --locked --quiet -p switchboard --bin switchboard --manifest-path "$REPO/Cargo.toml"
    BIN=$(cargo metadata --format-version 1 --no-deps --manifest-path "$REPO/Cargo.toml" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/switchboard
  fi
}

tools() {
  bin_path
  "$BIN" --config "$CACHE/catalogue.json" tools --all --json >"$CACHE/tools.json"
  python3 - "$CACHE/tools.json" <<'EOF'
import collections, json, sys
tools = json.load(open(sys.argv[1]))
per = collections.Counter(t["server"] for t in tools)
names = collections.Counter(t["originalName"] for t in tools)
print(f"{len(tools)} tools from {len(per)} servers: " + ", ".join(f"{s} {n}" for s, n in sorted(per.items())))
print("names on more than one server: " + ", ".join(sorted(n for n, c in names.items() if c > 1)))
EOF
}

# The definitions as the servers sent them (the host's markers taken off
# the descriptions), one object per tool with its server's alias.
snapshot() {
  tools
  python3 - "$CACHE/tools.json" "$REPO/bench/catalogue-tools.json" <<'EOF'
import json, re, sys
out = []
for t in json.load(open(sys.argv[1])):
    d = t["description"]
    m = re.match(r'\[from [^\]]*\] <untrusted-text source="[^"]*">\n(.*)\n</untrusted-text>$', d, re.S)
    entry = {"server": t["server"], "name": t["originalName"]}
    if t.get("title"):
        entry["title"] = t["title"]
    if m:
        entry["description"] = m.group(1)
    entry["inputSchema"] = t["inputSchema"]
    out.append(entry)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, separators=(",", ":"), ensure_ascii=False)
    f.write("\n")
print(f"{len(out)} tools written to {sys.argv[2]}")
EOF
}

case ${1:-install} in
  install) install ;;
  config) echo "$CACHE/catalogue.json" ;;
  tools) tools ;;
  snapshot) snapshot ;;
  strict) strict ;;
  *) echo "usage: $0 install|config|tools|snapshot|strict" >&2; exit 2 ;;
esac
