#!/usr/bin/env bash
# Builds the jobcore agent (agent/, Go, standard library only) as a static binary from Debian's
# Go toolchain, into a cache outside the repository keyed by the hash of agent/'s files:
#
#   scripts/agent.sh           build if needed; the binary's path is the last line on stdout:
#                              ~/.cache/jobcore/agent/<hash>/jobcore-agent
#   scripts/agent.sh --test    go vet, go test, then each fuzz target for $JOBCORE_FUZZTIME (10s)
#   scripts/agent.sh --fuzz D  each fuzz target for D (a Go duration, e.g. 10m): the long run
#
# Go's build cache and module path live under ~/.cache/jobcore/go, so nothing is written to the
# repository or to $HOME/go. Installs golang-go (needs root) when `go` is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cache=${XDG_CACHE_HOME:-$HOME/.cache}/jobcore
export GOCACHE=$cache/go/build GOPATH=$cache/go/path GOFLAGS= GOTOOLCHAIN=local GOPROXY=off
export GOMODCACHE=$GOPATH/pkg/mod

# shellcheck source=scripts/apt.sh
source "$here/apt.sh"
command -v go >/dev/null || apt_install golang-go || {
  echo "agent.sh: no Go toolchain, and golang-go could not be installed" >&2
  exit 1
}
cd "$root/agent"

# fuzz DURATION: every fuzz target, one `go test -fuzz` each (Go runs one target at a time);
# minimising a new input is bounded to 5 s (Go's default 60 s would stall a 10 s run).
fuzz() {
  local package target
  for package in $(go list ./...); do
    for target in $(go test -list '^Fuzz' "$package" | grep '^Fuzz' || true); do
      echo "agent.sh: fuzzing $target in $package for $1" >&2
      go test -run "^$" -fuzz "^$target\$" -fuzztime "$1" -fuzzminimizetime 5s "$package"
    done
  done
}

case ${1:-} in
  --test | test)
    go vet ./...
    go test -count=1 ./...
    fuzz "${JOBCORE_FUZZTIME:-10s}"
    exit 0
    ;;
  --fuzz)
    fuzz "${2:?usage: scripts/agent.sh --fuzz DURATION}"
    exit 0
    ;;
  "") ;;
  *)
    echo "usage: scripts/agent.sh [--test | --fuzz DURATION]" >&2
    exit 2
    ;;
esac

# The hash covers every file's name and contents (tests included: they are part of what was
# checked), in a stable order.
hash=$(find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
binary=$cache/agent/$hash/jobcore-agent
if [[ ! -x $binary ]]; then
  mkdir -p "$(dirname "$binary")"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$hash" -o "$binary.tmp" .
  mv "$binary.tmp" "$binary"
  echo "agent.sh: built $binary ($(stat -c %s "$binary") bytes)" >&2
fi
echo "$binary"
