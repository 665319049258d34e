#include "attention_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "fp8_layout.hpp"
#include "indexer_codec.hpp"
#include "latent_codec.hpp"
#include "reference_kernels.hpp"

namespace tessera::cudatest {
namespace {

// SplitMix64: fast and good enough to fill gigabyte pools for the benchmark.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }
};

void fill_uniform(std::vector<float>& v, Random& rng, float lo, float hi, bool bf16_exact) {
  for (float& x : v) {
    x = rng.uniform(lo, hi);
    if (bf16_exact) x = bf16_to_float(float_to_bf16(x));
  }
}

bool is_fp8(const ts_kv_layout& l) { return std::strcmp(l.payload_dtype, "fp8_e4m3") == 0; }

// Every entry of fp8 pages encoded by kvcache_fp8's own codec from random rows whose scale
// varies by entry (2^-3 .. 1), so the scale groups differ.
std::vector<uint8_t> random_fp8_pool(const ts_kv_layout& l, int64_t pages, Random& rng) {
  std::vector<uint8_t> pool(static_cast<size_t>(pages) * l.page_bytes);
  const auto geometry = kvfp8::latent_geometry(l.dim, l.rope_dim);
  std::vector<float> row(static_cast<size_t>(l.dim));
  for (int64_t page = 0; page < pages; ++page)
    for (int64_t e = 0; e < l.entries_per_page; ++e) {
      const float magnitude = std::ldexp(1.0f, -static_cast<int>(rng.next() % 4));
      for (float& x : row) x = magnitude * rng.uniform(-1.7f, 1.7f);
      uint8_t* p = pool.data() + page * l.page_bytes;
      if (l.stream == TS_KV_MAIN)
        kvfp8::encode_latent(geometry, l.entries_per_page, row.data(), e, p);
      else
        kvfp8::encode_indexer_key(l.dim, l.entries_per_page, row.data(), e, p);
    }
  return pool;
}

// Pages of random records (every record, used or not).
std::vector<uint8_t> random_pool(const ts_kv_layout& l, int64_t n_slots, Random& rng) {
  const int64_t pages = (n_slots + l.entries_per_page - 1) / l.entries_per_page;
  if (is_fp8(l)) return random_fp8_pool(l, pages, rng);
  std::vector<uint8_t> pool(static_cast<size_t>(pages) * l.page_bytes);
  for (size_t i = 0; i + 1 < pool.size(); i += 2) {
    const uint16_t h = float_to_bf16(rng.uniform(-1.7f, 1.7f));
    std::memcpy(&pool[i], &h, 2);
  }
  return pool;
}

std::vector<float> decode(const std::vector<uint8_t>& pool, const ts_kv_layout& l, int64_t slot) {
  if (is_fp8(l)) {
    std::vector<float> row(static_cast<size_t>(l.dim));
    const uint8_t* page = pool.data() + slot / l.entries_per_page * l.page_bytes;
    const int64_t entry = slot % l.entries_per_page;
    if (l.stream == TS_KV_MAIN)
      kvfp8::decode_latent(kvfp8::latent_geometry(l.dim, l.rope_dim), l.entries_per_page, page,
                           entry, row.data());
    else
      kvfp8::decode_indexer_key(l.dim, l.entries_per_page, page, entry, row.data());
    return row;
  }
  const uint8_t* record = pool.data() + slot / l.entries_per_page * l.page_bytes +
                          l.payload_offset + slot % l.entries_per_page * l.payload_stride;
  std::vector<float> row(static_cast<size_t>(l.dim));
  for (int32_t c = 0; c < l.dim; ++c) {
    uint16_t h;
    std::memcpy(&h, record + 2 * c, 2);
    row[static_cast<size_t>(c)] = bf16_to_float(h);
  }
  return row;
}

}  // namespace

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

uint16_t float_to_bf16(float v) {  // round to nearest even, as the bf16 cache plugin stores
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

ts_kv_layout bf16_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page) {
  ts_kv_layout l{};
  l.struct_size = sizeof(ts_kv_layout);
  l.stream = stream;
  l.dim = dim;
  l.rope_dim = rope_dim;
  l.entries_per_page = entries_per_page;
  l.bytes_per_entry = static_cast<uint64_t>(dim) * 2;
  l.page_bytes = l.bytes_per_entry * static_cast<uint64_t>(entries_per_page);
  l.payload_offset = 0;
  l.payload_stride = l.bytes_per_entry;
  l.rope_offset = static_cast<uint64_t>(dim - rope_dim) * 2;
  l.rope_stride = l.bytes_per_entry;
  std::strncpy(l.payload_dtype, "bf16", sizeof l.payload_dtype);
  std::strncpy(l.rope_dtype, "bf16", sizeof l.rope_dtype);
  return l;
}

ts_kv_layout fp8_layout(int32_t stream, int32_t dim, int32_t rope_dim, int32_t entries_per_page) {
  ts_kv_layout l{};
  if (const std::string why = kvfp8::describe_layout(stream, dim, rope_dim, entries_per_page, l);
      !why.empty())
    throw std::invalid_argument("fp8_layout: " + why);
  return l;
}

ts_attention_batch HostCase::batch() const {
  return ts_attention_batch{sizeof(ts_attention_batch), static_cast<int32_t>(sequences.size()),
                            n_tokens, sequences.data()};
}

int64_t HostCase::visible(int32_t s, int64_t position) const {
  const int32_t m = layer.compress_ratio;
  return m > 0
             ? std::min<int64_t>(sequences[static_cast<size_t>(s)].n_compressed, (position + 1) / m)
             : 0;
}

int64_t HostCase::cache_bytes_read() const {
  int64_t bytes = 0;
  for (int32_t s = 0; s < static_cast<int32_t>(sequences.size()); ++s)
    for (int32_t i = 0; i < sequences[static_cast<size_t>(s)].n_queries; ++i) {
      const int64_t p = sequences[static_cast<size_t>(s)].first_position + i;
      const int64_t window_rows = p - std::max<int64_t>(0, p - layer.window + 1) + 1;
      const int64_t vis = visible(s, p);
      const int64_t comp =
          layer.compress_ratio == 4 ? std::min<int64_t>(vis, layer.index_topk) : vis;
      bytes += (window_rows + comp) * layer.head_dim * 2;
      if (layer.compress_ratio == 4) bytes += vis * layer.index_head_dim * 2;
    }
  return bytes;
}

double HostCase::flops() const {
  double f = 0;
  for (int32_t s = 0; s < static_cast<int32_t>(sequences.size()); ++s)
    for (int32_t i = 0; i < sequences[static_cast<size_t>(s)].n_queries; ++i) {
      const int64_t p = sequences[static_cast<size_t>(s)].first_position + i;
      const int64_t window_rows = p - std::max<int64_t>(0, p - layer.window + 1) + 1;
      const int64_t vis = visible(s, p);
      const int64_t comp =
          layer.compress_ratio == 4 ? std::min<int64_t>(vis, layer.index_topk) : vis;
      f += 4.0 * layer.n_heads * layer.head_dim * static_cast<double>(window_rows + comp);
      if (layer.compress_ratio == 4)
        f += 2.0 * layer.index_n_heads * layer.index_head_dim * static_cast<double>(vis);
    }
  return f;
}

HostCase make_case(const CaseSpec& spec, uint64_t seed) {
  HostCase c;
  c.spec = spec;
  Random rng{seed};
  const int32_t m = spec.ratio;
  ts_attention_layer& L = c.layer;
  L.struct_size = sizeof(ts_attention_layer);
  L.n_heads = spec.n_heads;
  L.head_dim = spec.head_dim;
  L.rope_dim = spec.rope_dim;
  L.window = spec.window;
  L.compress_ratio = m;
  L.index_n_heads = spec.index_heads;
  L.index_head_dim = spec.index_dim;
  L.index_topk = spec.topk;
  L.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.head_dim)));
  const auto layout = spec.fp8_cache ? fp8_layout : bf16_layout;
  c.main_layout = layout(TS_KV_MAIN, spec.head_dim, spec.rope_dim, spec.entries_per_page);
  // Indexer keys: the runtime describes them with rope_dim = dim (docs/kvcache.md).
  c.index_layout = layout(TS_KV_INDEXER, spec.index_dim, spec.index_dim, spec.entries_per_page);

  // Sequences, queries packed in order; slots are drawn from a shuffled range so that rows of
  // one sequence are scattered over pages.
  int64_t main_used = 0, index_used = 0;
  for (const SequenceSpec& q : spec.sequences) {
    ts_attention_sequence s{};
    s.query_offset = c.n_tokens;
    s.n_queries = q.n_queries;
    s.first_position = q.first_position;
    s.window_first_position =
        std::max<int64_t>(0, q.first_position - spec.window + 1 - q.extra_window);
    const int64_t last = q.first_position + q.n_queries - 1;
    s.n_compressed = m > 0 ? (last + 1) / m : 0;
    c.n_tokens += q.n_queries;
    main_used += last - s.window_first_position + 1 + s.n_compressed;
    if (m == 4) index_used += s.n_compressed;
    c.sequences.push_back(s);
  }
  const int64_t main_slots = main_used + main_used / 8 + 3;
  const int64_t index_slots = index_used + index_used / 8 + 3;
  std::vector<int64_t> main_order(static_cast<size_t>(main_slots)),
      index_order(static_cast<size_t>(index_slots));
  std::iota(main_order.begin(), main_order.end(), 0);
  std::iota(index_order.begin(), index_order.end(), 0);
  auto shuffle = [&rng](std::vector<int64_t>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.next() % i]);
  };
  shuffle(main_order);
  shuffle(index_order);
  size_t next_main = 0, next_index = 0;
  for (ts_attention_sequence& s : c.sequences) {
    const int64_t last = s.first_position + s.n_queries - 1;
    auto& ws = c.window_slots.emplace_back();
    for (int64_t p = s.window_first_position; p <= last; ++p) ws.push_back(main_order[next_main++]);
    auto& cs = c.comp_slots.emplace_back();
    auto& is = c.index_slots.emplace_back();
    for (int64_t k = 0; k < s.n_compressed; ++k) {
      cs.push_back(main_order[next_main++]);
      if (m == 4) is.push_back(index_order[next_index++]);
    }
  }
  for (size_t i = 0; i < c.sequences.size(); ++i) {
    c.sequences[i].window_slots = c.window_slots[i].data();
    c.sequences[i].compressed_slots = c.comp_slots[i].data();
    c.sequences[i].indexer_slots = c.index_slots[i].data();
  }
  c.main_pool = random_pool(c.main_layout, main_slots, rng);
  if (m == 4) c.index_pool = random_pool(c.index_layout, index_slots, rng);

  c.q.resize(static_cast<size_t>(c.n_tokens) * spec.n_heads * spec.head_dim);
  fill_uniform(c.q, rng, -1.7f, 1.7f, spec.bf16_exact_q);
  c.sink.resize(static_cast<size_t>(spec.n_heads));
  fill_uniform(c.sink, rng, -2.0f, 2.0f, false);
  if (m == 4) {
    c.index_q.resize(static_cast<size_t>(c.n_tokens) * spec.index_heads * spec.index_dim);
    fill_uniform(c.index_q, rng, -1.7f, 1.7f, spec.bf16_exact_q);
    c.index_w.resize(static_cast<size_t>(c.n_tokens) * spec.index_heads);
    fill_uniform(c.index_w, rng, -1.0f, 1.0f, false);
  }
  return c;
}

namespace {

std::vector<float> index_keys(const HostCase& c, int32_t s, int64_t visible) {
  std::vector<float> keys;
  keys.reserve(static_cast<size_t>(visible * c.layer.index_head_dim));
  for (int64_t k = 0; k < visible; ++k) {
    const std::vector<float> row =
        decode(c.index_pool, c.index_layout,
               c.index_slots[static_cast<size_t>(s)][static_cast<size_t>(k)]);
    keys.insert(keys.end(), row.begin(), row.end());
  }
  return keys;
}

}  // namespace

std::vector<int32_t> reference_selection(const HostCase& c, int32_t s, int32_t i) {
  const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(s)];
  const int64_t p = seq.first_position + i, t = seq.query_offset + i;
  const int64_t vis = c.visible(s, p);
  const std::vector<float> keys = index_keys(c, s, vis);
  const int32_t IH = c.layer.index_n_heads, ID = c.layer.index_head_dim;
  return reference::indexer_select(c.index_q.data() + t * IH * ID, c.index_w.data() + t * IH, IH,
                                   ID, keys.data(), vis, c.layer.index_topk);
}

std::vector<double> reference_scores(const HostCase& c, int32_t s, int32_t i) {
  const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(s)];
  const int64_t p = seq.first_position + i, t = seq.query_offset + i;
  const int64_t vis = c.visible(s, p);
  const std::vector<float> keys = index_keys(c, s, vis);
  const int32_t IH = c.layer.index_n_heads, ID = c.layer.index_head_dim;
  std::vector<double> scores(static_cast<size_t>(vis));
  for (int64_t k = 0; k < vis; ++k) {  // DSV4.md §2.5: sum_h w_h ReLU(q_h . key_k)
    double total = 0.0;
    for (int32_t h = 0; h < IH; ++h) {
      double dot = 0.0;
      for (int32_t d = 0; d < ID; ++d)
        dot += static_cast<double>(c.index_q[static_cast<size_t>((t * IH + h) * ID + d)]) *
               keys[static_cast<size_t>(k * ID + d)];
      total += c.index_w[static_cast<size_t>(t * IH + h)] * std::max(dot, 0.0);
    }
    scores[static_cast<size_t>(k)] = total;
  }
  return scores;
}

void reference_attention(const HostCase& c, int32_t s, int32_t i, const std::vector<int32_t>& picks,
                         float* out) {
  const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(s)];
  const int64_t p = seq.first_position + i, t = seq.query_offset + i;
  const int32_t H = c.layer.n_heads, D = c.layer.head_dim;
  std::vector<std::vector<float>> rows;
  for (int64_t pos = std::max<int64_t>(0, p - c.layer.window + 1); pos <= p; ++pos)
    rows.push_back(decode(c.main_pool, c.main_layout,
                          c.window_slots[static_cast<size_t>(s)]
                                        [static_cast<size_t>(pos - seq.window_first_position)]));
  const int64_t vis = c.visible(s, p);
  auto comp_row = [&](int64_t k) {
    if (k < 0 || k >= vis)
      throw std::runtime_error("selected entry " + std::to_string(k) + " is not visible");
    return decode(c.main_pool, c.main_layout,
                  c.comp_slots[static_cast<size_t>(s)][static_cast<size_t>(k)]);
  };
  if (c.layer.compress_ratio == 4)
    for (int32_t k : picks) rows.push_back(comp_row(k));
  else
    for (int64_t k = 0; k < vis; ++k) rows.push_back(comp_row(k));
  std::vector<const float*> pointers;
  for (const auto& r : rows) pointers.push_back(r.data());
  reference::attend_with_sink(c.q.data() + t * H * D, H, D, pointers.data(),
                              static_cast<int64_t>(pointers.size()), c.layer.softmax_scale,
                              c.sink.data(), out);
}

ts_attention_inputs case_inputs(const HostCase& c, const float* q, const float* index_q,
                                const float* index_w, const uint8_t* main_pool,
                                const uint8_t* index_pool) {
  ts_attention_inputs in{};
  in.struct_size = sizeof in;
  in.q = q;
  in.index_q = index_q;
  in.index_w = index_w;
  in.kv_pool = main_pool;
  in.index_pool = index_pool;
  in.kv = ts_kv_reader{nullptr, nullptr, &c.main_layout, &c.index_layout};
  return in;
}

}  // namespace tessera::cudatest
