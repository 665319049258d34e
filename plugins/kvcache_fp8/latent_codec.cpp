#include "latent_codec.hpp"

#include <algorithm>
#include <cmath>

#include "number_formats.hpp"

namespace tessera::kvfp8 {

namespace {
constexpr int kMinScaleExponent = -13;  // ceil(log2(1e-4)) = ceil(-13.29)
}

int group_scale_exponent(float amax) {
  const float q = amax / 448.0f;  // fp32, as in the reference (amax.float() / 448.0)
  if (!(q > 0.0f)) return kMinScaleExponent;
  return std::max(kMinScaleExponent, ceil_log2(static_cast<double>(q)));
}

void encode_latent(const LatentGeometry& g, int64_t entries_per_page, const float* row,
                   int64_t entry, uint8_t* page) {
  uint8_t* record = page + entry * g.record_bytes;
  uint8_t* scales = page + entries_per_page * g.record_bytes + entry * g.scale_bytes;
  for (int64_t group = 0; group < g.groups; ++group) {
    const int64_t begin = group * kGroupSize;
    const int64_t end = std::min(begin + kGroupSize, g.nope);
    float amax = 0.0f;
    for (int64_t c = begin; c < end; ++c) amax = std::max(amax, std::fabs(row[c]));
    const int exponent = group_scale_exponent(amax);
    scales[group] = encode_ue8m0(exponent);
    // x / 2^exponent is exact in double, so the only rounding is the one to e4m3.
    for (int64_t c = begin; c < end; ++c)
      record[c] = encode_e4m3(std::ldexp(static_cast<double>(row[c]), -exponent));
  }
  scales[g.groups] = 0;  // the pad byte
  for (int64_t r = 0; r < g.rope; ++r)
    put_u16(record + g.nope + 2 * r, encode_bf16(row[g.nope + r]));
}

void decode_latent(const LatentGeometry& g, int64_t entries_per_page, const uint8_t* page,
                   int64_t entry, float* row) {
  const uint8_t* record = page + entry * g.record_bytes;
  const uint8_t* scales = page + entries_per_page * g.record_bytes + entry * g.scale_bytes;
  for (int64_t group = 0; group < g.groups; ++group) {
    const int exponent = decode_ue8m0(scales[group]);
    const int64_t begin = group * kGroupSize;
    const int64_t end = std::min(begin + kGroupSize, g.nope);
    for (int64_t c = begin; c < end; ++c)
      row[c] = static_cast<float>(std::ldexp(decode_e4m3(record[c]), exponent));
  }
  for (int64_t r = 0; r < g.rope; ++r)
    row[g.nope + r] = decode_bf16(get_u16(record + g.nope + 2 * r));
}

}  // namespace tessera::kvfp8
