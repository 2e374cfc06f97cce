# Sourced by scripts/frameworks.sh and scripts/images.sh: `apt_install PACKAGE...` installs the
# Debian packages not yet installed, in one apt-get run (the package lists are updated once per
# boot, or once per image build, where /tmp starts empty). Messages start with the calling
# script's name.
# shellcheck shell=bash

apt_install() {
  local missing=() package me=${0##*/}
  local apt=(apt-get -o DPkg::Lock::Timeout=900)
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$package")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "$me: ${missing[*]} missing, and installing needs root and apt-get" >&2
    return 1
  fi
  echo "$me: apt-get install ${missing[*]}" >&2
  if [[ ! -f /tmp/jobcore-apt-updated ]]; then
    "${apt[@]}" update -qq >/tmp/jobcore-apt.log 2>&1 || { cat /tmp/jobcore-apt.log >&2; return 1; }
    touch /tmp/jobcore-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq --no-install-recommends \
    "${missing[@]}" >/tmp/jobcore-apt.log 2>&1 || { cat /tmp/jobcore-apt.log >&2; return 1; }
}
