#include "ops/linear_blas.hpp"

#include <cblas.h>

#include <bit>
#include <cstdint>
#include <vector>

namespace tessera::ops {
namespace {

// W rows widened from bf16 for OpenBLAS, which only multiplies fp32 (the fallback path).
const float* widened_w(const GemmNtArgs& a) {
  thread_local std::vector<float> w;
  w.resize(static_cast<size_t>(a.out * a.in));
  for (int64_t n = 0; n < a.out; ++n) {
    const uint16_t* src = a.w_bf16 + n * a.ldw;
    for (int64_t k = 0; k < a.in; ++k) {
      w[static_cast<size_t>(n * a.in + k)] = std::bit_cast<float>(uint32_t{src[k]} << 16);
    }
  }
  return w.data();
}

// W's rows unpacked from panels (into `a` as w or w_bf16, rows in apart) for OpenBLAS (the
// fallback path).
void unpack_w(GemmNtArgs& a) {
  thread_local std::vector<float> w;
  thread_local std::vector<uint16_t> w16;
  if (a.w_panels != nullptr) {
    w.resize(static_cast<size_t>(a.out * a.in));
    unpack_weight_panels(a.w_panels, a.panel_stride, a.panel_col0, a.out, a.in, w.data(), a.in);
    a.w = w.data();
  } else {
    w16.resize(static_cast<size_t>(a.out * a.in));
    unpack_weight_panels(a.w_panels_bf16, a.panel_stride, a.panel_col0, a.out, a.in, w16.data(),
                         a.in);
    a.w_bf16 = w16.data();
  }
  a.ldw = a.in;
  a.w_panels = nullptr;
  a.w_panels_bf16 = nullptr;
}

}  // namespace

void linear_blas(GemmNtArgs a) {
  if (a.in_panels()) {
    unpack_w(a);
  }
  if (a.w_bf16 != nullptr) {
    a.w = widened_w(a);
    a.ldw = a.in;
    a.w_bf16 = nullptr;
  }
  if (a.rows == 1) {  // decode: a matrix-vector product reads W once, the bandwidth-bound case
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(a.out), static_cast<int>(a.in), 1.0f,
                a.w, static_cast<int>(a.ldw), a.x, 1, 0.0f, a.y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.rows),
              static_cast<int>(a.out), static_cast<int>(a.in), 1.0f, a.x, static_cast<int>(a.ldx),
              a.w, static_cast<int>(a.ldw), 0.0f, a.y, static_cast<int>(a.ldy));
}

}  // namespace tessera::ops
