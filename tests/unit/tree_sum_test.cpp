// ops::tree_sum: the pairwise order it documents, written out here level by level (a different
// formulation of the same tree), the subtree property tensor-parallel ranks rely on, in-place use,
// and the same bits whatever the thread split or length.
#include "ops/tree_sum.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/compute_threads.hpp"

namespace tessera::ops {
namespace {

// parts[p][i]: magnitudes from 1e-4 to 1e8 with both signs, so that orders give different sums.
std::vector<std::vector<float>> make_parts(int n, int64_t count) {
  std::vector<std::vector<float>> parts(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    for (int64_t i = 0; i < count; ++i) {
      const int e = static_cast<int>((int64_t{p} * 5 + i * 3) % 13) - 4;
      const float sign = (p + i) % 3 == 0 ? -1.0f : 1.0f;
      parts[static_cast<size_t>(p)].push_back(sign * static_cast<float>(std::pow(10.0, e)) *
                                              (1.0f + 0.37f * static_cast<float>(p)));
    }
  }
  return parts;
}

// Level by level: neighbours (0, 1), (2, 3), ... added, an odd last one carried up unchanged.
float level_order(std::vector<float> v) {
  while (v.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      next.push_back(v[i] + v[i + 1]);
    }
    if (v.size() % 2 == 1) {
      next.push_back(v.back());
    }
    v = next;
  }
  return v[0];
}

std::vector<const float*> pointers(const std::vector<std::vector<float>>& parts) {
  std::vector<const float*> p;
  p.reserve(parts.size());
  for (const auto& v : parts) {
    p.push_back(v.data());
  }
  return p;
}

TEST(TreeSum, IsThePairwiseLevelOrderForOneToNineParts) {
  const int64_t count = 1500;  // several blocks and a partial one
  for (int n = 1; n <= 9; ++n) {
    const auto parts = make_parts(n, count);
    std::vector<float> out(static_cast<size_t>(count));
    tree_sum(pointers(parts), count, out.data());
    int64_t left_to_right_differs = 0;
    for (int64_t i = 0; i < count; ++i) {
      std::vector<float> column;
      float sequential = 0;
      for (const auto& p : parts) {
        column.push_back(p[static_cast<size_t>(i)]);
        sequential += p[static_cast<size_t>(i)];
      }
      ASSERT_EQ(out[static_cast<size_t>(i)], level_order(column)) << n << " parts, element " << i;
      left_to_right_differs += out[static_cast<size_t>(i)] != sequential ? 1 : 0;
    }
    if (n >= 4) {  // the values tell the orders apart: a plain loop would have failed above
      EXPECT_GT(left_to_right_differs, 0) << n << " parts";
    }
  }
}

// 8 parts on 1, 2, 4 or 8 "ranks": each rank's tree of its contiguous run, then the tree over the
// ranks, is the tree over all 8.
TEST(TreeSum, ContiguousPowerOfTwoRunsAreSubtrees) {
  const int64_t count = 700;
  const auto parts = make_parts(8, count);
  std::vector<float> all(static_cast<size_t>(count));
  tree_sum(pointers(parts), count, all.data());
  for (int ranks : {2, 4, 8}) {
    const int per = 8 / ranks;
    std::vector<std::vector<float>> rank_sums;
    for (int r = 0; r < ranks; ++r) {
      std::vector<const float*> mine;
      for (int q = r * per; q < (r + 1) * per; ++q) {
        mine.push_back(parts[static_cast<size_t>(q)].data());
      }
      rank_sums.emplace_back(static_cast<size_t>(count));
      tree_sum(mine, count, rank_sums.back().data());
    }
    std::vector<float> combined(static_cast<size_t>(count));
    tree_sum(pointers(rank_sums), count, combined.data());
    EXPECT_EQ(combined, all) << ranks << " ranks";
  }
}

TEST(TreeSum, IntoItsFirstPartAndOnAnyThreadCount) {
  const int64_t count = 2049;
  const auto parts = make_parts(5, count);
  std::vector<float> expected(static_cast<size_t>(count));
  set_compute_threads(1);
  tree_sum(pointers(parts), count, expected.data());
  set_compute_threads(2);
  std::vector<float> threaded(static_cast<size_t>(count));
  tree_sum(pointers(parts), count, threaded.data());
  EXPECT_EQ(threaded, expected);
  auto in_place = parts;
  tree_sum(pointers(in_place), count, in_place[0].data());
  EXPECT_EQ(in_place[0], expected);
  for (size_t p = 1; p < parts.size(); ++p) {
    EXPECT_EQ(in_place[p], parts[p]) << "part " << p;
  }
  std::vector<float> one(1);
  tree_sum(pointers(parts), 1, one.data());  // a single element
  EXPECT_EQ(one[0], expected[0]);
}

}  // namespace
}  // namespace tessera::ops
