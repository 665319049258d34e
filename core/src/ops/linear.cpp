#include "ops/linear.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear_blas.hpp"
#include "ops/linear_detail.hpp"
#include "ops/scan_columns.hpp"
#include "tessera/plugin_abi.h"
#include "util/check.hpp"

namespace tessera::ops {
namespace linear_detail {

// Two items per thread: a late helper costs at most half a share, and each item is long enough
// that most of its chunks are prefetched (measured on the 50m step: 1, 2, 4 per thread ->
// 24.7-26.2, 24.6-24.9, 25.6-28.3 ms).
constexpr int64_t kItemsPerThread = 2;

namespace {

GemmBackend initial_backend() {
  const char* env = std::getenv("TESSERA_GEMM");
  if (env != nullptr && std::string_view(env) == "blas") {
    return GemmBackend::kBlas;
  }
  if (env != nullptr && std::string_view(env) == "avx2") {
    return GemmBackend::kAvx2;
  }
  return GemmBackend::kAuto;
}

std::atomic<GemmBackend> g_backend{initial_backend()};

}  // namespace

bool avx512_kernel() {
  return g_backend.load(std::memory_order_relaxed) == GemmBackend::kAuto &&
         gemm_nt_avx512_available();
}

bool use_own_kernel() {
  return g_backend.load(std::memory_order_relaxed) != GemmBackend::kBlas &&
         (avx512_kernel() || gemm_nt_avx2_available());
}

bool own_kernel_takes(const GemmNtArgs& a) {
  return use_own_kernel() && (avx512_kernel() || a.x_bf16 == nullptr);
}

GemmNtArgs ask_for_next_item(GemmNtArgs a, const GemmNtArgs& next, int64_t begin, int64_t end) {
  // Contiguous panels only (a part of K, input_columns, leaves gaps between them).
  if (!next.in_panels() || begin >= end || next.panel_stride != next.in * kWeightPanelWidth) {
    return a;
  }
  const int64_t elem = next.w_panels != nullptr ? 4 : 2;
  const char* base = next.w_panels != nullptr ? reinterpret_cast<const char*>(next.w_panels)
                                              : reinterpret_cast<const char*>(next.w_panels_bf16);
  const int64_t p0 = (begin + next.panel_col0) / kWeightPanelWidth;
  const int64_t p1 = (end + next.panel_col0 + kWeightPanelWidth - 1) / kWeightPanelWidth;
  a.prefetch_next = base + p0 * next.panel_stride * elem;
  a.prefetch_next_bytes = std::min(kPanelChunkBytes, (p1 - p0) * next.panel_stride * elem);
  return a;
}

void gemm_nt_columns(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  if (avx512_kernel()) {
    gemm_nt_avx512(a, n_begin, n_end);
  } else {
    gemm_nt_avx2(a, n_begin, n_end);
  }
}

void pack_rows(GemmNtArgs& a, std::vector<float>& store) {
  if (a.rows <= 1 || a.ldx == a.in) {
    return;
  }
  store.resize(static_cast<size_t>(a.rows * a.in));
  for (int64_t m = 0; m < a.rows; ++m) {
    std::copy_n(a.x + m * a.ldx, a.in, store.begin() + m * a.in);
  }
  a.x = store.data();
  a.ldx = a.in;
}

bool takes_bf16_x(const GemmNtArgs& a) {
  return a.w_bf16 != nullptr && a.rows > 0 && a.in > 0 && bf16_activations() &&
         gemm_nt_bf16_available() && avx512_kernel();
}

void round_x_to_bf16(GemmNtArgs& a, std::vector<uint16_t>& store) {
  store.resize(static_cast<size_t>(a.rows * a.in));
  // A batch's x is rounded on all compute threads (one thread left it ~2% of a 64-row step of 50m
  // as serial time); blocks of rows of at least kMinValuesPerRoundItem values.
  constexpr int64_t kMinValuesPerRoundItem = int64_t{16} * 1024;
  const int64_t rows_per_item = std::max<int64_t>(1, kMinValuesPerRoundItem / a.in);
  const int64_t items = (a.rows + rows_per_item - 1) / rows_per_item;
  uint16_t* out = store.data();
  parallel_for(items, compute_threads(), [&](int64_t i) {
    const int64_t m0 = i * rows_per_item, m1 = std::min(a.rows, m0 + rows_per_item);
    round_rows_to_bf16(a.x + m0 * a.ldx, m1 - m0, a.in, a.ldx, out + m0 * a.in);
  });
  a.x_bf16 = store.data();
  a.ldx = a.in;
}

size_t rounded_twin(std::span<const GemmNtArgs> gemms, std::span<const GemmNtArgs> args, size_t g) {
  for (size_t p = 0; p < g; ++p) {
    const GemmNtArgs& q = gemms[p];
    if (args[p].x_bf16 != nullptr && q.x == gemms[g].x && q.rows == gemms[g].rows &&
        q.in == gemms[g].in && q.ldx == gemms[g].ldx) {
      return p;
    }
  }
  return g;
}

void zero_output(const GemmNtArgs& a) {
  for (int64_t m = 0; m < a.rows; ++m) {
    std::fill_n(a.y + m * a.ldy, a.out, 0.0f);
  }
}

int64_t item_columns(const GemmNtArgs& a) { return a.in_panels() ? kWeightPanelWidth : 4; }

}  // namespace linear_detail

namespace {

using namespace linear_detail;  // NOLINT(google-build-using-namespace): this file's own helpers

// Called by the thread that computed columns [begin, end) of y, right after: linear_scanned.
struct AfterRange {
  void (*call)(void* ctx, int64_t item, int64_t begin, int64_t end) = nullptr;
  void* ctx = nullptr;
  int64_t columns = 0;  // item width (a multiple of 4), when call is set
};

// A W of fewer than two chunks per thread (the hyper-connection mix: 24 x 2048 in two) is
// shared by rows of x, whole blocks of them: each thread reads its rows once and all of the small
// W, instead of every column range reading all of x (and a 16 + 8-column split giving one thread
// twice the other's work). Any split of rows gives the same bits (gemm_nt.hpp).
void split_rows(const GemmNtArgs& a, int threads) {
  const int64_t blocks = (a.rows + kGemmNtRowsPerBlock - 1) / kGemmNtRowsPerBlock;
  parallel_for(threads, threads, [&](int64_t i) {
    const int64_t r0 = std::min(a.rows, blocks * i / threads * kGemmNtRowsPerBlock);
    const int64_t r1 = std::min(a.rows, blocks * (i + 1) / threads * kGemmNtRowsPerBlock);
    if (r0 == r1) {
      return;
    }
    GemmNtArgs part = a;
    part.rows = r1 - r0;
    if (part.x_bf16 != nullptr) {
      part.x_bf16 += r0 * a.ldx;
    } else {
      part.x += r0 * a.ldx;
    }
    part.y += r0 * a.ldy;
    gemm_nt_columns(part, 0, a.out);
  });
}

// Our kernel over compute_threads() threads.
void linear_own_kernel(GemmNtArgs a, const AfterRange& after = {}) {
  // Rows of x a multiple of 4 KiB apart (a head group's slice of [T, H * Dh]) all fall into the
  // same L1 sets and evict each other while every block of W meets them: copy them together
  // first (rows * in floats, against rows * in * out multiply-adds).
  thread_local std::vector<float> packed_x;
  thread_local std::vector<uint16_t> rounded_x;
  if (takes_bf16_x(a)) {
    round_x_to_bf16(a, rounded_x);
  } else {
    pack_rows(a, packed_x);
  }
  // Shared out in items of whole W chunks, two or more chunks per item where there are enough,
  // so each thread's kernel call can prefetch its next chunk while computing one. A W of fewer
  // chunks than two per thread is shared by rows of x where there are enough of them
  // (split_rows), else by 4-column blocks.
  const int threads = compute_threads();
  if (after.call != nullptr) {
    const int64_t items = (a.out + after.columns - 1) / after.columns;
    parallel_for(items, threads, [&](int64_t i) {
      const int64_t begin = i * after.columns, end = std::min(a.out, begin + after.columns);
      const int64_t next = (i + threads) * after.columns;
      gemm_nt_columns(ask_for_next_item(a, a, next, std::min(a.out, next + after.columns)), begin,
                      end);
      after.call(after.ctx, i, begin, end);
    });
    return;
  }
  int64_t unit = gemm_nt_cols_per_chunk(a.rows, a.in);
  const int64_t chunks = (a.out + unit - 1) / unit;
  if (chunks < threads * kItemsPerThread && threads > 1 &&
      a.rows >= int64_t{threads} * kGemmNtRowsPerBlock) {
    split_rows(a, threads);
    return;
  }
  const int64_t step = item_columns(a);
  unit = chunks < threads ? step : (unit + step - 1) / step * step;
  const int64_t units = (a.out + unit - 1) / unit;
  const int64_t items = std::clamp<int64_t>(
      std::min<int64_t>(std::max<int64_t>(units / 2, std::min<int64_t>(units, threads)),
                        a.rows * a.out * a.in / kMinMaddsPerItem),
      1, threads * kItemsPerThread);
  if (items == 1 || threads == 1) {
    gemm_nt_columns(a, 0, a.out);
    return;
  }
  const auto column = [&](int64_t i) { return std::min(a.out, units * i / items * unit); };
  parallel_for(items, threads, [&](int64_t i) {
    const int64_t next = std::min(items, i + threads);
    gemm_nt_columns(ask_for_next_item(a, a, column(next), column(next + 1)), column(i),
                    column(i + 1));
  });
}

}  // namespace

void set_gemm_backend(GemmBackend backend) { g_backend.store(backend); }

const char* gemm_backend_name() {
  return avx512_kernel() ? "avx512" : use_own_kernel() ? "avx2" : "openblas";
}

bool gemm_reads_bf16_weights() { return use_own_kernel(); }

bool gemm_reads_panels() { return use_own_kernel(); }

namespace linear_detail {

void linear_args(const GemmNtArgs& args) {
  if (args.rows == 0 || args.out == 0) {
    return;
  }
  if (args.in == 0) {
    zero_output(args);
    return;
  }
  if (own_kernel_takes(args)) {
    linear_own_kernel(args);
    return;
  }
  linear_blas(args);
}

}  // namespace linear_detail

void linear_strided(const float* x, int64_t rows, int64_t in, int64_t ldx, const float* w,
                    int64_t out, int64_t ldw, float* y, int64_t ldy) {
  linear_args({x, rows, in, ldx, w, out, ldw, y, ldy});
}

GemmNtArgs weight_product(const float* x, int64_t rows, int64_t ldx, const dsv4::Tensor& w,
                          float* y, int64_t ldy, int64_t first_row, int64_t out) {
  TS_CHECK(w.shape.size() == 2, "linear: weight must be 2-D, has {} dims", w.shape.size());
  const int64_t in = w.shape[1];
  if (out < 0) {
    out = w.shape[0] - first_row;
  }
  TS_CHECK(first_row >= 0 && first_row + out <= w.shape[0], "linear: rows {}+{} of a {}-row weight",
           first_row, out, w.shape[0]);
  GemmNtArgs a{x, rows, in, ldx, nullptr, out, in, y, ldy};
  if (w.in_bf16()) {
    a.w_bf16 = w.bf16.data() + first_row * in;
  } else if (w.in_panels() || w.in_bf16_panels()) {
    a.panel_stride = in * kWeightPanelWidth;
    const int64_t first = first_row / kWeightPanelWidth * a.panel_stride;
    if (w.in_panels()) {
      a.w_panels = w.panels.data() + first;
    } else {
      a.w_panels_bf16 = w.bf16_panels.data() + first;
    }
    a.panel_col0 = first_row % kWeightPanelWidth;
  } else {
    a.w = w.ptr() + first_row * in;
  }
  return a;
}

GemmNtArgs input_columns(GemmNtArgs a, int64_t first, int64_t count) {
  TS_CHECK(first >= 0 && count >= 0 && first + count <= a.in,
           "linear: input columns {}+{} of a product over {}", first, count, a.in);
  a.x += first;
  if (a.w_panels != nullptr) {
    a.w_panels += first * kWeightPanelWidth;  // the same panels, from k = first
  } else if (a.w_panels_bf16 != nullptr) {
    a.w_panels_bf16 += first * kWeightPanelWidth;
  } else if (a.w_bf16 != nullptr) {
    a.w_bf16 += first;
  } else {
    a.w += first;
  }
  a.in = count;
  return a;
}

void linear_scanned(const float* x, int64_t rows, const dsv4::Tensor& w, float* y,
                    std::span<RowScan> scans, std::span<float> group_max) {
  TS_CHECK(w.shape.size() == 2, "linear: weight must be 2-D, has {} dims", w.shape.size());
  TS_CHECK_EQ(static_cast<int64_t>(scans.size()), rows, "row scans");
  const int64_t out = w.shape[0];
  const int64_t groups = TS_LOGIT_GROUP_COUNT(out);
  if (!group_max.empty()) {
    TS_CHECK_EQ(static_cast<int64_t>(group_max.size()), rows * groups, "row group maxima");
  }
  float* const gmax = group_max.empty() ? nullptr : group_max.data();
  const GemmNtArgs args = weight_product(x, rows, w.shape[1], w, y, out);
  // A few rows are scanned afterwards (a decode's 1 x vocab is still in the L2 then, and keeps
  // linear()'s split of W, which streams it best); only many rows' y outgrows the cache.
  constexpr int64_t kScanWhileWritingFrom = 8;
  if (rows < kScanWhileWritingFrom || out == 0 || args.in == 0 || !own_kernel_takes(args)) {
    linear_args(args);
    if (out > 0) {
      scan_columns(y, rows, out, 0, out, scans, gmax, groups);
    }
    return;
  }
  // Items of kColumns columns: their y ([rows, kColumns], 64 KiB at 64 rows) is still in the
  // writing core's L2 when the item scans it, while the item's slice of W streams past. An item is
  // one block of column groups, so each writes its own groups.
  constexpr int64_t kColumns = 256;
  static_assert(kColumns == TS_LOGIT_GROUP_BLOCK);
  const int64_t items = (out + kColumns - 1) / kColumns;
  std::vector<RowScan> partial(static_cast<size_t>(items * rows));  // [items, rows]
  struct Ctx {
    const float* y;
    int64_t rows, ldy;
    RowScan* partial;
    float* group_max;
    int64_t groups;
  } ctx{y, rows, out, partial.data(), gmax, groups};
  const AfterRange after{[](void* c, int64_t item, int64_t begin, int64_t end) {
                           const auto& k = *static_cast<Ctx*>(c);
                           scan_columns(k.y, k.rows, k.ldy, begin, end,
                                        {k.partial + item * k.rows, static_cast<size_t>(k.rows)},
                                        k.group_max, k.groups);
                         },
                         &ctx, kColumns};
  linear_own_kernel(args, after);
  for (int64_t r = 0; r < rows; ++r) {  // column order: the lowest column wins a tie
    RowScan s = partial[static_cast<size_t>(r)];
    for (int64_t i = 1; i < items; ++i) {
      merge_scan(s, partial[static_cast<size_t>(i * rows + r)]);
    }
    scans[static_cast<size_t>(r)] = s;
  }
}

void linear(const float* x, int64_t rows, const dsv4::Tensor& w, float* y) {
  // Checked here too: the arguments below read shape[0] and shape[1].
  TS_CHECK(w.shape.size() == 2, "linear: weight must be 2-D, has {} dims", w.shape.size());
  linear_args(weight_product(x, rows, w.shape[1], w, y, w.shape[0]));
}

}  // namespace tessera::ops
