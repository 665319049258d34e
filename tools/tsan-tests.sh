#!/usr/bin/env bash
# The tests whose threads share state, built with ThreadSanitizer (docs/engine.md "Checking the
# threads"): the engine loop with its compute helper, output stage and event dispatcher, the
# tensor-parallel ranks, the HTTP and gRPC servers driven by the real Python clients. Builds only
# what they need into build-tsan/ (RelWithDebInfo, CUDA off) and runs them; a race report fails
# the run (TSAN's exit code 66; the e2e harness fails a test whose server log holds a report).
# Called by tools/run-tests.sh after the main build's tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${TESSERA_TSAN_BUILD_DIR:-$here/build-tsan}
tests=(engine_abort_test engine_batching_test engine_stops_test engine_generation_guard_test
       engine_preemption_test prefix_cache_test helper_tasks_test thread_handoff_test
       tp_communicator_test tp_equivalence_test http_server_test http_serving_test ab_live_test
       serve_generation_metrics_test)

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_CUDA=OFF \
  -DTESSERA_FUZZ=OFF -DTESSERA_PYTHON="${TESSERA_VENV:-$here/.venv}/bin/python" \
  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread >/dev/null
# tessera_e2e_model builds the binary and every plugin too.
cmake --build "$build" -j "${TESSERA_JOBS:-$(nproc)}" --target "${tests[@]}" tessera_e2e_model

# tools/tsan.supp, plus every library of the gRPC frontend's uninstrumented stack (one line each:
# a called_from_lib pattern must match exactly one library).
supp="$build/tsan.supp"
cat "$here/tools/tsan.supp" >"$supp"
if [ -f "$build/plugins/libtessera_frontend_grpc.so" ]; then
  ldd "$build/plugins/libtessera_frontend_grpc.so" |
    awk '/=> \/.*(grpc|gpr|upb|absl|protobuf|address_sorting|re2|cares|ssl|crypto)/ {
           n = $3; sub(".*/", "", n); print "called_from_lib:" n }' >>"$supp"
fi
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 suppressions=$supp"
# GCC 12's TSAN maps its shadow at fixed addresses; with ASLR off (where the sandbox allows it)
# no kernel's mmap randomisation can collide with them.
run=()
if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R); fi

failed=()
for t in "${tests[@]}"; do
  echo "tsan: $t"
  "${run[@]}" "$build/tests/$t" --gtest_brief=1 || failed+=("$t")
done
(cd "$build" && "${run[@]}" ctest -L e2e --output-on-failure) || failed+=(e2e)
if [ ${#failed[@]} -gt 0 ]; then
  echo "tsan: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "tsan: every threaded test passed without a race report"
