#include "ops/linear_low_precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
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

// The caller's buffer of quantised rows (the helpers only read it).
float* quantised_buffer(int64_t values) {
  thread_local std::vector<float> q;
  q.resize(static_cast<size_t>(values));
  return q.data();
}

// One product y = q . W^T over its rows of quantised x.
struct Product {
  const float* q;
  int64_t rows;
  float* y;
  const uint8_t* w;
  const uint8_t* scale;
};

// The products (all W [out, in]) in one parallel pass over tiles of their W's rows: each tile
// decoded by `decode(product, o0, n, buffer)` into the thread's buffer (rows `in` apart) and
// multiplied there. A tile's outputs are the same bits in any pass (the kernel is
// batch-invariant and its columns split-invariant).
template <typename Decode>
void run_products(std::span<const Product> products, int64_t in, int64_t out,
                  const Decode& decode) {
  int64_t tile = 4;  // a power of two up to 128: a divisor of the scale blocks
  while (tile < kBlock && 2 * tile * in * 2 <= kTileBytes) {
    tile *= 2;
  }
  const int64_t tiles = (out + tile - 1) / tile;
  // Helpers join for passes worth a hand-off (decoding a weight costs about 4 multiply-adds).
  int64_t work = 0;
  for (const Product& p : products) {
    work += out * in * (p.rows + 4);
  }
  const int threads = static_cast<int>(
      std::clamp<int64_t>(work / linear_detail::kMinMaddsPerItem, 1, compute_threads()));
  const auto items = static_cast<int64_t>(products.size()) * tiles;
  parallel_for(items, threads, [&](int64_t item) {
    thread_local std::vector<uint16_t> decoded;
    const Product& p = products[static_cast<size_t>(item / tiles)];
    const int64_t o0 = item % tiles * tile, n = std::min(tile, out - o0);
    decoded.resize(static_cast<size_t>(n * in));
    decode(p, o0, n, decoded.data());
    GemmNtArgs a{p.q, p.rows, in, in, nullptr, n, in, p.y + o0, out};
    a.w_bf16 = decoded.data();  // read as rows (the dot-product kernels)
    linear_detail::gemm_nt_columns(a, 0, n);
  });
}

// Every expert's product over its rows [offsets[e], offsets[e + 1]) of x (and y) in one pass.
template <typename Decode>
void grouped_products(const float* x, int64_t in, const uint8_t* const* weights,
                      const uint8_t* const* scales, int64_t experts, const int64_t* offsets,
                      int64_t out, float* y, const Decode& decode) {
  const int64_t first = offsets[0], rows = offsets[experts] - first;
  float* q = quantised_buffer(rows * in);
  quantise_rows(x + first * in, rows, in, q);
  std::vector<Product> products;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t r0 = offsets[e] - first, n = offsets[e + 1] - offsets[e];
    if (n > 0) {
      products.push_back({q + r0 * in, n, y + offsets[e] * out, weights[e], scales[e]});
    }
  }
  run_products(products, in, out, decode);
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
  float* q = quantised_buffer(rows * in);
  quantise_rows(x, rows, in, q);
  const Product p{q, rows, y, w, w_scale};
  run_products({&p, 1}, in, out, [&](const Product& f, int64_t o0, int64_t n, uint16_t* decoded) {
    decode_fp8_tile(f.w, f.scale, in, o0, n, decoded);
  });
}

void linear_fp4(const float* x, int64_t rows, int64_t in, const uint8_t* w, const uint8_t* w_scale,
                int64_t out, float* y) {
  TS_CHECK(in % kGroup == 0, "linear_fp4: in = {} is not a multiple of 32", in);
  if (!fast_path(rows, out) || in <= 0) {
    linear_fp4_reference(x, rows, in, w, w_scale, out, y);
    return;
  }
  float* q = quantised_buffer(rows * in);
  quantise_rows(x, rows, in, q);
  const Product p{q, rows, y, w, w_scale};
  run_products({&p, 1}, in, out, [&](const Product& f, int64_t o0, int64_t n, uint16_t* decoded) {
    decode_fp4_tile(f.w, f.scale, in, o0, n, decoded);
  });
}

void grouped_linear_fp8(const float* x, int64_t in, const uint8_t* const* weights,
                        const uint8_t* const* scales, int64_t experts, const int64_t* offsets,
                        int64_t out, float* y) {
  if (!fast_path(offsets[experts] - offsets[0], out) || in <= 0) {
    for (int64_t e = 0; e < experts; ++e) {
      linear_fp8(x + offsets[e] * in, offsets[e + 1] - offsets[e], in, weights[e], scales[e], out,
                 y + offsets[e] * out);
    }
    return;
  }
  grouped_products(x, in, weights, scales, experts, offsets, out, y,
                   [&](const Product& f, int64_t o0, int64_t n, uint16_t* decoded) {
                     decode_fp8_tile(f.w, f.scale, in, o0, n, decoded);
                   });
}

void grouped_linear_fp4(const float* x, int64_t in, const uint8_t* const* weights,
                        const uint8_t* const* scales, int64_t experts, const int64_t* offsets,
                        int64_t out, float* y) {
  TS_CHECK(in % kGroup == 0, "linear_fp4: in = {} is not a multiple of 32", in);
  if (!fast_path(offsets[experts] - offsets[0], out) || in <= 0) {
    for (int64_t e = 0; e < experts; ++e) {
      linear_fp4(x + offsets[e] * in, offsets[e + 1] - offsets[e], in, weights[e], scales[e], out,
                 y + offsets[e] * out);
    }
    return;
  }
  grouped_products(x, in, weights, scales, experts, offsets, out, y,
                   [&](const Product& f, int64_t o0, int64_t n, uint16_t* decoded) {
                     decode_fp4_tile(f.w, f.scale, in, o0, n, decoded);
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
