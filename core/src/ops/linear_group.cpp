// linear_group: several products in one parallel pass over the compute threads (linear.hpp).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "ops/linear_detail.hpp"

namespace tessera::ops {
namespace {

using namespace linear_detail;  // NOLINT(google-build-using-namespace): ops' own helpers

// A group is cut finer than one product: about this many items (or pieces) per thread.
constexpr int64_t kGroupItemsPerThread = 4;

// Products of one row count, run in pieces of about equal work: the products' columns laid end to
// end (in the order given) and cut at item_columns() boundaries into about threads *
// kGroupItemsPerThread pieces of total / pieces multiply-adds; a piece may span products, whose
// column ranges it runs in turn. Equal pieces from a shared counter end together, where
// whole-product items in size order left one thread idle ~10-20% of a group of few unequal products
// (a 64-token step's attention projections: 8.4, 4.2 and 0.1 M multiply-adds).
void run_in_equal_pieces(std::span<const GemmNtArgs> args, int64_t total, int threads) {
  struct Segment {
    int64_t gemm, begin, end;
  };
  std::vector<Segment> segments;
  std::vector<size_t> piece_start{0};  // piece p: segments [piece_start[p], piece_start[p + 1])
  const int64_t pieces =
      std::clamp<int64_t>(total / kMinMaddsPerItem, 1, threads * kGroupItemsPerThread);
  int64_t done = 0;  // multiply-adds laid out so far
  for (size_t g = 0; g < args.size(); ++g) {
    const GemmNtArgs& a = args[g];
    const int64_t per_column = a.rows * a.in;
    if (per_column == 0 || a.out == 0) {
      continue;
    }
    const int64_t width = item_columns(a);
    for (int64_t col = 0; col < a.out;) {
      const auto piece = static_cast<int64_t>(piece_start.size()) - 1;
      const bool last_piece = piece + 1 == pieces;
      const int64_t piece_end = total * (piece + 1) / pieces;  // multiply-adds
      int64_t columns = a.out - col;
      if (!last_piece) {  // up to this piece's end, in whole blocks of columns
        const int64_t wanted =
            (std::max<int64_t>(piece_end - done, 1) + per_column - 1) / per_column;
        columns = std::min(columns, (wanted + width - 1) / width * width);
      }
      segments.push_back({static_cast<int64_t>(g), col, col + columns});
      col += columns;
      done += columns * per_column;
      if (!last_piece && done >= piece_end) {
        piece_start.push_back(segments.size());
      }
    }
  }
  if (piece_start.back() != segments.size()) {
    piece_start.push_back(segments.size());
  }
  const auto piece_count = static_cast<int64_t>(piece_start.size()) - 1;
  parallel_for(piece_count, threads, [&](int64_t p) {
    const size_t first = piece_start[static_cast<size_t>(p)];
    const size_t last = piece_start[static_cast<size_t>(p) + 1];
    for (size_t i = first; i < last; ++i) {
      const Segment& s = segments[i];
      const GemmNtArgs& a = args[static_cast<size_t>(s.gemm)];
      // The piece's last segment asks for the start of the piece `threads` on.
      const int64_t next_piece = p + threads;
      if (i + 1 < last || next_piece >= piece_count) {
        gemm_nt_columns(a, s.begin, s.end);
        continue;
      }
      const Segment& n = segments[piece_start[static_cast<size_t>(next_piece)]];
      gemm_nt_columns(ask_for_next_item(a, args[static_cast<size_t>(n.gemm)], n.begin, n.end),
                      s.begin, s.end);
    }
  });
}

}  // namespace

void linear_group(std::span<const GemmNtArgs> gemms) {
  const int threads = compute_threads();
  if (gemms.size() <= 1 || threads == 1 ||
      !std::all_of(gemms.begin(), gemms.end(), own_kernel_takes)) {
    for (const GemmNtArgs& g : gemms) {
      linear_args(g);
    }
    return;
  }
  std::vector<GemmNtArgs> args(gemms.begin(), gemms.end());
  thread_local std::vector<std::vector<float>> packed;
  thread_local std::vector<std::vector<uint16_t>> rounded;
  packed.resize(std::max(packed.size(), args.size()));
  rounded.resize(std::max(rounded.size(), args.size()));
  int64_t total = 0;
  for (size_t g = 0; g < args.size(); ++g) {
    GemmNtArgs& a = args[g];
    if (a.rows > 0 && a.out > 0 && a.in == 0) {
      zero_output(a);
    }
    total += a.rows * a.out * a.in;
    if (!takes_bf16_x(a)) {
      pack_rows(a, packed[g]);
    } else if (const size_t twin = rounded_twin(gemms, args, g); twin < g) {
      a.x_bf16 = args[twin].x_bf16;  // the projections of one x share its rounded copy
      a.ldx = a.in;
    } else {
      round_x_to_bf16(a, rounded[g]);
    }
  }
  if (std::all_of(args.begin(), args.end(),
                  [&](const GemmNtArgs& a) { return a.rows == args.front().rows; })) {
    run_in_equal_pieces(args, total, threads);
    return;
  }
  // Products of different row counts (a layer's experts: the shared one's 64 rows, the routed
  // ones' ~16, which stream their W at ~2-3x the cost per multiply-add): items are column ranges
  // (multiples of 4) of one product, about total / (threads * 4) multiply-adds each (at least
  // kMinMaddsPerItem), the largest handed out first.
  struct Item {
    int64_t gemm, begin, end, madds;
  };
  std::vector<Item> items;
  const int64_t target = std::max(kMinMaddsPerItem, total / (threads * kGroupItemsPerThread));
  for (size_t g = 0; g < args.size(); ++g) {
    const GemmNtArgs& a = args[g];
    const int64_t madds = a.rows * a.out * a.in;
    if (madds == 0) {
      continue;
    }
    const int64_t width = item_columns(a);
    const int64_t blocks = (a.out + width - 1) / width;
    const int64_t n = std::clamp<int64_t>(madds / target, 1, blocks);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t begin = std::min(a.out, blocks * i / n * width);
      const int64_t end = std::min(a.out, blocks * (i + 1) / n * width);
      items.push_back({static_cast<int64_t>(g), begin, end, a.rows * (end - begin) * a.in});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& p, const Item& q) { return p.madds > q.madds; });
  const auto item_count = static_cast<int64_t>(items.size());
  parallel_for(item_count, threads, [&](int64_t i) {
    const Item& it = items[static_cast<size_t>(i)];
    const GemmNtArgs& a = args[static_cast<size_t>(it.gemm)];
    if (i + threads >= item_count) {
      gemm_nt_columns(a, it.begin, it.end);
      return;
    }
    const Item& n = items[static_cast<size_t>(i + threads)];
    gemm_nt_columns(ask_for_next_item(a, args[static_cast<size_t>(n.gemm)], n.begin, n.end),
                    it.begin, it.end);
  });
}

}  // namespace tessera::ops
