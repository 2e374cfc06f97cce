#!/usr/bin/env bash
# Builds the jobcore agent (agent/, Go, standard library only) as a static binary from Debian's
# Go toolchain, into a cache outside the repository keyed by the hash of agent/'s files:
#
#   scripts/agent.sh           build if needed; the binary's path is the last line on stdout:
#                              ~/.cache/jobcore/agent/<hash>/jobcore-agent
#   scripts/agent.sh --test    go vet, go test, then each fuzz target for $JOBCORE_FUZZTIME (4s),
#                              in one process
#   scripts/agent.sh --fuzz D  each fuzz target for D (a Go duration, e.g. 10m): the long run
#   scripts/agent.sh --measure build, then print the binary's size and a serve process's RSS
#                              idle and while one session streams 100 MB (loopback, /proc)
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
# Go is installed only when it is needed: a binary already built for these sources (say, a
# cache an image build mounts) needs none.
need_go() {
  command -v go >/dev/null || apt_install golang-go || {
    echo "agent.sh: no Go toolchain, and golang-go could not be installed" >&2
    exit 1
  }
}
cd "$root/agent"

# fuzz DURATION [PROCESSES]: every fuzz target, one `go test -fuzz` each (Go runs one target at
# a time) in PROCESSES fuzzing processes (default: one per core); minimising a new input is
# bounded to 5 s (Go's default 60 s would stall a 10 s run).
fuzz() {
  local package target
  for package in $(go list ./...); do
    for target in $(go test -list '^Fuzz' "$package" | grep '^Fuzz' || true); do
      echo "agent.sh: fuzzing $target in $package for $1" >&2
      go test -run "^$" -fuzz "^$target\$" -fuzztime "$1" -fuzzminimizetime 5s \
        -parallel "${2:-$(nproc)}" "$package"
    done
  done
}

# kib FIELD PID: a /proc/PID/status field (VmRSS, VmHWM) in kB.
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$2/status"; }

# measure BINARY: serve on a free port with a fresh key; its RSS idle, then during and after one
# session streaming 100 MB to an rsh (the most of three samples), and the rsh's RSS then.
measure() {
  local binary=$1 dir port serve client idle during rss client_rss started elapsed
  dir=$(mktemp -d)
  head -c 32 /dev/urandom | base64 >"$dir/key"
  port=$((20000 + RANDOM % 20000))
  "$binary" serve --port "$port" --key-file "$dir/key" 2>"$dir/log" &
  serve=$!
  trap 'kill "$serve" 2>/dev/null; rm -rf "$dir"' RETURN
  until grep -q listening "$dir/log"; do sleep 0.1; done
  sleep 1
  idle=$(kib VmRSS "$serve")
  started=$(date +%s.%N)
  JOBCORE_AGENT_PORT=$port JOBCORE_AGENT_KEY_FILE=$dir/key \
    "$binary" rsh localhost 'head -c 100000000 /dev/zero; sleep 1' >/dev/null &
  client=$!
  during=0
  for _ in 1 2 3; do
    sleep 0.5
    rss=$(kib VmRSS "$serve") && ((rss > during)) && during=$rss
  done
  client_rss=$(kib VmRSS "$client")
  wait "$client"
  elapsed=$(echo "$(date +%s.%N) - $started - 1" | bc)
  echo "agent: binary $(stat -c %s "$binary") bytes; serve RSS idle $idle kB, at most $during kB" \
    "sampled during one session (rsh $client_rss kB); 100 MB relayed in ${elapsed} s"
}

case ${1:-} in
  --test | test)
    need_go
    go vet ./...
    go test -count=1 ./...
    fuzz "${JOBCORE_FUZZTIME:-4s}" 1 # a check beside the test suite: one core, not all
    exit 0
    ;;
  --fuzz)
    need_go
    fuzz "${2:?usage: scripts/agent.sh --fuzz DURATION}"
    exit 0
    ;;
  --measure) ;;
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
  need_go
  mkdir -p "$(dirname "$binary")"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$hash" -o "$binary.tmp" .
  mv "$binary.tmp" "$binary"
  echo "agent.sh: built $binary ($(stat -c %s "$binary") bytes)" >&2
fi
[[ ${1:-} != --measure ]] || measure "$binary"
echo "$binary"
