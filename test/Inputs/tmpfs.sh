#!/usr/bin/env bash
# tmpfs.sh SIZE DIR COMMAND...: runs COMMAND with a tmpfs of SIZE (e.g.
# 64k) mounted at DIR, then unmounts it; exits with COMMAND's status. The
# tmpfs is mounted directly where the test may mount (root, as in CI), else
# in a private mount namespace (unshare -m, or -rm as an ordinary user).
# When no way works, it fails saying so: a test of a full file system is
# never skipped.
set -u
size="$1" dir="$2"
shift 2
if [ "${TMPFS_IN_NAMESPACE:-}" = 1 ]; then
  mount -t tmpfs -o size="$size" tmpfs "$dir" || {
    echo "tmpfs.sh: cannot mount a tmpfs at $dir in a private mount namespace" >&2; exit 1; }
  exec "$@"
fi
if mount -t tmpfs -o size="$size" tmpfs "$dir" 2>/dev/null; then
  "$@"
  rc=$?
  umount "$dir"
  exit $rc
fi
for flags in -m -rm; do
  if unshare $flags true 2>/dev/null; then
    TMPFS_IN_NAMESPACE=1 exec unshare $flags bash "$0" "$size" "$dir" "$@"
  fi
done
echo "tmpfs.sh: cannot mount a tmpfs at $dir, neither directly nor with unshare -m or -rm" >&2
exit 1
