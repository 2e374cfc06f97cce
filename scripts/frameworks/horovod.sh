# Horovod 0.28.1 (PyTorch, Gloo and MPI), built from source against Debian's torch and Open MPI.
# shellcheck shell=bash
#
# PyPI has no Horovod wheel, and a wheel from PyPI's torch would pull a CUDA build: the wheel is
# built once per machine against Debian's python3-torch and kept under
# $JOBCORE_FRAMEWORKS/wheels/, which a reinstall of the venv (a changed pin) reuses. The venv
# sees Debian's torch through --system-site-packages and holds only Horovod and its pinned
# runtime dependencies.

horovod_version=0.28.1
horovod_runtime=(cloudpickle==3.1.2 psutil==5.9.8 pyyaml==6.0.2 packaging==24.2 cffi==1.17.1
  pycparser==2.22)
horovod_build_tools=(setuptools==69.5.1 wheel==0.43.0)

pins_horovod() {
  echo "horovod==$horovod_version ${horovod_runtime[*]} debian:python3-torch libopenmpi-dev"
}

# The wheel is tied to the torch it was compiled against: its folder names that torch.
_horovod_wheel_dir() {
  local torch
  torch=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)') || return 1
  echo "$JOBCORE_FRAMEWORKS/wheels/horovod-$horovod_version-torch-$torch"
}

_horovod_build_wheel() {
  local wheels=$1 build="$JOBCORE_FRAMEWORKS/wheels/build-venv" started=$SECONDS
  echo "frameworks.sh: horovod: building the wheel (a few minutes on 2 cores)" >&2
  VENV_ARGS=(--system-site-packages)
  venv_install "$build" /usr/bin/python3 "${horovod_build_tools[@]}" || return 1
  mkdir -p "$wheels.tmp"
  # No build isolation: the build must see Debian's torch, not fetch one from PyPI.
  if ! HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITH_MPI=1 \
      HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
      MAKEFLAGS=-j"$(nproc)" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$build/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps \
      --no-build-isolation --no-binary horovod -w "$wheels.tmp" "horovod==$horovod_version" \
      >"$wheels.log" 2>&1; then
    tail -n 60 "$wheels.log" >&2
    rm -rf "$wheels.tmp" "$build" "$build.pip.log"
    return 1
  fi
  rm -rf "$wheels" "$build" "$build.pip.log"
  mv "$wheels.tmp" "$wheels"
  echo "frameworks.sh: horovod: wheel built in $((SECONDS - started)) s: $(ls "$wheels")" >&2
}

install_horovod() {
  local dest=$1 wheels
  apt_install python3-torch openmpi-bin python3-venv || return 1
  wheels=$(_horovod_wheel_dir) || return 1
  if ! compgen -G "$wheels/horovod-$horovod_version-*.whl" >/dev/null; then
    # Only a build needs the compilers and headers (an image reusing the wheel does without).
    apt_install libtorch-dev pybind11-dev cmake g++ make libopenmpi-dev python3-dev || return 1
    _horovod_build_wheel "$wheels" || return 1
  else
    echo "frameworks.sh: horovod: reusing the wheel in $wheels" >&2
  fi
  mkdir -p "$dest"
  VENV_ARGS=(--system-site-packages)  # Debian's torch, never one from PyPI
  venv_install "$dest/venv" /usr/bin/python3 "$wheels"/horovod-"$horovod_version"-*.whl \
    "${horovod_runtime[@]}" || return 1
  ln -sfn venv "$dest/home"
  "$dest/venv/bin/horovodrun" --check-build >&2 || return 1
}
