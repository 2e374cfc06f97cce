#!/usr/bin/env bash
# Builds the dashboard's browser code (controllers/dashboard/frontend: TypeScript, htmx and its
# SSE extension, pinned in package.json and package-lock.json) into the bundle the package ships,
# controllers/dashboard/static/dashboard.js. The bundle is committed, so installing jobcore
# needs no Node; this script is what changes it.
#
#   scripts/frontend.sh           type-check (tsc --noEmit), then bundle (esbuild, minified)
#   scripts/frontend.sh --check   the same into a temporary file; fails, saying so, when it
#                                 differs from the committed bundle
#
# `npm ci` installs into a cache outside the repository keyed by the hash of package.json and
# package-lock.json: ~/.cache/jobcore/frontend/<hash>/node_modules. The build runs in a
# temporary folder holding a copy of the sources and a link to those modules, so nothing is
# written beside the sources. Installs Debian's nodejs and npm (needs root) when `npm` is missing.
# To change a pin: edit package.json, then in a scratch folder holding a copy of it run
# `npm install --omit-lockfile-registry-resolved` and copy its package-lock.json back.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
frontend=$root/controllers/dashboard/frontend
bundle=$root/controllers/dashboard/static/dashboard.js
cache=${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/frontend

case ${1:-} in
  --check) check=1 ;;
  "") check= ;;
  *)
    echo "usage: scripts/frontend.sh [--check]" >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/apt.sh
source "$here/apt.sh"
command -v npm >/dev/null || apt_install nodejs npm || {
  echo "frontend.sh: no npm, and nodejs and npm could not be installed" >&2
  exit 1
}

hash=$(cd "$frontend" && cat package.json package-lock.json | sha256sum | cut -c1-16)
modules=$cache/$hash
if [[ ! -f $modules/.installed ]]; then
  rm -rf "$modules" && mkdir -p "$modules"
  cp "$frontend/package.json" "$frontend/package-lock.json" "$modules/"
  echo "frontend.sh: npm ci into $modules" >&2
  (cd "$modules" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$modules/.installed"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$frontend/tsconfig.json" "$frontend/src" "$work/"
ln -s "$modules/node_modules" "$work/node_modules"
cd "$work"
node_modules/.bin/tsc --noEmit -p tsconfig.json
node_modules/.bin/esbuild src/main.ts --bundle --minify --format=iife --target=es2020 \
  --charset=utf8 --log-level=warning --outfile="$work/dashboard.js"

if [[ -z $check ]]; then
  cp "$work/dashboard.js" "$bundle"
  echo "frontend.sh: built $bundle ($(stat -c %s "$bundle") bytes)" >&2
elif ! cmp -s "$work/dashboard.js" "$bundle"; then
  echo "frontend.sh: $bundle differs from a build of controllers/dashboard/frontend:" \
    "run scripts/frontend.sh and commit the bundle" >&2
  exit 1
else
  echo "frontend.sh: $bundle matches its sources" >&2
fi
