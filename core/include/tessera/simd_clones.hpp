// TS_SIMD_CLONES: compile a hot loop once per x86 vector ISA and pick the clone at load time.
//
// The tree is built for the baseline x86-64 ISA (SSE2) so one binary runs everywhere; a function
// marked TS_SIMD_CLONES is also compiled for x86-64-v3 (AVX2 + FMA) and for AVX-512F, and the
// dynamic loader binds the best one this CPU has (GCC target_clones, an ifunc). Only loops the
// compiler can vectorise gain. The v3 clone is "arch=x86-64-v3", not "avx2": an "avx2" clone has
// no FMA instructions, so each std::fma in it is a call into libm (on a 2-core Zen 3 such fmaf
// calls from the reference attention's plain loops take 13% of a 64-row step of the 50m model).
// Both clones have FMA instructions, and GCC's C++ default (-ffp-contract=fast, even with
// -std=c++20) contracts a product and a sum into one there, so an AVX2 or AVX-512 CPU's results
// may differ in the last bits from an SSE2 one's (this tree's clones: hc pre/post mix, rms scale,
// the MoE's combine). Where the bits must be the same on every CPU, compile the file with
// -ffp-contract=off (the sampler's rejection-draw exp, the reference attention). Ordinary helpers
// still inline into the clones (GCC does not inline across different -march settings).
// Elsewhere (other compilers, other architectures) it expands to nothing, and so it does under
// ThreadSanitizer: the loader runs an ifunc's resolver before the sanitizer's runtime is up, and an
// instrumented resolver crashes the process before main (docs/engine.md "Checking the threads").
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define TS_SIMD_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define TS_SIMD_CLONES
#endif
