#!/usr/bin/env bash
# The project's test command: lint, format, types, import layers, then pytest ("$@" goes to
# pytest; its testpaths are tests/ and the example plugin's examples/torchjob/tests/). Stops at
# the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/host-packages.sh

ruff check .
ruff format --check .
mypy
lint-imports --no-logo
status=0
pytest -q "$@" || status=$?
if [[ $status -eq 5 ]]; then
  echo "test.sh: pytest collected no tests" >&2
fi
exit "$status"
