// TS_SIMD_CLONES: compile a hot loop once per x86 vector ISA and pick the clone at load time.
//
// The tree is built for the baseline x86-64 ISA (SSE2) so one binary runs everywhere; a function
// marked TS_SIMD_CLONES is also compiled for AVX2 + FMA and for AVX-512, and the dynamic loader
// binds the best one this CPU has (GCC target_clones, an ifunc). Only loops the compiler can
// vectorise gain; the source's order of additions is kept, though FMA contraction may round the
// AVX2 / AVX-512 clones' products differently from the SSE2 one (within an ulp per product).
// Elsewhere (other compilers, other architectures) it expands to nothing.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TS_SIMD_CLONES
#endif
