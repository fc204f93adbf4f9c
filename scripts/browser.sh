#!/usr/bin/env bash
# Make sure Debian's headless-capable Chromium is at /usr/bin/chromium, for the
# console's browser tests (console/*_test.go). Called by `make test` and
# `make screenshots`. When it is already installed this prints nothing and
# takes a few milliseconds; otherwise it runs
# `apt-get install --no-install-recommends chromium` (as root, or through
# `sudo -n`), refreshing the package lists once if the first try fails.
#
# Env: CHROMIUM (default /usr/bin/chromium): the browser the tests will use.
set -euo pipefail

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [[ -x $CHROMIUM ]]; then
	exit 0
fi

say() { printf 'browser: %s\n' "$*"; }
die() {
	printf 'browser: ERROR: %s\n' "$*" >&2
	exit 1
}
as_root() {
	if [[ $EUID -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n "$@" || die "needs root for: $* (sudo -n failed; run as root or configure sudo)"
	else
		die "needs root for: $*"
	fi
}
command -v apt-get >/dev/null 2>&1 || die "no apt-get: install Chromium yourself and set CHROMIUM to its path"

export DEBIAN_FRONTEND=noninteractive
LOG=$(mktemp)
trap 'rm -f -- "$LOG"' EXIT
install=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 chromium)
say "installing chromium"
if ! as_root "${install[@]}" >>"$LOG" 2>&1; then
	say "apt-get update"
	as_root apt-get -q -o DPkg::Lock::Timeout=300 update >>"$LOG" 2>&1 || { cat "$LOG" >&2; die "apt-get update failed"; }
	as_root "${install[@]}" >>"$LOG" 2>&1 || { cat "$LOG" >&2; die "apt-get install chromium failed"; }
fi
[[ -x $CHROMIUM ]] || die "chromium installed, but $CHROMIUM is not there"
say "$("$CHROMIUM" --version 2>/dev/null || echo chromium) installed"
