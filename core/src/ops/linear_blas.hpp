// The OpenBLAS path of ops::linear (linear.hpp): CPUs without AVX-512, and TESSERA_GEMM=blas. It
// multiplies fp32 rows only, so bf16 weights are widened and weights in panels unpacked into a
// per-thread copy on every call (the fallback pays that; our kernel reads both where they lie).
#pragma once

#include "ops/gemm_nt.hpp"

namespace tessera::ops {

// y = x . W^T for the product a describes (W as rows, fp32 or bf16, or in panels).
void linear_blas(GemmNtArgs a);

}  // namespace tessera::ops
