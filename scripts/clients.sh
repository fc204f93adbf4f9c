#!/usr/bin/env bash
# Make sure the real clients of the protocol tests are installed: for
# mcpserver's (TestRealClients) the official MCP TypeScript SDK and the MCP
# Inspector; for openwop's, ajv and ajv-formats, which validate every
# OpenWOP answer against the spec's JSON Schemas. One node package holds
# them all, at the versions of mcpserver/testdata/client/package-lock.json.
# Called by `make test` and `make clients`. When they are installed (and the
# lock has not changed since) this prints nothing, takes a few milliseconds
# and needs no network; otherwise it runs `npm ci --ignore-scripts`.
#
# Without npm it skips with a message (the tests skip too), unless
# ENGRAM_REQUIRE_CLIENTS is set, as make test sets it: then it fails.
set -euo pipefail

DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)/mcpserver/testdata/client

say() { printf 'clients: %s\n' "$*"; }
die() {
	printf 'clients: ERROR: %s\n' "$*" >&2
	exit 1
}
installed() {
	local marker=$DIR/node_modules/.package-lock.json
	[[ -f $marker && -f $DIR/node_modules/@modelcontextprotocol/sdk/package.json &&
		-f $DIR/node_modules/@modelcontextprotocol/inspector/package.json &&
		-f $DIR/node_modules/ajv/package.json && -f $DIR/node_modules/ajv-formats/package.json &&
		! $DIR/package-lock.json -nt $marker && ! $DIR/package.json -nt $marker ]]
}

if installed; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	if [[ -n ${ENGRAM_REQUIRE_CLIENTS:-} ]]; then
		die "npm is not installed: install Node.js 20 or later, or unset ENGRAM_REQUIRE_CLIENTS to skip the real-client tests"
	fi
	say "npm is not installed: the real-client tests (mcpserver TestRealClients, openwop's ajv validation) will be skipped"
	exit 0
fi

LOG=$(mktemp)
trap 'rm -f -- "$LOG"' EXIT
say "installing @modelcontextprotocol/sdk, @modelcontextprotocol/inspector, ajv and ajv-formats into ${DIR#"$PWD"/}"
(cd "$DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >>"$LOG" 2>&1 || {
	cat "$LOG" >&2
	die "npm ci failed"
}
installed || die "npm ci ran, but the clients are not in $DIR/node_modules"
say "$(cd "$DIR" && node -p 'const v = p => require("./node_modules/" + p + "/package.json").version; `sdk ${v("@modelcontextprotocol/sdk")}, inspector ${v("@modelcontextprotocol/inspector")}, ajv ${v("ajv")}, ajv-formats ${v("ajv-formats")}`') installed"
