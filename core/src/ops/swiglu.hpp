// The SwiGLU between an expert's w1 / w3 and w2: h = silu(min(g, L)) * clamp(u, -L, L), silu(x) =
// x / (1 + exp(-x)), L = swiglu_limit (none when 0). On AVX-512 CPUs 16 at a time, exp from
// glibc's vector math library (libmvec, _ZGVeN16v_expf: within 1 ulp of expf, glibc's
// libm-test-ulps), elsewhere with std::exp: a 64-sequence step of the 50m preset takes
// 48K exps per layer here, and one at a time they cost ~0.6 ms of a ~23 ms step.
#pragma once

#include <cstdint>

namespace tessera::ops {

// g[i] = silu(min(g[i], limit)) * clamp(u[i], -limit, limit) for i < count (limit 0: no clamp).
void swiglu(float* g, const float* u, int64_t count, float limit);

// The same, one value at a time with std::exp: the reference, and the path without AVX-512.
void swiglu_scalar(float* g, const float* u, int64_t count, float limit);

}  // namespace tessera::ops
