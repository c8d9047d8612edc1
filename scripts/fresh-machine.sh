#!/usr/bin/env bash
# fresh-machine.sh [ROOT]: runs the README's two commands as on a fresh
# Debian 12 machine, which has no LLVM, clang, Bazel or GoogleTest.
#
# It makes a minimal Debian 12 root with debootstrap in ROOT (default
# /var/tmp/fatlink-fresh; reused when it is there already, so a second run
# measures setup.sh's idempotence instead of a download), adds only what
# every machine of this kind has before setup.sh runs (git, ca-certificates,
# Debian's security suite, where LLVM 22 is), mounts the host's CUDA toolkit
# and rustup toolchains into it read-only, clones this checkout's HEAD into
# it, and runs, as root inside the chroot:
#
#   scripts/example.sh   # the main job: Rust + CUDA C++ -> multi-arch binary
#   scripts/test.sh      # the test suite
#
# Each prints its figures; the script fails if either fails. Needs root and
# debootstrap (apt-get install debootstrap), and network access to Debian's
# mirror and PyPI (setup.sh fetches zstd 1.5.7 and cuobjdump). Unmounts
# everything on exit, also on failure or Ctrl-C.
#
#   sudo scripts/fresh-machine.sh                 # both commands
#   sudo FRESH_COMMANDS=example scripts/fresh-machine.sh
#   sudo FRESH_KEEP=0 scripts/fresh-machine.sh    # delete ROOT afterwards
set -euo pipefail
SRC="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="${1:-/var/tmp/fatlink-fresh}"
CUDA="$(readlink -f "${CUDA_PATH:-/usr/local/cuda}")"
MIRROR="${FATLINK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
COMMANDS="${FRESH_COMMANDS:-example test}"

die() { echo "fresh-machine: error: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, bind mounts)"
command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
[ -x "$CUDA/bin/ptxas" ] || die "no CUDA toolkit at $CUDA: set CUDA_PATH"
[ -d "$HOME/.rustup" ] && [ -d "$HOME/.cargo/bin" ] || die "no rustup toolchains in $HOME/.rustup, $HOME/.cargo"

mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  if [ "${FRESH_KEEP:-1}" = 0 ]; then rm -rf --one-file-system "$ROOT"; fi
}
trap cleanup EXIT
bind() { # bind SRC DEST [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounts+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

start=$(date +%s)
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  echo "fresh-machine: debootstrap bookworm into $ROOT"
  debootstrap --variant=minbase --include=git,ca-certificates \
    bookworm "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
    die "debootstrap failed: see $ROOT.debootstrap.log"
  cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
  echo "fresh-machine: root made in $(( $(date +%s) - start )) s"
fi
for tool in clang-22 bazel ld.lld-22 llvm-link-22; do
  [ ! -e "$ROOT/usr/bin/$tool" ] || echo "fresh-machine: note: $ROOT already has $tool (a reused root: setup.sh's idempotence is what is checked)"
done

bind /proc "$ROOT/proc"
bind /sys "$ROOT/sys"
bind /dev "$ROOT/dev"
bind /dev/pts "$ROOT/dev/pts"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# The machine's own network setup, which every machine of this kind has
# before setup.sh runs: extra CA certificates (an egress proxy's) and pip's
# configuration.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
  chroot "$ROOT" update-ca-certificates >/dev/null 2>&1 ||
    die "update-ca-certificates failed in $ROOT"
fi
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$ROOT/etc/pip.conf"
bind "$CUDA" "$ROOT$CUDA" ro
[ "$CUDA" = /usr/local/cuda ] || ln -sfn "$CUDA" "$ROOT/usr/local/cuda"
bind "$HOME/.rustup" "$ROOT/root/.rustup" ro
# cargo writes its registry cache under ~/.cargo: the toolchain's bin/ is
# mounted, the rest is the fresh machine's own.
bind "$HOME/.cargo/bin" "$ROOT/root/.cargo/bin" ro

rm -rf "$ROOT/root/fatlink"
git -C "$SRC" rev-parse HEAD >/dev/null
git clone -q "$SRC" "$ROOT/root/fatlink"
git -C "$ROOT/root/fatlink" checkout -q "$(git -C "$SRC" rev-parse HEAD)"
echo "fresh-machine: testing $(git -C "$SRC" rev-parse --short HEAD) in $ROOT"

status=0
for c in $COMMANDS; do
  t0=$(date +%s)
  echo "fresh-machine: scripts/$c.sh"
  if chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      ${SSL_CERT_FILE:+SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt} \
      ${PIP_CERT:+PIP_CERT=/etc/ssl/certs/ca-certificates.crt} \
      ${CURL_CA_BUNDLE:+CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt} \
      PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /root/fatlink && scripts/$c.sh"; then
    echo "fresh-machine: scripts/$c.sh passed in $(( $(date +%s) - t0 )) s"
  else
    echo "fresh-machine: scripts/$c.sh FAILED after $(( $(date +%s) - t0 )) s"
    status=1
  fi
done
# Bazel's server would keep the chroot's mounts busy.
chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin bash -c \
  'cd /root/fatlink && command -v bazel >/dev/null && bazel shutdown' 2>/dev/null || true
exit $status
