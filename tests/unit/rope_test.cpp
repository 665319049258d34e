// RopeTable::apply rotates the trailing rope_dim channels of each row by position * inv_freq[i]
// (interleaved pairs), leaves the other channels alone, and inverse rotates back. It keeps each
// thread's last (table, position) cos and sin: a token's q, kv and output are rotated at one
// position in a row, tables of other layers in between. Checked bit for bit against the formula
// with std::cos / std::sin, across tables and positions in any order.
#include "ops/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tessera::ops {
namespace {

std::vector<float> rotated(const RopeTable& table, std::vector<float> x, int64_t rows,
                           int64_t width, int64_t position, bool inverse) {
  const auto half = static_cast<int64_t>(table.inv_freq().size());
  const int64_t start = width - 2 * half;
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(position) * table.inv_freq()[static_cast<size_t>(i)];
    const float c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
    for (int64_t r = 0; r < rows; ++r) {
      float* pair = x.data() + r * width + start + 2 * i;
      const float a = pair[0], b = pair[1];
      pair[0] = a * c - b * s;
      pair[1] = b * c + a * s;
    }
  }
  return x;
}

TEST(Rope, RotatesAsTheFormulaAcrossTablesAndPositionsInAnyOrder) {
  const RopeTable plain(32, 10000.0, nullptr);
  dsv4::YarnScaling yarn;
  yarn.enabled = true;
  yarn.factor = 16;
  yarn.original_max_position = 65536;
  yarn.beta_fast = 32;
  yarn.beta_slow = 1;
  const RopeTable scaled(32, 160000.0, &yarn);
  const RopeTable copy = scaled;  // a copy shares its frequencies (and its memo entries)
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t width = 48;
  // The same positions again and again, tables switching in between: a memo keyed by position
  // alone would rotate by another table's angles.
  const struct {
    const RopeTable* table;
    int64_t position, rows;
    bool inverse;
  } calls[] = {{&plain, 5, 8, false},    {&plain, 5, 1, false},  {&scaled, 5, 4, false},
               {&plain, 5, 8, true},     {&scaled, 6, 8, false}, {&copy, 6, 1, false},
               {&scaled, 5, 2, true},    {&plain, 0, 3, false},  {&plain, 70000, 2, false},
               {&scaled, 70000, 1, true}};
  for (const auto& call : calls) {
    std::vector<float> x(static_cast<size_t>(call.rows * width));
    for (float& v : x) {
      v = normal(rng);
    }
    const std::vector<float> want =
        rotated(*call.table, x, call.rows, width, call.position, call.inverse);
    call.table->apply(x.data(), call.rows, width, call.position, call.inverse);
    ASSERT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0)
        << "position " << call.position << ", " << call.rows << " rows";
  }
}

}  // namespace
}  // namespace tessera::ops
