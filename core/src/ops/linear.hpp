// Dense fp32 linear layers. Linear weights are [out, in] row-major, as stored in DeepSeek
// checkpoints. Our batch-invariant kernel runs (gemm_nt.hpp), split over compute_threads(): the
// AVX-512 one where the CPU has it, else the AVX2 + FMA one; on a CPU with neither, or with
// TESSERA_GEMM=blas in the environment, OpenBLAS does (TESSERA_GEMM=avx2: the AVX2 kernel even
// where AVX-512 exists).
#pragma once

#include <cstdint>
#include <span>

#include "ops/gemm_nt.hpp"
#include "ops/row_scan.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {

// kAuto: the AVX-512 kernel where the CPU has it, else the AVX2 one, else BLAS. kAvx2: the AVX2
// kernel (else BLAS) even where AVX-512 exists (tests, A/B of the kernels).
enum class GemmBackend { kAuto, kAvx2, kBlas };

// Process-wide; for tests and A/B of the kernels. The default comes from TESSERA_GEMM.
void set_gemm_backend(GemmBackend backend);
const char* gemm_backend_name();  // "avx512", "avx2" or "openblas": what linear() runs now
// True when linear() reads bf16 weights at full speed (our kernel widens them in registers); the
// OpenBLAS fallback widens a copy of W on every call, so bf16 storage only pays with our kernel.
bool gemm_reads_bf16_weights();
// True when linear() reads weights packed into panels (pack_weight_panels): our kernels do.
bool gemm_reads_panels();

// y[rows, out] = x[rows, in] . W^T          (W: [out, in])
void linear(const float* x, int64_t rows, const dsv4::Tensor& w, float* y);

// linear(), and scans[r] = the RowScan of row r of y, each column range scanned by the thread that
// wrote it right after writing it (the vocabulary head: a greedy sampler's answer without a pass
// over y from memory). Same y as linear(). scans: [rows]; group_max (optional, empty or
// [rows, TS_LOGIT_GROUP_COUNT(out)]): each row's column-group maxima, found in the same pass.
void linear_scanned(const float* x, int64_t rows, const dsv4::Tensor& w, float* y,
                    std::span<RowScan> scans, std::span<float> group_max = {});
// y[rows, out] = x[rows, in] . W^T with explicit leading dimensions (for grouped projections):
// x rows are ldx apart, y rows ldy apart, W is [out, in] with rows ldw apart.
void linear_strided(const float* x, int64_t rows, int64_t in, int64_t ldx, const float* w,
                    int64_t out, int64_t ldw, float* y, int64_t ldy);

// The argument block of y[rows, out] = x . W^T for rows [first_row, first_row + out) of w (all of
// it by default), in whichever storage w has (fp32 or bf16); for linear_group.
GemmNtArgs weight_product(const float* x, int64_t rows, int64_t ldx, const dsv4::Tensor& w,
                          float* y, int64_t ldy, int64_t first_row = 0, int64_t out = -1);

// The same product over input columns [first, first + count) only (x's and W's; rows, ldx, ldw
// unchanged): one part of a sum over the inner dimension (executor.reduction_parts).
GemmNtArgs input_columns(GemmNtArgs a, int64_t first, int64_t count);

// Several products in one parallel pass: their column blocks are shared over the compute threads
// together, so a batch of small GEMMs (a MoE layer's experts, the projections that read the same
// x) costs one hand-off to the helpers instead of one each, and a thread that finishes its share
// of one product goes on with the next. Same bits as linear_strided on each (the kernel's results
// do not depend on the column split).
void linear_group(std::span<const GemmNtArgs> gemms);

}  // namespace tessera::ops
