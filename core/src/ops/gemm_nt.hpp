// Y = X . W^T for W in its checkpoint layout [out, in] (row-major, no repacking), fp32.
//
// Why our own kernel next to OpenBLAS: a batched decode step multiplies 2..64 activation rows by
// every weight. OpenBLAS packs the whole weight on every call (its `incopy` took 18% of a 64-row
// step, the kernel itself 31%) and its idle threads spin in sched_yield (another ~20%); with rows
// this few, packing costs about as much as the arithmetic. This kernel reads W where it lies.
//
// Method ("dot-product" register blocking): a 4x4 block of outputs keeps 16 AVX-512 accumulators,
// acc[i][j] lane l = sum over k = l (mod 16), k ascending, of x[m_i][k] * w[n_j][k]; then a fixed
// shuffle tree sums the 16 lanes. Every output is computed by the same operations in the same
// order wherever it sits, so results do not depend on the number of rows, their neighbours, the
// block an output falls in or the thread split: the kernel is batch-invariant (a sequence's
// logits are the same alone or in a batch of 64).
#pragma once

#include <cstdint>

namespace tessera::ops {

struct GemmNtArgs {
  const float* x;  // [rows, in], rows ldx apart
  int64_t rows, in, ldx;
  const float* w;  // [out, in], rows ldw apart
  int64_t out, ldw;
  float* y;  // [rows, out], rows ldy apart
  int64_t ldy;
  // When set, W is read from here instead of w: the same [out, in] matrix (ldw apart) in bf16.
  const uint16_t* w_bf16 = nullptr;
  // bf16 activations: when set (w_bf16 must be too), x is read from here instead, [rows, in] in
  // bf16 rows ldx apart, and the products run on AMX tiles where gemm_nt_amx_available(), else on
  // vdpbf16ps (requires gemm_nt_bf16_available()).
  const uint16_t* x_bf16 = nullptr;
  // W packed into panels (pack_weight_panels; w is then null), fp32 or bf16, read by the
  // outer-product kernel (gemm_nt_panels.cpp) when x is fp32: the panel holding output column 0
  // at its first k, panels panel_stride values apart; output column c is the panels' column
  // c + panel_col0 (a product over rows of W that do not start a panel). Its sums are not the
  // dot-product kernel's bits.
  const float* w_panels = nullptr;
  const uint16_t* w_panels_bf16 = nullptr;
  int64_t panel_stride = 0, panel_col0 = 0;
  // When set, the panel walk asks these bytes into L2 while it computes its last chunk: the start
  // of the W the calling thread is expected to read next (linear_detail::ask_for_next_item).
  const char* prefetch_next = nullptr;
  int64_t prefetch_next_bytes = 0;
  bool in_panels() const { return w_panels != nullptr || w_panels_bf16 != nullptr; }
};

// Weight panels: W [out, in] as ceil(out / 16) panels of [in, 16] (16 outputs side by side for
// each k, the last panel zero-padded), 64-byte aligned where `panels` is.
inline constexpr int64_t kWeightPanelWidth = 16;
// The panel kernels walk W in chunks of about this many bytes (L2-sized; gemm_panel_walk.hpp), and
// a work item's first chunk is what the item before it asks for (GemmNtArgs::prefetch_next).
inline constexpr int64_t kPanelChunkBytes = int64_t{128} * 1024;
inline int64_t weight_panel_count(int64_t out) {
  return (out + kWeightPanelWidth - 1) / kWeightPanelWidth;
}
// panels[weight_panel_count(out) * in * 16] = W [out, in] (row-major) in panels.
void pack_weight_panels(const float* w, int64_t out, int64_t in, float* panels);
void pack_weight_panels(const uint16_t* w, int64_t out, int64_t in, uint16_t* panels);
// w[out, in] (rows ldw apart) = output columns [col0, col0 + out) of panels panel_stride values
// apart, over `in` k from the one w_panels starts at: the inverse, for OpenBLAS and slicing.
void unpack_weight_panels(const float* w_panels, int64_t panel_stride, int64_t col0, int64_t out,
                          int64_t in, float* w, int64_t ldw);
void unpack_weight_panels(const uint16_t* w_panels, int64_t panel_stride, int64_t col0, int64_t out,
                          int64_t in, uint16_t* w, int64_t ldw);

// Rows of x per register block of the AVX-512 kernel (6 x 4 outputs): a split of the rows at
// multiples of it keeps every block whole.
inline constexpr int kGemmNtRowsPerBlock = 6;

// True when this CPU runs the AVX-512 kernel (AVX-512 F + DQ).
bool gemm_nt_avx512_available();

// True when this CPU runs the AVX2 + FMA kernels (gemm_nt_avx2.cpp: the dot-product method on 8
// lanes, batch-invariant too, other bits; gemm_nt_panels_avx2.cpp: the panel kernel, the same
// bits), which linear() uses where AVX-512 is missing; with neither, callers use BLAS.
bool gemm_nt_avx2_available();

// True when the CPU also runs the bf16-activation kernel (AVX512_BF16 and BW).
bool gemm_nt_bf16_available();

// True when bf16-activation products run on AMX tiles instead (gemm_nt_amx.cpp): TESSERA_AMX=1
// in the environment (opt-in: ~2x the batched throughput, ~30% slower batch 1), the CPU has
// AMX-BF16 and AMX-TILE, and Linux granted the tile state. Its sums are not the vdpbf16ps
// kernel's bits; every product of the process then uses it.
bool gemm_nt_amx_available();

// out[rows, in] (dense) = x rounded to bf16, nearest even. Requires gemm_nt_bf16_available().
void round_rows_to_bf16(const float* x, int64_t rows, int64_t in, int64_t ldx, uint16_t* out);

// Both kernels walk W in chunks of this many rows (a multiple of 4) and prefetch the next chunk
// of their range while computing one: a range of several chunks streams W best.
int64_t gemm_nt_cols_per_chunk(int64_t rows, int64_t in);

// Computes output columns [n_begin, n_end) of Y for all rows. Requires gemm_nt_avx512_available().
// Splitting [0, out) into ranges at multiples of 4 and calling this on each (from any threads)
// gives the same bits as one call.
void gemm_nt_avx512(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

// The same on the AVX2 kernels, for fp32 x (not bf16 x) and W in rows or panels, fp32 or bf16.
// Requires gemm_nt_avx2_available().
void gemm_nt_avx2(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);

}  // namespace tessera::ops
