// A compressor's pooling (DeepSeek-V4's compressed attention): each channel j of an entry is the
// softmax-weighted mean of its window's kv values, weights exp(gate - max gate), in double. On
// AVX-512 CPUs 8 channels at a time with glibc's vector exp (libmvec _ZGVeN8v_exp, within 4 ulp
// of exp), on AVX2 4 at a time (_ZGVdN4v_exp): the 50m preset's ratio-4 compressors pool 1024
// values per closed window, and one std::exp at a time they cost ~0.3 ms of a 64-sequence step
// (~2% of the CPU time of one on a 2-core Zen 3).
#pragma once

#include <cstdint>
#include <span>

namespace tessera::dsv4 {

// Rows of a window: rows x [dim] values of kv and gate, rows `stride` floats apart.
struct PoolRows {
  const float* kv;
  const float* gate;
  int64_t rows, stride;
};

// entry[j] = sum over every row of every part, in order, of w kv[j] / sum of w, where
// w = exp(gate[j] - max of gate[j] over all rows), summed in double.
void softmax_pool(std::span<const PoolRows> parts, int64_t dim, float* entry);

// The same, one channel at a time with std::exp (the reference; and without AVX2).
void softmax_pool_scalar(std::span<const PoolRows> parts, int64_t dim, float* entry);

}  // namespace tessera::dsv4
