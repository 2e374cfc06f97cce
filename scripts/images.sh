#!/usr/bin/env bash
# Builds the container images a real cluster runs, from the project's own files and Debian's
# mirror, with no registry and no Docker engine (buildah, mmdebstrap, runc), as docker-archive
# tarballs that `ctr -n k8s.io images import` loads:
#
#   scripts/images.sh [--check] [NAME...]    (none: all of them)
#
#   pause       k8s.gcr.io/pause:3.2: the static `pause` in $KUBEBUILDER_ASSETS, FROM scratch
#   python      docker.io/library/python:3.11-slim look-alike: Debian's Python 3.11, pip, venv
#   jobcore     docker.io/library/jobcore:<version in pyproject.toml>: the project's Dockerfile,
#               unchanged, on a copy of the files it copies (FROM the python look-alike)
#   base        Debian bookworm: sshd and ssh as the kinds and Kubeflow's images expect (StrictModes
#               no, /run/sshd), user mpiuser (uid 1000, home /home/mpiuser)
#   openmpi4, mpich, intel   base + `scripts/frameworks.sh NAME` into /opt/jobcore/frameworks (the
#               host's layout and pins); openmpi4 and mpich also /opt/jobcore/programs/allreduce,
#               controllers/sandbox/allreduce.py's program built with that framework's mpicc
#   torch       base + Debian's python3-torch, which colossalai and horovod build FROM
#   colossalai, horovod      torch + `scripts/frameworks.sh NAME`; horovod reuses the wheel the
#               host built ($JOBCORE_FRAMEWORKS/wheels, from `scripts/frameworks.sh horovod`)
#   mpi-pi      docker.io/mpioperator/mpi-pi:openmpi stand-in: openmpi4 + tests/support/programs/kubeflow
#               (the pi program as /home/mpiuser/pi, sshd on 2222 for mpiuser)
#   mpi-pi-nosshd, mpich-nosshd, intel-nosshd   those images with openssh-server purged, for
#               jobs launched through jobcore's agent; mpi-pi-nosshd (Open MPI 4, the allreduce
#               and pi) has no Python either
#   openmpi5-nosshd   Open MPI 5, for the agent alone: a Debian minbase root (no sshd, Python or
#               compiler) with the prefix `scripts/frameworks.sh openmpi5` installs and the
#               allreduce, both made in a build stage FROM base and copied over
#
# Into $JOBCORE_IMAGES (default ~/.cache/jobcore/images): NAME.tar, written atomically, and
# NAME.ref, the image's reference inside it. The images only the tests use are tagged
# localhost/jobcore-test/NAME:<first 12 hex of the input hash>. An image is rebuilt only when the
# sha256 of its inputs changes (its Containerfile and the files it copies, its Debian package
# list but not the versions the mirror has, the image it builds FROM, the build command;
# NAME.inputs keeps it); a NAME brings the images it builds FROM. Each new image is checked
# (sshd -t, a 2-rank mpirun, ...) before its tarball is written; --check checks the up-to-date
# ones too. buildah keeps its storage in $JOBCORE_IMAGES/.buildah. Prints "built in N s" or
# "up to date" per image and exits non-zero naming what failed. Needs root; installs the Debian
# packages it needs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
source "$here/env.sh"
source "$here/apt.sh"
export JOBCORE_FRAMEWORKS=${JOBCORE_FRAMEWORKS:-${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/frameworks}
images=${JOBCORE_IMAGES:-${XDG_CACHE_HOME:-$HOME/.cache}/jobcore/images}
all=(pause python jobcore base openmpi4 mpich intel torch colossalai horovod mpi-pi mpi-pi-nosshd
  mpich-nosshd intel-nosshd openmpi5-nosshd)
declare -A parent=([jobcore]=python [openmpi4]=base [mpich]=base [intel]=base [torch]=base
  [colossalai]=torch [horovod]=torch [mpi-pi]=openmpi4 [mpi-pi-nosshd]=mpi-pi
  [mpich-nosshd]=mpich [intel-nosshd]=intel [openmpi5-nosshd]=base)
declare -A fixed_ref=([pause]=k8s.gcr.io/pause:3.2 [python]=docker.io/library/python:3.11-slim
  [mpi-pi]=docker.io/mpioperator/mpi-pi:openmpi)
check="" names=()
for arg in "$@"; do
  case $arg in
    --check) check=1 ;;
    -h | --help) sed -n '2,38p' "$0"; exit 0 ;;
    *) names+=("$arg") ;;
  esac
done
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")
for name in "${names[@]}"; do
  if [[ ! " ${all[*]} " == *" $name "* ]]; then
    echo "images.sh: no image $name (known: ${all[*]})" >&2
    exit 2
  fi
done
if [[ $(id -u) -ne 0 ]]; then
  echo "images.sh: building images needs root (buildah's storage, mmdebstrap, runc)" >&2
  exit 1
fi
apt_install buildah mmdebstrap runc uidmap fuse-overlayfs ca-certificates || exit 1

mkdir -p "$images/.buildah" "$images/.work"
exec {lock}>"$images/.lock"
flock -n "$lock" || { echo "images.sh: waiting for another images.sh" >&2; flock "$lock"; }
export CONTAINERS_STORAGE_CONF=$images/.buildah/storage.conf
cat >"$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "overlay"
graphroot = "$images/.buildah/storage"
runroot = "/run/jobcore-buildah/$(sha256sum <<<"$images" | cut -c1-12)"
EOF
runc=(--runtime /usr/sbin/runc)  # Debian's buildah defaults to crun, which refuses hybrid cgroups
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null \
  || true)
mirror=${mirror:-http://deb.debian.org/debian}

# mkrootfs OUT.tar PACKAGES [mmdebstrap args...]: a Debian bookworm minbase root file system
# with PACKAGES (comma-separated), without docs, man pages, locales or apt lists.
mkrootfs() {
  local out=$1 packages=$2
  shift 2
  nice -n 19 mmdebstrap --quiet --variant=minbase --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' "$@" \
    bookworm "$out" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb ${mirror%/debian}/debian-security bookworm-security main"
}

# Each image has recipe_NAME CONTEXT: it fills the build context (its Containerfile and every
# file that one copies); an image made from a root file system also has rootfs_NAME CONTEXT,
# run only when it is (re)built, which writes CONTEXT/rootfs.tar.

recipe_pause() {
  local pause=${KUBEBUILDER_ASSETS:-}/pause
  if [[ ! -x $pause ]]; then
    echo "images.sh: no pause binary in KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-}:" \
      "run ../shared/envtest/install.sh" >&2
    return 1
  fi
  cp "$pause" "$1/pause"
  cat >"$1/Containerfile" <<'EOF'
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
EOF
}

rootfs_python() {
  # PEP 668's marker removed: `pip install` works system-wide, as in the official image.
  mkrootfs "$1/rootfs.tar" python3,python3-pip,python3-venv,python-is-python3,ca-certificates,netbase \
    --customize-hook='rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED'
}
recipe_python() {
  cat >"$1/Containerfile" <<'EOF'
FROM scratch
ADD rootfs.tar /
ENV LANG=C.UTF-8 PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["python3"]
EOF
}

recipe_jobcore() {
  # Only what the Dockerfile copies, as git knows it (no .venv, caches or build output).
  local sources
  mapfile -t sources < <(awk 'toupper($1) == "COPY" && $2 !~ /^--/ {
    for (i = 2; i < NF; i++) print $i }' "$root/Dockerfile")
  cp "$root/Dockerfile" "$1/Dockerfile"
  (cd "$root" && git ls-files -co --exclude-standard -z -- "${sources[@]}" \
    | while IFS= read -r -d '' file; do [[ -e $file ]] && printf '%s\0' "$file"; done \
    | tar --null -T - -cf -) | tar -xf - -C "$1"
}

rootfs_base() {
  # Kubeflow's MPI images configure ssh so: sshd's StrictModes off (a Secret volume's directory
  # is world-writable), and ssh accepts and remembers no host keys. jobcore's kinds pass their
  # own options, which come first, and their sshd presents the job's host key: the host keys
  # openssh-server made here are every container's, for sshd started without one.
  mkrootfs "$1/rootfs.tar" openssh-server,openssh-client,iproute2,procps,netbase,ca-certificates \
    --customize-hook='chroot "$1" useradd --create-home --home-dir /home/mpiuser --uid 1000 --user-group --shell /bin/bash mpiuser' \
    --customize-hook='sed -i "s/^#\?StrictModes .*/StrictModes no/" "$1"/etc/ssh/sshd_config' \
    --customize-hook='printf "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n" >>"$1"/etc/ssh/ssh_config'
}
recipe_base() {
  # /run/sshd: sshd's privilege separation directory (mmdebstrap's tarball has an empty /run).
  cat >"$1/Containerfile" <<'EOF'
FROM scratch
ADD rootfs.tar /
RUN mkdir -m 0755 /run/sshd
ENV LANG=C.UTF-8
CMD ["/bin/bash"]
EOF
}

# framework_recipe CONTEXT NAME [RUN lines...]: FROM the parent, `scripts/frameworks.sh NAME`
# (NAME without its -nosshd) into /opt/jobcore/frameworks, then the extra shell lines.
framework_recipe() {
  local context=$1 name=$2 framework=${2%-nosshd} line
  shift 2
  mkdir -p "$context/scripts/frameworks"
  cp "$here/frameworks.sh" "$here/apt.sh" "$context/scripts/"
  cp "$here/frameworks/$framework.sh" "$context/scripts/frameworks/"
  {
    echo "FROM ${ref[${parent[$name]}]}"
    echo "COPY . /tmp/jobcore-build"
    echo "RUN JOBCORE_FRAMEWORKS=/opt/jobcore/frameworks bash /tmp/jobcore-build/scripts/frameworks.sh $framework \\"
    for line in "$@"; do echo "  && $line \\"; done
    echo "  && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/jobcore-build /tmp/jobcore-apt*"
  } >"$context/Containerfile"
}

# allreduce_lines MPICC: the RUN lines that build controllers/sandbox/allreduce.py's program (the MPI
# compiler wrappers drive the system's C compiler, which stays for programs built by hand).
allreduce_lines() {
  echo "apt-get update -qq"
  echo "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev"
  echo "mkdir -p /opt/jobcore/programs"
  echo "$1 -O1 -o /opt/jobcore/programs/allreduce /tmp/jobcore-build/allreduce.c"
}
write_allreduce() {
  python -c 'import sys; from controllers.sandbox.allreduce import SOURCE; sys.stdout.write(SOURCE)' \
    >"$1/allreduce.c"
}

recipe_openmpi4() {
  local lines
  write_allreduce "$1"
  mapfile -t lines < <(allreduce_lines /opt/jobcore/frameworks/openmpi4/home/bin/mpicc)
  framework_recipe "$1" openmpi4 "${lines[@]}"
}
recipe_mpich() {
  local lines
  write_allreduce "$1"
  mapfile -t lines < <(allreduce_lines /opt/jobcore/frameworks/mpich/home/bin/mpicc)
  framework_recipe "$1" mpich "${lines[@]}"
}
recipe_intel() { framework_recipe "$1" intel; }
recipe_colossalai() { framework_recipe "$1" colossalai; }

recipe_torch() {
  cat >"$1/Containerfile" <<EOF
FROM ${ref[base]}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \\
    --no-install-recommends python3-torch python3-venv \\
  && apt-get clean && rm -rf /var/lib/apt/lists/*
EOF
}

horovod_wheels() { compgen -G "$JOBCORE_FRAMEWORKS/wheels/horovod-*/horovod-*.whl" || true; }
recipe_horovod() {
  if [[ -z $(horovod_wheels) ]]; then
    echo "images.sh: no Horovod wheel in $JOBCORE_FRAMEWORKS/wheels (compiling it in the image" \
      "would take minutes): run scripts/frameworks.sh horovod" >&2
    return 1
  fi
  framework_recipe "$1" horovod
}

recipe_mpi-pi() {
  cp "$root"/tests/support/programs/kubeflow/{pi.c,sshd_config,ssh_config,entrypoint.sh} "$1/"
  cat >"$1/Containerfile" <<EOF
FROM ${ref[openmpi4]}
COPY . /tmp/kubeflow
RUN mpicc -O2 -o /home/mpiuser/pi /tmp/kubeflow/pi.c \\
  && chown mpiuser:mpiuser /home/mpiuser/pi \\
  && install -o mpiuser -g mpiuser -m 0644 /tmp/kubeflow/sshd_config /home/mpiuser/.sshd_config \\
  && install -m 0644 /tmp/kubeflow/ssh_config /etc/ssh/ssh_config \\
  && install -m 0755 /tmp/kubeflow/entrypoint.sh /entrypoint.sh \\
  && rm -rf /tmp/kubeflow
WORKDIR /home/mpiuser
EOF
}

# nosshd_recipe CONTEXT NAME: NAME's parent without sshd (a thin layer: the parent's stay), as
# an image made for the agent transport has none.
nosshd_recipe() {
  cat >"$1/Containerfile" <<EOF
FROM ${ref[${parent[$2]}]}
RUN dpkg --purge openssh-server >/dev/null && rm -rf /run/sshd
EOF
}
recipe_mpi-pi-nosshd() { nosshd_recipe "$1" mpi-pi-nosshd; }
recipe_mpich-nosshd() { nosshd_recipe "$1" mpich-nosshd; }
recipe_intel-nosshd() { nosshd_recipe "$1" intel-nosshd; }

# Open MPI 5 has no image with sshd: this one is made for the agent alone, on a root file system
# that never had sshd (purging it from base would keep base's layer in the tarball). The wheel's
# prefix needs only libc and zlib: the build stage's Python, pip and gcc stay behind.
rootfs_openmpi5-nosshd() {  # merged /usr made by the hook: no usrmerge, which brings Perl
  mkrootfs "$1/rootfs.tar" netbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
}
recipe_openmpi5-nosshd() {
  local lines home=/opt/jobcore/frameworks/openmpi5
  write_allreduce "$1"
  mapfile -t lines < <(allreduce_lines $home/home/bin/mpicc)
  framework_recipe "$1" openmpi5-nosshd "${lines[@]}"
  sed -i '1s/$/ AS build/' "$1/Containerfile"
  cat >>"$1/Containerfile" <<EOF
FROM scratch
ADD rootfs.tar /
COPY --from=build $home/prefix $home/prefix
COPY --from=build /opt/jobcore/programs /opt/jobcore/programs
RUN ln -s prefix $home/home
ENV LANG=C.UTF-8
CMD ["/bin/sh"]
EOF
}

# bud FILE REF [buildah bud args...]: the build of the Containerfile FILE, its folder the context.
# The host's CA bundle lets pip and apt inside trust what the host trusts; --pull=never: every
# FROM is an image built here.
bud() {
  local file=$1 reference=$2 ca=()
  shift 2
  [[ -f /etc/ssl/certs/ca-certificates.crt ]] \
    && ca=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
  nice -n 19 buildah bud --quiet "${runc[@]}" --pull=never --network=host --layers=false --force-rm \
    "${ca[@]}" "$@" -f "$file" -t "$reference" "$(dirname "$file")" >/dev/null
}

# Checks of a new image: a shell command run inside it, its output shown (pause has no shell:
# it prints its version).
declare -A checks=(
  [python]="python3 -c 'import ssl, venv, sys; print(sys.version)' && pip --version"
  [jobcore]="jobcore --help | sed -n 1,2p && /usr/local/bin/jobcore-agent version"
  [base]="/usr/sbin/sshd -t && id mpiuser && ls -ld /run/sshd /home/mpiuser && runuser -u mpiuser -- bash -c 'ssh-keygen -q -t ed25519 -N \"\" -f /tmp/key && /usr/sbin/sshd -t -p 2222 -o PidFile=none -o HostKey=/tmp/key && echo non-root sshd config ok'"
  [openmpi4]="/opt/jobcore/frameworks/openmpi4/home/bin/mpirun --version | sed -n 1p && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 /opt/jobcore/programs/allreduce"
  [mpich]="/opt/jobcore/frameworks/mpich/home/bin/mpichversion | sed -n 1p && /opt/jobcore/frameworks/mpich/home/bin/mpiexec -n 2 /opt/jobcore/programs/allreduce"
  [intel]="export PATH=/opt/jobcore/frameworks/intel/home/bin:\$PATH LD_LIBRARY_PATH=/opt/jobcore/frameworks/intel/home/lib && mpiexec -n 2 IMB-MPI1 PingPong -msglog 2 | grep -A 4 '#bytes'"
  [torch]="python3 -c 'import torch; print(\"torch\", torch.__version__, torch.distributed.is_gloo_available())'"
  [colossalai]="/opt/jobcore/frameworks/colossalai/home/bin/colossalai run --help | sed -n 1p"
  [horovod]="/opt/jobcore/frameworks/horovod/home/bin/horovodrun --check-build"
  [mpi-pi]="runuser -u mpiuser -- mpirun -np 2 /home/mpiuser/pi"
)
nosshd="! command -v sshd && ! test -e /usr/sbin/sshd && echo no sshd"
checks[mpi-pi-nosshd]="$nosshd && ! compgen -G '/usr/bin/python*' && echo no python && ${checks[mpi-pi]}"
checks[mpich-nosshd]="$nosshd && ${checks[mpich]}"
checks[intel-nosshd]="$nosshd && ${checks[intel]}"
checks[openmpi5-nosshd]="$nosshd && ! compgen -G '/usr/bin/python*' && echo no python && /opt/jobcore/frameworks/openmpi5/home/bin/mpirun --version | sed -n 1p && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 /opt/jobcore/frameworks/openmpi5/home/bin/mpirun --oversubscribe -np 2 /opt/jobcore/programs/allreduce"

run_check() {  # run_check NAME REF
  local container status=0
  local command=(bash -c "set -o pipefail; ${checks[$1]:-}")
  [[ $1 == pause ]] && command=(/pause -v)
  container=$(buildah from --pull=never --quiet "$2") || return 1
  buildah run "${runc[@]}" --network=host "$container" -- "${command[@]}" 2>&1 \
    | sed "s/^/  $1: /" || status=1
  buildah rm "$container" >/dev/null
  return "$status"
}

# stored NAME: the image in buildah's storage, from its tarball if the storage lost it.
stored() {
  buildah inspect --type image "${ref[$1]}" >/dev/null 2>&1 && return 0
  buildah pull --quiet "docker-archive:$images/$1.tar" >/dev/null
}

# build_one NAME: (re)build NAME if its inputs changed; sets hash[NAME] and ref[NAME].
declare -A hash ref
build_one() {
  local name=$1 context="$images/.work/$1" started=$SECONDS
  local up=${parent[$name]:-} old_ref="" tmp file
  rm -rf "$context" && mkdir -p "$context"
  "recipe_$name" "$context" || return 1
  hash[$name]=$(
    echo "parent ${up:+${hash[$up]}}"
    declare -f bud
    if declare -F "rootfs_$name"; then declare -f mkrootfs "rootfs_$name"; fi
    [[ $name == horovod ]] && horovod_wheels | xargs -r sha256sum
    cd "$context" && find . -type f -print0 | sort -z | xargs -0 sha256sum
  )
  hash[$name]=$(sha256sum <<<"${hash[$name]}" | cut -c1-64)
  case $name in
    jobcore) ref[$name]=docker.io/library/jobcore:$(python -c 'import sys, tomllib
print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$root/pyproject.toml") ;;
    *) ref[$name]=${fixed_ref[$name]:-localhost/jobcore-test/$name:${hash[$name]:0:12}} ;;
  esac
  if [[ -f $images/$name.tar && "$(cat "$images/$name.inputs" 2>/dev/null)" == "${hash[$name]}" ]]
  then
    rm -rf "$context"
    if [[ -n $check ]]; then stored "$name" && run_check "$name" "${ref[$name]}" || return 1; fi
    echo "images.sh: $name (${ref[$name]}): up to date" >&2
    return 0
  fi
  echo "images.sh: $name (${ref[$name]}): building" >&2
  [[ -z $up ]] || stored "$up" || return 1
  if declare -F "rootfs_$name" >/dev/null; then "rootfs_$name" "$context" || return 1; fi
  local mounts=()
  [[ $name == horovod ]] && mounts=(-v "$JOBCORE_FRAMEWORKS/wheels:/opt/jobcore/frameworks/wheels:ro")
  if [[ $name == jobcore ]]; then
    # The Dockerfile's agent stage finds the agent this host built for the same sources
    # (scripts/agent.sh's cache, by their hash) rather than installing Go in the build.
    local agent
    agent=$(bash "$root/scripts/agent.sh" | tail -n 1) || return 1
    mounts=(-v "$(dirname "$(dirname "$agent")"):/root/.cache/jobcore/agent:ro")
  fi
  file=$context/Containerfile
  [[ $name == jobcore ]] && file=$context/Dockerfile
  bud "$file" "${ref[$name]}" "${mounts[@]}" || return 1
  if ! run_check "$name" "${ref[$name]}"; then
    echo "images.sh: $name: its check failed" >&2
    buildah rmi "${ref[$name]}" >/dev/null
    return 1
  fi
  tmp="$images/.$name.tar.$$"
  rm -f "$tmp"
  buildah push --quiet "${ref[$name]}" "docker-archive:$tmp:${ref[$name]}" || return 1
  mv -f "$tmp" "$images/$name.tar"
  old_ref=$(cat "$images/$name.ref" 2>/dev/null || true)
  echo "${ref[$name]}" >"$images/.$name.ref.$$" && mv -f "$images/.$name.ref.$$" "$images/$name.ref"
  echo "${hash[$name]}" >"$images/$name.inputs"
  if [[ -n $old_ref && $old_ref != "${ref[$name]}" ]]; then
    buildah rmi "$old_ref" >/dev/null 2>&1 || true  # kept while an image built FROM it remains
  fi
  rm -rf "$context"
  echo "images.sh: $name built in $((SECONDS - started)) s" \
    "($(du -m "$images/$name.tar" | cut -f1) MB)" >&2
}

# The requested images and those they build FROM, in the order of `all`.
declare -A wanted
for name in "${names[@]}"; do
  while [[ -n $name ]]; do wanted[$name]=1 && name=${parent[$name]:-}; done
done
failed=()
for name in "${all[@]}"; do
  [[ -n ${wanted[$name]:-} ]] || continue
  up=${parent[$name]:-}
  if [[ -n $up && " ${failed[*]} " == *" $up "* ]]; then
    echo "images.sh: $name: not built, its parent $up failed" >&2
    failed+=("$name")
  elif ! build_one "$name"; then
    echo "images.sh: $name FAILED" >&2
    failed+=("$name")
  fi
done
buildah rmi --prune >/dev/null  # untagged images a rebuild left
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "images.sh: not built: ${failed[*]}" >&2
  exit 1
fi
