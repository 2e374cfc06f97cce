#!/usr/bin/env bash
# The project's test command: the real frameworks (scripts/frameworks.sh, into a cache outside
# the repository), the real cluster's packages and images (scripts/cluster.sh), Debian's
# chromium for the browser tests (scripts/chromium.sh) and a rebuild of the dashboard's bundle
# to compare with the committed one (scripts/frontend.sh --check: a difference fails the run,
# after pytest), then lint,
# format, types, import layers and pytest ("$@" goes to pytest; its testpaths are tests/, the
# example plugin's examples/torchjob/tests/ and the docs' docs/examples/sleepjob/tests/), in three
# processes that each take whole files, the real-cluster tests all in one of them
# (JOBCORE_TEST_WORKERS=0 runs everything in this one, so -s shows output), printing the 40
# slowest steps (the suite's budget is 15 minutes). Three on CI's two cores: the tests wait on
# API servers, kubelets and timers as much as they compute, and a third process fills those
# waits (pytest 1,115 s with two processes, 752 s with three, the same day, a quiet machine). Stops at the first failing check. A
# framework or image that does not install stops nothing: its real tests skip saying why, and
# under CI (CI=true) they fail saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
started=$SECONDS
bash scripts/frameworks.sh || echo "test.sh: some frameworks did not install (above)" >&2
echo "test.sh: frameworks ready in $((SECONDS - started)) s" >&2
step=$SECONDS
bash scripts/cluster.sh || echo "test.sh: some of the real cluster's set-up failed (above)" >&2
echo "test.sh: the real cluster's set-up ready in $((SECONDS - step)) s" >&2
step=$SECONDS
bash scripts/chromium.sh || echo "test.sh: chromium did not install (above)" >&2
bundle=0
bash scripts/frontend.sh --check || bundle=$?
echo "test.sh: chromium and the dashboard's bundle checked in $((SECONDS - step)) s" >&2

ruff check .
ruff format --check .
# mypy's cache outside the repository: a fresh clone checks only what changed (33 s cold, 2 s warm).
MYPY_CACHE_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/mypy mypy
lint-imports --no-logo
status=0
pytest -q -rs --durations=40 -n "${JOBCORE_TEST_WORKERS:-3}" --dist loadgroup "$@" || status=$?
if [[ $status -eq 5 ]]; then
  echo "test.sh: pytest collected no tests" >&2
fi
if [[ $bundle -ne 0 ]]; then
  echo "test.sh: the dashboard's bundle check failed (above)" >&2
  [[ $status -ne 0 ]] || status=1
fi
exit "$status"
