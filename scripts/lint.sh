#!/usr/bin/env bash
# make lint: golangci-lint with the project's .golangci.yml (gofmt, go vet,
# staticcheck, errcheck, ineffassign, unused, misspell, and depguard holding
# the package layering). The linter is installed once into bin/tools at the
# pinned version from the Go module proxy (about a minute); after that this
# needs no network.
set -euo pipefail

VERSION=v2.15.0
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$ROOT/bin/tools/golangci-lint

if ! [[ -x $BIN ]] || ! "$BIN" version 2>/dev/null | grep -q "version ${VERSION#v} "; then
	printf 'lint: installing golangci-lint %s into bin/tools\n' "$VERSION"
	GOBIN=$ROOT/bin/tools go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
fi
cd "$ROOT"
exec "$BIN" run --timeout 10m --allow-parallel-runners ./...
