# Sourced by scripts/test.sh: installs the Debian packages the real-MPI tests run on the host
# (Open MPI, its compiler wrapper, sshd, iproute2). Without root or apt-get it changes nothing,
# and those tests skip, saying why.
# shellcheck shell=bash

_jobcore_packages=(openmpi-bin libopenmpi-dev openssh-server openssh-client iproute2)
_jobcore_missing=()
for _jobcore_package in "${_jobcore_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$_jobcore_package" 2>/dev/null | grep -q "install ok installed" \
    || _jobcore_missing+=("$_jobcore_package")
done
if [[ ${#_jobcore_missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "host-packages.sh: installing ${_jobcore_missing[*]}" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${_jobcore_missing[@]}"; } >/tmp/jobcore-apt.log 2>&1 \
      || { cat /tmp/jobcore-apt.log >&2; echo "host-packages.sh: apt-get failed;" \
             "the real-MPI tests will skip" >&2; }
  else
    echo "host-packages.sh: not root or no apt-get; ${_jobcore_missing[*]} missing," \
         "the real-MPI tests will skip" >&2
  fi
fi
unset _jobcore_packages _jobcore_missing _jobcore_package
