#!/usr/bin/env bash
# Prints the path of the workspace's binary NAME, built with the test
# suite's features (`cargo build --workspace --bins --tests`: the whole
# workspace with its dev-dependencies, as `cargo test --workspace` builds
# it). Every script that runs one of our binaries takes it from here, so
# after the tests almost nothing is compiled again, and one set of
# features serves them all: one copy of each dependency in the target
# directory, not one per `-p` selection (test-only features such as
# tokio's test-util otherwise make each selection rebuild tokio and all
# that sits on it).
# Usage: scripts/workspace-bin.sh NAME
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/workspace-bin.sh NAME}
bin=$(cargo build --workspace --locked --bins --tests --quiet --message-format=json-render-diagnostics |
  sed -n "s/.*\"executable\":\"\([^\"]*\/$name\)\".*/\1/p" | tail -n 1)
[[ -x $bin ]] || {
  echo "workspace-bin.sh: the build made no binary named $name (a [[bin]] of a workspace crate?)" >&2
  exit 2
}
echo "$bin"
