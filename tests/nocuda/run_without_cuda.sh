#!/bin/sh
# run_without_cuda.sh COMMAND [ARGS...]
# Runs COMMAND on a machine that, as far as the dynamic loader can tell, has no NVIDIA libraries:
# LD_LIBRARY_PATH is cleared and, inside a private mount namespace (unshare -m, needs root or
# CAP_SYS_ADMIN), every CUDA library directory known to ld.so.cache or under /usr/local/cuda* is
# covered by an empty directory, and CUDA libraries in shared system directories (a driver's
# libcuda.so.1 in /usr/lib/...) by an empty file. Before running COMMAND it checks that none of
# those libraries is still readable, so a test using this cannot pass by accident.
#
# Exit status: COMMAND's, or 97 when the hiding could not be verified.
# Without unshare/root it prints a NOTE, clears LD_LIBRARY_PATH only, and sets
# TESSERA_NOCUDA_HIDDEN=0 for the caller to see (1 when the libraries are really hidden).
set -eu

CUDA_LIBS='lib(cuda|cudart|cublas|cublasLt|nccl|cudnn[a-z_]*|nvrtc|nvJitLink|nvidia-ml|curand|cufft|cusparse|cusolver)(\.alt)?\.so'

if [ "${TESSERA_NOCUDA_INSIDE:-}" = 1 ]; then
  # ---- inside the namespace: hide, verify, run
  empty_dir=$TESSERA_NOCUDA_EMPTY/dir
  empty_file=$TESSERA_NOCUDA_EMPTY/file
  hidden=""
  hide() {  # $1: path to cover (directory or file); idempotent
    case " $hidden " in *" $1 "*) return ;; esac
    if [ -d "$1" ]; then mount --bind "$empty_dir" "$1"; else mount --bind "$empty_file" "$1"; fi
    hidden="$hidden $1"
  }
  for d in /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/*/lib; do
    [ -d "$d" ] && hide "$(readlink -f "$d")"
  done
  listed=$(ldconfig -p | sed -n 's/^.*=> //p' | grep -E "/$CUDA_LIBS" || true)
  for lib in $listed; do
    [ -e "$lib" ] || continue
    real=$(readlink -f "$lib")
    dir=$(dirname "$real")
    case "$dir" in
      *cuda* | *nvidia* | *nvvm*) hide "$dir" ;;
      *) hide "$real" ;;
    esac
  done
  for lib in $listed; do
    if [ -s "$lib" ]; then
      echo "run_without_cuda: $lib is still readable after hiding" >&2
      exit 97
    fi
  done
  echo "run_without_cuda: hidden:$hidden" >&2
  export TESSERA_NOCUDA_HIDDEN=1
  exec env -u LD_LIBRARY_PATH -u TESSERA_NOCUDA_INSIDE -u TESSERA_NOCUDA_EMPTY "$@"
fi

if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
  unshare -m --propagation private true 2>/dev/null; then
  # The covers live outside the namespace so they can be removed once it is gone.
  TESSERA_NOCUDA_EMPTY=$(mktemp -d)
  mkdir "$TESSERA_NOCUDA_EMPTY/dir" && : >"$TESSERA_NOCUDA_EMPTY/file"
  export TESSERA_NOCUDA_EMPTY
  rc=0
  TESSERA_NOCUDA_INSIDE=1 unshare -m --propagation private "$0" "$@" || rc=$?
  rm -rf "$TESSERA_NOCUDA_EMPTY"
  exit $rc
fi
echo "run_without_cuda: NOTE: no mount namespace here (needs root and unshare); CUDA libraries" \
  "stay reachable through ld.so.cache, only LD_LIBRARY_PATH is cleared" >&2
export TESSERA_NOCUDA_HIDDEN=0
exec env -u LD_LIBRARY_PATH "$@"
