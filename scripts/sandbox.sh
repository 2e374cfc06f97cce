#!/usr/bin/env bash
# A local control plane with the project's controllers, to try things by hand: `jobcore sandbox`.
set -euo pipefail
source "$(dirname "$0")/env.sh"
exec jobcore sandbox "$@"
