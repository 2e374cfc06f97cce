# Sourced by the other scripts: puts the project's virtualenv first on PATH (creating it, in
# the cache unless a .venv is already here, and reinstalling the project and the example plugin
# examples/torchjob whenever either's pyproject.toml changed) and exports KUBEBUILDER_ASSETS, the
# folder of control-plane binaries the integration tests run. Fails with `return 1`, so a shell
# that sources it by hand survives; the scripts run under `set -e` and stop there.
# shellcheck shell=bash

jobcore_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

_jobcore_new_enough() {  # python >= 3.11?
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

# Where no .venv is, it is made a link to one kept in the cache for this checkout's path, so a
# fresh clone where one was before (as CI's is) finds the project and its dependencies installed.
if [[ ! -e $jobcore_root/.venv && ! -L $jobcore_root/.venv ]]; then
  _jobcore_kept=${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/venvs/$(printf %s "$jobcore_root" | sha256sum | cut -c1-16)
  mkdir -p "$_jobcore_kept" && ln -s "$_jobcore_kept" "$jobcore_root/.venv" || return 1
fi
if ! _jobcore_new_enough "$jobcore_root/.venv/bin/python"; then
  _jobcore_python=""
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && _jobcore_new_enough "$candidate"; then
      _jobcore_python=$candidate
      break
    fi
  done
  if [[ -z $_jobcore_python ]]; then
    echo "env.sh: jobcore needs Python >= 3.11 (as python3.11 or python3) to make .venv" >&2
    return 1
  fi
  echo "env.sh: creating .venv with $($_jobcore_python --version)" >&2
  "$_jobcore_python" -m venv "$(realpath "$jobcore_root/.venv")" || return 1
fi
export VIRTUAL_ENV="$jobcore_root/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"

_jobcore_stamp="$VIRTUAL_ENV/.jobcore-pyproject.sha256"
_jobcore_hash=$(python -c 'import hashlib, pathlib, sys
digest = hashlib.sha256()
for path in sys.argv[1:]:
    digest.update(pathlib.Path(path).read_bytes())
print(digest.hexdigest())' \
  "$jobcore_root/pyproject.toml" "$jobcore_root/examples/torchjob/pyproject.toml") || return 1
if [[ "$(cat "$_jobcore_stamp" 2>/dev/null)" != "$_jobcore_hash" ]]; then
  echo "env.sh: a pyproject.toml is new or changed:" \
    "pip install -e '.[test]' -e examples/torchjob into .venv" >&2
  # A .venv made before the project became the distribution jobcore-k8s holds the one named
  # jobcore: out first, since both install the `jobcore` command.
  python -m pip uninstall --disable-pip-version-check -y -q jobcore >/dev/null 2>&1 || true
  if ! python -m pip install --disable-pip-version-check -e "$jobcore_root[test]" \
      -e "$jobcore_root/examples/torchjob" >"$VIRTUAL_ENV/pip.log" 2>&1; then
    cat "$VIRTUAL_ENV/pip.log" >&2
    echo "env.sh: pip install failed; its log is above and in .venv/pip.log" >&2
    return 1
  fi
  echo "$_jobcore_hash" >"$_jobcore_stamp"
fi

_jobcore_assets_ok() {
  [[ -n $1 && -x $1/etcd && -x $1/kube-apiserver && -x $1/kubectl ]]
}

if ! _jobcore_assets_ok "${KUBEBUILDER_ASSETS:-}"; then
  _jobcore_installer="$jobcore_root/../shared/envtest/install.sh"
  if [[ -n ${KUBEBUILDER_ASSETS:-} ]]; then
    echo "env.sh: no etcd, kube-apiserver, kubectl in KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS" >&2
  fi
  if [[ -f $_jobcore_installer ]] \
      && KUBEBUILDER_ASSETS=$(bash "$_jobcore_installer") \
      && _jobcore_assets_ok "$KUBEBUILDER_ASSETS"; then
    export KUBEBUILDER_ASSETS
  else
    cat >&2 <<MESSAGE
env.sh: the integration tests need real control-plane binaries, and neither KUBEBUILDER_ASSETS
nor $_jobcore_installer gave them.
Set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kubectl (plus
kube-controller-manager for the garbage-collection tests), e.g. from controller-runtime's
setup-envtest:
    go install sigs.k8s.io/controller-runtime/tools/setup-envtest@latest
    export KUBEBUILDER_ASSETS="\$(setup-envtest use -p path)"
MESSAGE
    return 1
  fi
fi
unset -f _jobcore_new_enough _jobcore_assets_ok
unset _jobcore_kept _jobcore_python _jobcore_stamp _jobcore_hash _jobcore_installer candidate
