#!/usr/bin/env bash
# Test setup for the tests that use NVIDIA's cuobjdump, which the CUDA image
# lacks: installs the nvidia-cuda-cuobjdump wheel (which ships
# nvidia/cu13/bin/cuobjdump) into the test's temporary directory with pip,
# then runs the test binary given as $1 with CUOBJDUMP pointing at it.
# A missing pip or network is a failure, never a skip.
set -euo pipefail
test_binary=$1
shift
dir="${TEST_TMPDIR:?}/cuobjdump-wheel"
# The interpreter itself, not a pyenv shim (the shim's rehash after an
# install fails on a read-only home).
python=$(python3 -c 'import sys; print(sys.executable)')
if ! "$python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$dir" "nvidia-cuda-cuobjdump==13.2.86" >"$dir.log" 2>&1; then
  cat "$dir.log" >&2
  echo "error: pip could not install nvidia-cuda-cuobjdump (needs python3 -m pip and PyPI or a pip cache)" >&2
  exit 1
fi
export CUOBJDUMP="$dir/nvidia/cu13/bin/cuobjdump"
if [ ! -x "$CUOBJDUMP" ]; then
  echo "error: the nvidia-cuda-cuobjdump wheel has no $CUOBJDUMP" >&2
  exit 1
fi
exec "$test_binary" "$@"
