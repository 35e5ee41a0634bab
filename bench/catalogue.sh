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
  echo "config: $CACHE/catalogue.json"
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

tools() {
  if [[ -z ${BIN:-} ]]; then
    cargo build --locked --quiet -p switchboard --bin switchboard --manifest-path "$REPO/Cargo.toml"
    BIN=$(cargo metadata --format-version 1 --no-deps --manifest-path "$REPO/Cargo.toml" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/switchboard
  fi
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
  *) echo "usage: $0 install|config|tools|snapshot" >&2; exit 2 ;;
esac
