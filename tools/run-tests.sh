#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs every test (ctest), then the
# threaded tests again under ThreadSanitizer and, with the kernels' tests, under AddressSanitizer
# (tools/sanitizer-tests.sh; skipped when arguments for ctest are given, or with
# TESSERA_SANITIZERS=0). Ends with a table of the seconds each phase took, also when a phase
# fails, on stdout so that it shows in CI's log.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# One "<phase>\t<seconds>\t<ok|failed>" line per phase; sanitizer-tests.sh adds its build and run.
TESSERA_PHASE_LOG=$(mktemp)
export TESSERA_PHASE_LOG
run_start=$(date +%s.%N)

print_phase_table() {
  local rc=$? total
  total=$(awk -v a="$run_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo
  echo "== tools/run-tests.sh: seconds per phase =="
  awk -F'\t' '{ printf "  %-11s %8.1f  %s\n", $1, $2, $3 }' "$TESSERA_PHASE_LOG"
  printf "  %-11s %8.1f  %s\n" total "$total" "$([ "$rc" = 0 ] && echo ok || echo "failed (exit $rc)")"
  rm -f "$TESSERA_PHASE_LOG"
}
trap print_phase_table EXIT

# phase NAME COMMAND...: runs the command, records its seconds and status, returns its status.
phase() {
  local name=$1 start rc=0
  shift
  start=$(date +%s.%N)
  "$@" || rc=$?
  awk -v n="$name" -v a="$start" -v b="$(date +%s.%N)" -v s="$([ $rc = 0 ] && echo ok || echo failed)" \
    'BEGIN { printf "%s\t%.1f\t%s\n", n, b - a, s }' >>"$TESSERA_PHASE_LOG"
  return $rc
}

run_ctest() (
  cd "${TESSERA_BUILD_DIR:-$here/build}" && ctest --output-on-failure -j "${TESSERA_JOBS:-$(nproc)}" "$@"
)

phase deps "$here/tools/install-deps.sh"
phase build "$here/tools/build.sh" -DTESSERA_FUZZ=ON
phase ctest run_ctest "$@"
if [ $# -eq 0 ] && [ "${TESSERA_SANITIZERS:-1}" != 0 ]; then
  "$here/tools/sanitizer-tests.sh" thread   # records "tsan build" and "tsan run"
  "$here/tools/sanitizer-tests.sh" address  # records "asan build" and "asan run"
fi
