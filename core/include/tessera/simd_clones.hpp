// TS_SIMD_CLONES: compile a hot loop once per x86 vector ISA and pick the clone at load time.
//
// The tree is built for the baseline x86-64 ISA (SSE2) so one binary runs everywhere; a function
// marked TS_SIMD_CLONES is also compiled for AVX2 and for AVX-512F, and the dynamic loader binds
// the best one this CPU has (GCC target_clones, an ifunc). Only loops the compiler can vectorise
// gain. The clones name ISA extensions, not an -march level: FMA is not among them, so no product
// is contracted into an FMA and every clone computes the same bits as the SSE2 one (the compiler
// never reorders float additions on its own); and ordinary helpers still inline into them (GCC
// does not inline across different -march settings).
// Elsewhere (other compilers, other architectures) it expands to nothing.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TS_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TS_SIMD_CLONES
#endif
