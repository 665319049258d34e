#include "ops/linear.hpp"

#include <cblas.h>

#include "util/check.hpp"

namespace tessera::ops {

void linear_strided(const float* x, int64_t rows, int64_t in, int64_t ldx, const float* w,
                    int64_t out, int64_t ldw, float* y, int64_t ldy) {
  if (rows == 0 || out == 0) return;
  if (rows == 1) {  // decode: a matrix-vector product reads W once, the bandwidth-bound case
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(out), static_cast<int>(in), 1.0f, w,
                static_cast<int>(ldw), x, 1, 0.0f, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
              static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(ldx), w,
              static_cast<int>(ldw), 0.0f, y, static_cast<int>(ldy));
}

void linear(const float* x, int64_t rows, const dsv4::Tensor& w, float* y) {
  TS_CHECK(w.shape.size() == 2, "linear: weight must be 2-D, has {} dims", w.shape.size());
  const int64_t out = w.shape[0], in = w.shape[1];
  linear_strided(x, rows, in, in, w.ptr(), out, in, y, out);
}

}  // namespace tessera::ops
