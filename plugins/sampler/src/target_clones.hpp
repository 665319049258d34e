// TS_SAMPLER_CLONES: one clone of a hot loop per x86-64 level — 2 (SSE2), 4 (AVX2 + FMA) or 8
// (AVX-512) lanes per instruction — the loader picks the clone for the running CPU (GNU ifunc).
// Files using it are compiled with -fno-trapping-math (plugins/sampler/CMakeLists.txt), without
// which GCC leaves clamps and comparisons scalar; no FP trap is ever enabled in the process, so
// results are unchanged. Elsewhere (clang, other CPUs, ThreadSanitizer builds: see
// tessera/simd_clones.hpp) it expands to nothing.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TS_SAMPLER_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TS_SAMPLER_CLONES
#endif

// Whether the running CPU has AVX-512 F: the hand-written AVX-512 kernels (row scan, top-p heavy
// pass) run only then; otherwise their portable versions. Asked once.
inline bool cpu_has_avx512f() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

// Whether the running CPU has AVX2 (and so FMA and POPCNT: every x86-64-v3 CPU): the AVX2 stream
// compactions of the top-p search (compress_avx2.hpp) run only then. Asked once.
inline bool cpu_has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}
