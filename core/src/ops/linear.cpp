#include "ops/linear.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "util/check.hpp"

namespace tessera::ops {
namespace {

// Work is shared in items of at least this many multiply-adds (a few microseconds: an item costs
// one atomic increment, a helper's hand-off about a microsecond).
constexpr int64_t kMinMaddsPerItem = int64_t{64} * 1024;
// Two items per thread: a late helper costs at most half a share, and each item is long enough
// that most of its chunks are prefetched (measured on the 50m step: 1, 2, 4 per thread ->
// 24.7-26.2, 24.6-24.9, 25.6-28.3 ms).
constexpr int64_t kItemsPerThread = 2;

GemmBackend initial_backend() {
  const char* env = std::getenv("TESSERA_GEMM");
  if (env != nullptr && std::string_view(env) == "blas") {
    return GemmBackend::kBlas;
  }
  return GemmBackend::kAuto;
}

std::atomic<GemmBackend> g_backend{initial_backend()};

bool use_avx512() {
  return g_backend.load(std::memory_order_relaxed) == GemmBackend::kAuto &&
         gemm_nt_avx512_available();
}

void linear_blas(const GemmNtArgs& a) {
  if (a.rows == 1) {  // decode: a matrix-vector product reads W once, the bandwidth-bound case
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(a.out), static_cast<int>(a.in), 1.0f,
                a.w, static_cast<int>(a.ldw), a.x, 1, 0.0f, a.y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.rows),
              static_cast<int>(a.out), static_cast<int>(a.in), 1.0f, a.x, static_cast<int>(a.ldx),
              a.w, static_cast<int>(a.ldw), 0.0f, a.y, static_cast<int>(a.ldy));
}

// Our kernel over compute_threads() threads.
void linear_avx512(GemmNtArgs a) {
  // Rows of x a multiple of 4 KiB apart (a head group's slice of [T, H * Dh]) all fall into the
  // same L1 sets and evict each other while every block of W meets them: copy them together
  // first (rows * in floats, against rows * in * out multiply-adds).
  thread_local std::vector<float> packed_x;
  if (a.rows > 1 && a.ldx != a.in) {
    packed_x.resize(static_cast<size_t>(a.rows * a.in));
    for (int64_t m = 0; m < a.rows; ++m) {
      std::copy_n(a.x + m * a.ldx, a.in, packed_x.begin() + m * a.in);
    }
    a.x = packed_x.data();
    a.ldx = a.in;
  }
  // Shared out in items of whole W chunks, two or more chunks per item where there are enough,
  // so each thread's kernel call can prefetch its next chunk while computing one. A W of fewer
  // chunks than threads (few, long rows: the hyper-connection mix, 24 x 2048) is split by 4-row
  // blocks instead.
  const int threads = compute_threads();
  int64_t unit = gemm_nt_avx512_cols_per_chunk(a.rows, a.in);
  if ((a.out + unit - 1) / unit < threads) {
    unit = 4;
  }
  const int64_t units = (a.out + unit - 1) / unit;
  const int64_t items = std::clamp<int64_t>(
      std::min<int64_t>(std::max<int64_t>(units / 2, std::min<int64_t>(units, threads)),
                        a.rows * a.out * a.in / kMinMaddsPerItem),
      1, threads * kItemsPerThread);
  if (items == 1 || threads == 1) {
    gemm_nt_avx512(a, 0, a.out);
    return;
  }
  parallel_for(items, threads, [&](int64_t i) {
    gemm_nt_avx512(a, std::min(a.out, units * i / items * unit),
                   std::min(a.out, units * (i + 1) / items * unit));
  });
}

}  // namespace

void set_gemm_backend(GemmBackend backend) { g_backend.store(backend); }

const char* gemm_backend_name() { return use_avx512() ? "avx512" : "openblas"; }

bool gemm_threads_are_ours() { return use_avx512(); }

void linear_strided(const float* x, int64_t rows, int64_t in, int64_t ldx, const float* w,
                    int64_t out, int64_t ldw, float* y, int64_t ldy) {
  if (rows == 0 || out == 0) {
    return;
  }
  const GemmNtArgs args{x, rows, in, ldx, w, out, ldw, y, ldy};
  if (in == 0) {
    for (int64_t m = 0; m < rows; ++m) {
      std::fill_n(y + m * ldy, out, 0.0f);
    }
    return;
  }
  if (use_avx512()) {
    linear_avx512(args);
    return;
  }
  linear_blas(args);
}

void linear(const float* x, int64_t rows, const dsv4::Tensor& w, float* y) {
  TS_CHECK(w.shape.size() == 2, "linear: weight must be 2-D, has {} dims", w.shape.size());
  const int64_t out = w.shape[0], in = w.shape[1];
  linear_strided(x, rows, in, in, w.ptr(), out, in, y, out);
}

}  // namespace tessera::ops
