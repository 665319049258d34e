#include "ops/linear_low_precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/number_formats.cuh"
#include "ops/compute_threads.hpp"
#include "ops/linear_detail.hpp"
#include "ops/low_precision_decode.hpp"
#include "util/check.hpp"

namespace tessera::ops {
namespace {

constexpr int64_t kBlock = 128;  // activation blocks and FP8 weight blocks
constexpr int64_t kGroup = 32;   // FP4 weight scale groups
// A tile of W's rows, decoded, stays in the thread's L2: at most this many bytes (and at most one
// 128-row block of scales).
constexpr int64_t kTileBytes = int64_t{256} * 1024;

// v / s rounded to the nearest e4m3 value (ties to even) and decoded, as float_to_e4m3 then
// e4m3_to_float give it, for s a power of two with |v / s| <= 448 (s = e4m3_block_scale of the
// block's largest magnitude), written without branches so that the loop vectorises: the normal
// range keeps 3 mantissa bits (a carry may step the exponent), the subnormal range (below 2^-6)
// rounds to a multiple of 2^-9 by the add-and-subtract of 1.5 * 2^23 * 2^-9.
float quantised(float v, float inv_s, float s) {
  const float a = std::fabs(v) * inv_s;
  uint32_t b = 0;
  std::memcpy(&b, &a, 4);
  b = (b + 0x7FFFFu + ((b >> 20) & 1u)) & 0xFFF00000u;
  float normal = 0.0f;
  std::memcpy(&normal, &b, 4);
  const float subnormal = ((a * 512.0f + 12582912.0f) - 12582912.0f) * (1.0f / 512.0f);
  const float r = a < 0.015625f ? subnormal : std::min(normal, 448.0f);
  return std::copysign(r, v) * s;
}

// x rows quantised per 1x128 block and decoded, each value times its block's scale (exact: a
// power-of-two scale of an e4m3 value). NaN values stay NaN.
void quantise_rows(const float* x, int64_t rows, int64_t in, float* q) {
  // A few rows (a decode step's) take less time than handing them to the helpers.
  constexpr int64_t kValuesPerHandOff = int64_t{32} * 1024;
  const int threads = rows * in < kValuesPerHandOff ? 1 : compute_threads();
  parallel_for(rows, threads, [&](int64_t r) {
    const float* xr = x + r * in;
    float* qr = q + r * in;
    for (int64_t b = 0; b < in; b += kBlock) {
      const int64_t end = std::min(in, b + kBlock);
      float amax = 0.0f;
      for (int64_t i = b; i < end; ++i) {
        amax = std::max(amax, std::fabs(xr[i]));
      }
      const float s = formats::e4m3_block_scale(amax);
      const float inv_s = 1.0f / s;
      for (int64_t i = b; i < end; ++i) {
        qr[i] = quantised(xr[i], inv_s, s);
      }
      for (int64_t i = b; i < end; ++i) {
        if (std::isnan(xr[i])) {
          qr[i] = xr[i];
        }
      }
    }
  });
}

// y = Q(x) . W^T: x quantised (quantise_rows), then tiles of W's rows, each decoded by `decode`
// into the thread's buffer (rows `in` apart) and multiplied there.
template <typename Decode>
void quantised_product(const float* x, int64_t rows, int64_t in, int64_t out, float* y,
                       const Decode& decode) {
  thread_local std::vector<float> quantised_x;  // the caller's: the helpers only read it
  quantised_x.resize(static_cast<size_t>(rows * in));
  quantise_rows(x, rows, in, quantised_x.data());
  const float* q = quantised_x.data();
  int64_t tile = 4;  // a power of two up to 128: a divisor of the scale blocks
  while (tile < kBlock && 2 * tile * in * 2 <= kTileBytes) {
    tile *= 2;
  }
  const int64_t tiles = (out + tile - 1) / tile;
  // Helpers join for products worth a hand-off (decoding a weight costs about 4 multiply-adds).
  const int64_t work = out * in * (rows + 4);
  const int threads = static_cast<int>(
      std::clamp<int64_t>(work / linear_detail::kMinMaddsPerItem, 1, compute_threads()));
  parallel_for(tiles, threads, [&](int64_t t) {
    thread_local std::vector<uint16_t> decoded;
    const int64_t o0 = t * tile, n = std::min(tile, out - o0);
    decoded.resize(static_cast<size_t>(n * in));
    decode(o0, n, decoded.data());
    GemmNtArgs a{q, rows, in, in, nullptr, n, in, y + o0, out};
    a.w_bf16 = decoded.data();  // read as rows (the dot-product kernels)
    linear_detail::gemm_nt_columns(a, 0, n);
  });
}

bool fast_path(int64_t rows, int64_t out) {
  return rows > 0 && out > 0 && linear_detail::use_own_kernel();
}

// Row r of x quantised per 1x128 block: values decoded back to fp32 (exact) and one scale per
// block.
void quantise_row(const float* x, int64_t in, std::vector<float>& q, std::vector<float>& scales) {
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  q.resize(static_cast<size_t>(in));
  scales.resize(static_cast<size_t>(blocks));
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const int64_t end = std::min(in, (kb + 1) * kBlock);
    float amax = 0.0f;
    for (int64_t i = kb * kBlock; i < end; ++i) {
      amax = std::max(amax, std::fabs(x[i]));
    }
    const float s = formats::e4m3_block_scale(amax);
    scales[kb] = s;
    for (int64_t i = kb * kBlock; i < end; ++i) {
      q[i] = formats::e4m3_to_float(formats::float_to_e4m3(x[i] / s));
    }
  }
}

}  // namespace

void linear_fp8(const float* x, int64_t rows, int64_t in, const uint8_t* w, const uint8_t* w_scale,
                int64_t out, float* y) {
  if (!fast_path(rows, out) || in <= 0) {
    linear_fp8_reference(x, rows, in, w, w_scale, out, y);
    return;
  }
  quantised_product(x, rows, in, out, y, [&](int64_t o0, int64_t n, uint16_t* decoded) {
    decode_fp8_tile(w, w_scale, in, o0, n, decoded);
  });
}

void linear_fp4(const float* x, int64_t rows, int64_t in, const uint8_t* w, const uint8_t* w_scale,
                int64_t out, float* y) {
  TS_CHECK(in % kGroup == 0, "linear_fp4: in = {} is not a multiple of 32", in);
  if (!fast_path(rows, out) || in <= 0) {
    linear_fp4_reference(x, rows, in, w, w_scale, out, y);
    return;
  }
  quantised_product(x, rows, in, out, y, [&](int64_t o0, int64_t n, uint16_t* decoded) {
    decode_fp4_tile(w, w_scale, in, o0, n, decoded);
  });
}

void linear_fp8_reference(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y) {
  const int64_t blocks = (in + kBlock - 1) / kBlock;
  std::vector<float> q, scales;
  for (int64_t r = 0; r < rows; ++r) {
    quantise_row(x + r * in, in, q, scales);
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        float partial = 0.0f;
        for (int64_t i = kb * kBlock; i < std::min(in, (kb + 1) * kBlock); ++i) {
          partial += q[i] * formats::e4m3_to_float(w[o * in + i]);
        }
        acc += partial * (scales[kb] * formats::ue8m0_to_float(w_scale[o / kBlock * blocks + kb]));
      }
      y[r * out + o] = acc;
    }
  }
}

void linear_fp4_reference(const float* x, int64_t rows, int64_t in, const uint8_t* w,
                          const uint8_t* w_scale, int64_t out, float* y) {
  TS_CHECK(in % kGroup == 0, "linear_fp4: in = {} is not a multiple of 32", in);
  std::vector<float> q, scales;
  for (int64_t r = 0; r < rows; ++r) {
    quantise_row(x + r * in, in, q, scales);
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t kb = 0; kb * kBlock < in; ++kb) {
        float block = 0.0f;
        for (int64_t g = kb * kBlock; g < std::min(in, (kb + 1) * kBlock); g += kGroup) {
          float group = 0.0f;
          for (int64_t i = g; i < g + kGroup; ++i) {
            const uint8_t pair = w[o * (in / 2) + i / 2];
            group += q[i] * formats::e2m1_to_float(i % 2 == 0 ? pair & 0xF : pair >> 4);
          }
          block += group * formats::ue8m0_to_float(w_scale[o * (in / kGroup) + g / kGroup]);
        }
        acc += block * scales[kb];
      }
      y[r * out + o] = acc;
    }
  }
}

}  // namespace tessera::ops
