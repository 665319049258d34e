// What the vector kernels of attend_with_sink (sparse_attention_avx2.cpp, _avx512.cpp) share:
// everything but the dot products, written once over a vector-ops struct V. The definition they
// compute, bit for bit, is in sparse_attention.cpp. Heads go in groups of up to V::kMaxGroup, each
// kv row (one per token, shared by every head: MQA) loaded once per group; the weighted sum keeps
// 2 x G vectors in registers over all rows.
//
// A kernel's file defines TS_ATTN_TARGET (its target attribute: the templates here must carry it
// to use its intrinsics) and V, then includes this:
//   using Vec = ...; static constexpr int32_t kWidth;  // floats per vector
//   static constexpr int kMaxGroup;                    // a power of two
//   zero(), load(p), store(p, v), fmadd(a, b, c) = a * b + c, mul(a, b), set1(x);
//   template <int G> dots(q, rows, dim, n_rows, e): e[h * n_rows + j] = dot16(q_h, rows[j]) for
//   the G heads of q ([G, dim]) and every row.
// Its contents are in an anonymous namespace: each including file has its own copy, compiled for
// its instruction set.
#pragma once

#ifndef TS_ATTN_TARGET
#error "define TS_ATTN_TARGET (the kernel's target attribute) before including attend_heads.hpp"
#endif

#include <cmath>
#include <cstdint>
#include <vector>

#include "sink_softmax.hpp"

namespace tessera::reference {
namespace {

// out[h][c] for the G heads and columns [c0, c0 + 2 * kWidth): each the definition's fma chain
// over j, times the head's 1 / denom as it is stored.
template <class V, int G>
TS_ATTN_TARGET inline void group_weighted(const float* e, const float* const* rows, int64_t n_rows,
                                          int32_t dim, int32_t c0, const float* inverse,
                                          float* out) {
  typename V::Vec sum[G][2];
  for (auto& head : sum) {
    head[0] = head[1] = V::zero();
  }
  for (int64_t j = 0; j < n_rows; ++j) {
    const auto w0 = V::load(rows[j] + c0);
    const auto w1 = V::load(rows[j] + c0 + V::kWidth);
    for (int h = 0; h < G; ++h) {
      const auto eh = V::set1(e[h * n_rows + j]);
      sum[h][0] = V::fmadd(eh, w0, sum[h][0]);
      sum[h][1] = V::fmadd(eh, w1, sum[h][1]);
    }
  }
  for (int h = 0; h < G; ++h) {
    const auto scale = V::set1(inverse[h]);
    float* oh = out + static_cast<int64_t>(h) * dim + c0;
    V::store(oh, V::mul(sum[h][0], scale));
    V::store(oh + V::kWidth, V::mul(sum[h][1], scale));
  }
}

// G heads, starting at q's head 0 (q, sink, out already offset): the definition, all of it.
template <class V, int G>
TS_ATTN_TARGET void attend_group(const float* q, int32_t dim, const float* const* rows,
                                 int64_t n_rows, float scale, const float* sink, float* out) {
  thread_local std::vector<float> e;
  e.resize(static_cast<size_t>(G) * n_rows);
  V::template dots<G>(q, rows, dim, n_rows, e.data());
  float inverse[G];
  for (int h = 0; h < G; ++h) {
    inverse[h] = 1.0f / sink_softmax(e.data() + h * n_rows, n_rows, scale, sink[h]);
  }
  constexpr int32_t kColumns = 2 * V::kWidth;
  int32_t c0 = 0;
  for (; c0 + kColumns <= dim; c0 += kColumns) {
    group_weighted<V, G>(e.data(), rows, n_rows, dim, c0, inverse, out);
  }
  for (int h = 0; h < G; ++h) {  // a dim that is not a multiple of kColumns
    const float* eh = e.data() + h * n_rows;
    float* oh = out + static_cast<int64_t>(h) * dim;
    for (int32_t c = c0; c < dim; ++c) {
      float sum = 0.0f;
      for (int64_t j = 0; j < n_rows; ++j) {
        sum = std::fma(eh[j], rows[j][c], sum);
      }
      oh[c] = sum * inverse[h];
    }
  }
}

// Heads [h, n_heads) in groups of G, then G / 2, ..., 1: the same operations for every head
// whatever its group.
template <class V, int G = V::kMaxGroup>
TS_ATTN_TARGET void attend_heads(const float* q, int32_t n_heads, int32_t dim,
                                 const float* const* rows, int64_t n_rows, float scale,
                                 const float* sink, float* out, int32_t h = 0) {
  for (; h + G <= n_heads; h += G) {
    attend_group<V, G>(q + static_cast<int64_t>(h) * dim, dim, rows, n_rows, scale, sink + h,
                       out + static_cast<int64_t>(h) * dim);
  }
  if constexpr (G > 1) {
    attend_heads<V, G / 2>(q, n_heads, dim, rows, n_rows, scale, sink, out, h);
  }
}

}  // namespace
}  // namespace tessera::reference
