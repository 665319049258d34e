// The compressors' window storage (core/src/kv/window_buffer.*): freed blocks come back for the
// next sequence of the same shape, the cache never holds more than its bound, and a window
// buffer's contents are the caller's to write (no zero fill).
#include "kv/window_buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kv/compressor_state.hpp"

namespace tessera::dsv4 {
namespace {

TEST(WindowBuffer, AFreedBlockIsReusedForTheSameSize) {
  const size_t before = cached_window_bytes();
  void* a = take_window_block(12345 * 4);
  give_window_block(a, 12345 * 4);
  EXPECT_EQ(cached_window_bytes(), before + 12345 * 4);
  void* other = take_window_block(777 * 4);  // another size does not take it
  EXPECT_NE(other, a);
  void* again = take_window_block(12345 * 4);
  EXPECT_EQ(again, a);
  EXPECT_EQ(cached_window_bytes(), before);
  give_window_block(other, 777 * 4);
  give_window_block(again, 12345 * 4);
}

TEST(WindowBuffer, TheCacheStaysWithinItsBound) {
  // Blocks of 100 MiB (address space only: nothing touches them): the third does not fit.
  const size_t big = size_t{100} << 20;
  void* blocks[3] = {take_window_block(big), take_window_block(big), take_window_block(big)};
  for (void* b : blocks) give_window_block(b, big);
  EXPECT_LE(cached_window_bytes(), kWindowCacheBytes);
  for (int i = 0; i < 3; ++i) give_window_block(take_window_block(big), big);
  EXPECT_LE(cached_window_bytes(), kWindowCacheBytes);
}

TEST(WindowBuffer, SequencesOfOneShapeShareTheCachedBlocks) {
  const std::vector<float> row(64, 0.5F);
  const size_t before = cached_window_bytes();
  {  // kv_ and gate_: 128 x 64 floats each, allocated at the first push
    CompressorState s(128, 64);
    EXPECT_EQ(s.state_bytes(), 0);
    (void)s.push(0, row.data(), row.data());
  }
  const size_t after_one = cached_window_bytes();
  EXPECT_GE(after_one, before + 2 * 128 * 64 * sizeof(float));
  {
    CompressorState s(128, 64);
    (void)s.push(0, row.data(), row.data());
    EXPECT_EQ(cached_window_bytes(), after_one - 2 * 128 * 64 * sizeof(float));
  }
  EXPECT_EQ(cached_window_bytes(), after_one);
}

}  // namespace
}  // namespace tessera::dsv4
