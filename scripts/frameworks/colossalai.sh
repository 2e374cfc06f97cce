# ColossalAI's launcher (`colossalai run`) from PyPI, in a virtualenv of Debian's python3 that
# sees Debian's python3-torch 1.13 (CPU, with gloo) and its torchrun.
# shellcheck shell=bash
#
# colossalai is installed without its dependencies, which would pull a CUDA torch from PyPI and
# much that `colossalai run` never imports; the launcher needs only click, packaging and fabric
# (with paramiko and invoke), pinned here with what they need, and paramiko's cryptography, which
# comes from Debian.

colossalai_pins=(colossalai==0.4.0 click==8.1.8 packaging==24.2 fabric==3.2.2 invoke==2.2.0
  paramiko==3.5.1 decorator==5.1.1 Deprecated==1.2.18 wrapt==1.17.2 PyNaCl==1.5.0
  bcrypt==4.3.0 cffi==1.17.1 pycparser==2.22)

pins_colossalai() { echo "pypi:${colossalai_pins[*]} debian:python3-torch python3-cryptography"; }

install_colossalai() {
  apt_install python3-torch python3-cryptography python3-venv || return 1
  VENV_ARGS=(--system-site-packages)
  # colossalai 0.4.0 is an sdist: --use-pep517 always builds a wheel of it first. Without a
  # cached wheel or the `wheel` package, pip 23 runs `setup.py install` instead, whose console
  # script (pkg_resources) refuses to start unless every dependency colossalai declares is there.
  venv_install "$1/venv" /usr/bin/python3 --no-deps --use-pep517 "${colossalai_pins[@]}" || return 1
  VENV_ARGS=()
  "$1/venv/bin/colossalai" run --help >/dev/null || return 1
  ln -sfn venv "$1/home"
}
