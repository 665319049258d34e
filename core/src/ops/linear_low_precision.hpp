// DeepSeek-V4's low-precision linear layers on the CPU, W8A8 as the official inference code
// computes them: x quantised to e4m3 per 1x128 block with a power-of-two scale, times W in
// e4m3 with UE8M0 128x128 block scales (the FP8 layers), or in e2m1 with UE8M0 per-32 scales (the
// routed experts). The device layer's cpu backend runs them (device/cpu_device.cpp).
//
// Fast path: every e4m3 or e2m1 value times a power-of-two scale is a bf16 number, and every
// quantised activation times its scale an fp32 one, so the product is the fp32 GEMM of the
// decoded activations with W decoded to bf16, scales folded in: each output's products are the
// definition's, exactly; only the order of its fp32 sum differs. W is decoded a few rows at a time
// (ops/low_precision_decode.hpp) into a buffer each thread keeps in its cache and multiplied
// there by our GEMM kernel (ops/gemm_nt.hpp): never expanded in memory. Where our kernels do not
// run (OpenBLAS), the reference below runs instead.
#pragma once

#include <cstdint>

namespace tessera::ops {

// y[rows, out] = x[rows, in] . W^T; W [out, in] e4m3, w_scale [ceil(out/128), ceil(in/128)].
void linear_fp8(const float* x, int64_t rows, int64_t in, const uint8_t* w, const uint8_t* w_scale,
                int64_t out, float* y);
// The same against W [out, in / 2] packed e2m1 (low nibble first), w_scale [out, in / 32];
// in % 32 == 0.
void linear_fp4(const float* x, int64_t rows, int64_t in, const uint8_t* w, const uint8_t* w_scale,
                int64_t out, float* y);

// Every expert's product at once (a MoE layer's routed experts): y[r] = x[r] . W_e^T for rows r
// in [offsets[e], offsets[e + 1]), e < experts, each W_e and its scales as above. One parallel
// pass over all experts' tiles; each row's output is linear_fp8's / linear_fp4's, bit for bit.
void grouped_linear_fp8(const float* x, int64_t in, const uint8_t* const* weights,
                        const uint8_t* const* scales, int64_t experts, const int64_t* offsets,
                        int64_t out, float* y);
void grouped_linear_fp4(const float* x, int64_t in, const uint8_t* const* weights,
                        const uint8_t* const* scales, int64_t experts, const int64_t* offsets,
                        int64_t out, float* y);

// The definitions, written out (the oracle of the fast path's tests): per 128-input block the
// fp32 sum of the quantised activations times the decoded weights, in input order, scaled by
// both blocks' scales (FP4: each 32-input group's sum scaled by its weight scale first).
void linear_fp8_reference(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y);
void linear_fp4_reference(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y);

}  // namespace tessera::ops
