#!/usr/bin/env bash
# Installs Debian's headless-capable browser and its WebDriver, which the browser tests
# (tests/browser) drive: `chromium` and `chromium-driver`, when missing (needs root and apt-get).
# Prints both paths; exits non-zero saying what is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/apt.sh
source "$here/apt.sh"
apt_install chromium chromium-driver || {
  echo "chromium.sh: chromium and chromium-driver could not be installed" >&2
  exit 1
}
for binary in /usr/bin/chromium /usr/bin/chromedriver; do
  [[ -x $binary ]] || {
    echo "chromium.sh: no $binary after installing" >&2
    exit 1
  }
  echo "$binary"
done
