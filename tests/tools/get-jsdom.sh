#!/usr/bin/env bash
# Installs jsdom (pinned: JSDOM_VERSION) with npm into a cache outside the clone, idempotently,
# and prints the node_modules directory to put in NODE_PATH. The page test
# (tests/e2e/test_flame_page.py) runs it on a machine that has none yet; needs npm (installed
# here when missing, as root).
# Usage: get-jsdom.sh [CACHE_DIR]   (default $CZ_NPM_CACHE or /var/cache/cpuzombie/npm)
set -euo pipefail

version=${JSDOM_VERSION:-26.1.0}
cache=${1:-${CZ_NPM_CACHE:-/var/cache/cpuzombie/npm}}
dir=$cache/jsdom-$version

if [ -f "$dir/node_modules/jsdom/package.json" ]; then
	echo "$dir/node_modules"
	exit 0
fi
# npm comes with nodejs on some machines (NodeSource's package) and apart on Debian's: only when
# there is none, Debian's npm (install-deps.sh, as root)
command -v npm >/dev/null || "$(dirname "$0")/install-deps.sh" npm >&2 || true
command -v npm >/dev/null || { echo "get-jsdom: 'npm' is required (Debian's npm)" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d "$cache/tmp-jsdom-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "get-jsdom: installing jsdom@$version into $dir" >&2
(cd "$tmp" && echo '{"name":"cz-jsdom","private":true}' >package.json && npm install --silent --no-audit --no-fund \
	"jsdom@$version" >/dev/null)
rm -rf "$dir/node_modules"
mv "$tmp/node_modules" "$dir/node_modules"
echo "$dir/node_modules"
