#include "indexer_codec.hpp"

#include <algorithm>
#include <cmath>

#include "number_formats.hpp"

namespace tessera::kvfp8 {

float indexer_scale(float amax) { return std::max(1e-4f, amax) / 448.0f; }

void encode_indexer_key(int64_t dim, int64_t entries_per_page, const float* row, int64_t entry,
                        uint8_t* page) {
  float amax = 0.0f;
  for (int64_t c = 0; c < dim; ++c) amax = std::max(amax, std::fabs(row[c]));
  const float scale = indexer_scale(amax);
  const float inv_scale = 1.0f / scale;
  uint8_t* values = page + entry * dim;
  for (int64_t c = 0; c < dim; ++c) {
    const float scaled = row[c] * inv_scale;  // fp32 product, as the CUDA kernel computes it
    values[c] = encode_e4m3(static_cast<double>(scaled));
  }
  put_f32(page + entries_per_page * dim + entry * 4, scale);
}

void decode_indexer_key(int64_t dim, int64_t entries_per_page, const uint8_t* page, int64_t entry,
                        float* row) {
  const uint8_t* values = page + entry * dim;
  const float scale = get_f32(page + entries_per_page * dim + entry * 4);
  for (int64_t c = 0; c < dim; ++c) row[c] = static_cast<float>(decode_e4m3(values[c])) * scale;
}

}  // namespace tessera::kvfp8
