#include "conformance_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "parallel_for.hpp"
#include "reference_kernels.hpp"

namespace tessera::cudatest {

std::vector<float> random_rows(int64_t n, int32_t dim, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> value(-1.7f, 1.7f);
  std::vector<float> rows(static_cast<size_t>(n) * dim);
  for (int64_t r = 0; r < n; ++r) {
    const float magnitude = std::ldexp(1.0f, -static_cast<int>(rng() % 4));
    for (int32_t c = 0; c < dim; ++c)
      rows[static_cast<size_t>(r * dim + c)] = magnitude * value(rng);
  }
  return rows;
}

int64_t slot_count(const std::vector<uint8_t>& bf16_pool, int32_t dim) {
  return static_cast<int64_t>(bf16_pool.size()) / (2 * dim);
}

void copy_first_three_keys(const HostCase& c, int32_t dim, std::vector<float>& rows) {
  for (const auto& slots : c.index_slots)
    for (size_t k = 3; k < slots.size(); ++k)
      std::copy_n(rows.begin() + slots[k % 3] * dim, dim, rows.begin() + slots[k] * dim);
}

std::vector<float> decode_all(const ts_kv_cache_table& table, ts_instance* kv_on_cpu,
                              const ts_kv_layout& layout, const std::vector<uint8_t>& pool) {
  const int64_t n = static_cast<int64_t>(pool.size() / layout.page_bytes) * layout.entries_per_page;
  std::vector<int64_t> slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i;
  std::vector<float> rows(static_cast<size_t>(n) * layout.dim);
  const ts_status s = table.load(kv_on_cpu, &layout, pool.data(), slots.data(), n, rows.data(),
                                 ts_device{TS_DEVICE_CPU, 0, nullptr});
  if (s.code != TS_OK)
    throw std::runtime_error(std::string("kv load (CPU): ") + (s.message ? s.message : ""));
  return rows;
}

std::string Oracle::judge_token(const HostCase& c, int32_t s, int32_t i,
                                const std::vector<int32_t>& selected, const Tolerance& tol,
                                float* expected, int* swaps) const {
  const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(s)];
  const ts_attention_layer& L = c.layer;
  const int64_t p = seq.first_position + i, t = seq.query_offset + i;
  const int64_t vis = c.visible(s, p);
  std::vector<const float*> rows;
  for (int64_t pos = std::max<int64_t>(0, p - L.window + 1); pos <= p; ++pos)
    rows.push_back(main_.data() + c.window_slots[static_cast<size_t>(s)][static_cast<size_t>(
                                      pos - seq.window_first_position)] *
                                      L.head_dim);
  auto comp_row = [&](int64_t k) {
    return main_.data() + c.comp_slots[static_cast<size_t>(s)][static_cast<size_t>(k)] * L.head_dim;
  };
  if (L.compress_ratio != 4) {
    for (int64_t k = 0; k < vis; ++k) rows.push_back(comp_row(k));
  } else {
    const int32_t IH = L.index_n_heads, ID = L.index_head_dim, K = L.index_topk;
    std::vector<float> keys;
    for (int64_t k = 0; k < vis; ++k) {
      const float* key =
          index_.data() + c.index_slots[static_cast<size_t>(s)][static_cast<size_t>(k)] * ID;
      keys.insert(keys.end(), key, key + ID);
    }
    const float* q = c.index_q.data() + t * IH * ID;
    const float* w = c.index_w.data() + t * IH;
    const std::vector<int32_t> want = reference::indexer_select(q, w, IH, ID, keys.data(), vis, K);
    std::vector<double> score(static_cast<size_t>(vis));  // DSV4.md §2.5, in double
    double top = 1e-30;
    for (int64_t k = 0; k < vis; ++k) {
      double total = 0;
      for (int32_t h = 0; h < IH; ++h) {
        double dot = 0;
        for (int32_t d = 0; d < ID; ++d)
          dot += double(q[h * ID + d]) * keys[static_cast<size_t>(k * ID + d)];
        total += w[h] * std::max(dot, 0.0);
      }
      score[static_cast<size_t>(k)] = total;
      top = std::max(top, std::abs(total));
    }
    const int64_t count = std::min<int64_t>(vis, K);
    std::vector<char> seen(static_cast<size_t>(vis), 0);
    for (int64_t j = 0; j < K; ++j) {
      const int32_t v = selected[static_cast<size_t>(t * K + j)];
      const std::string at = "selected[" + std::to_string(j) + "] = " + std::to_string(v);
      if (j >= count) {
        if (v != -1) return at + ", want -1 padding (" + std::to_string(vis) + " visible)";
        continue;
      }
      if (v < 0 || v >= vis || seen[static_cast<size_t>(v)])
        return at + " is not a new visible entry (" + std::to_string(vis) + " visible)";
      seen[static_cast<size_t>(v)] = 1;
      const int32_t w_j = want[static_cast<size_t>(j)];
      const double gap = std::abs(score[static_cast<size_t>(v)] - score[static_cast<size_t>(w_j)]);
      if ((tol.exact_choices && v != w_j) || gap > 1e-4 * top) {
        std::ostringstream o;
        o << at << " (score " << score[static_cast<size_t>(v)] << "), the reference chose " << w_j
          << " (score " << score[static_cast<size_t>(w_j)] << ")";
        return o.str();
      }
      *swaps += v != w_j;
      rows.push_back(comp_row(v));
    }
  }
  reference::attend_with_sink(c.q.data() + t * L.n_heads * L.head_dim, L.n_heads, L.head_dim,
                              rows.data(), static_cast<int64_t>(rows.size()), L.softmax_scale,
                              c.sink.data(), expected);
  return "";
}

Verdict Oracle::judge(const HostCase& c, const std::vector<float>& out,
                      const std::vector<int32_t>& selected, int64_t entries_scored,
                      const Tolerance& tol) const {
  Verdict v;
  const ts_attention_layer& L = c.layer;
  struct Token {
    int32_t s, i;
  };
  std::vector<Token> tokens;
  int64_t visible = 0;
  for (int32_t s = 0; s < static_cast<int32_t>(c.sequences.size()); ++s)
    for (int32_t i = 0; i < c.sequences[static_cast<size_t>(s)].n_queries; ++i) {
      tokens.push_back({s, i});
      if (L.compress_ratio == 4)
        visible += c.visible(s, c.sequences[static_cast<size_t>(s)].first_position + i);
    }
  if (entries_scored != visible) {
    v.problem = "entries_scored " + std::to_string(entries_scored) + ", visible entries " +
                std::to_string(visible) + " (the indexer's work must follow the real context)";
    return v;
  }
  const int64_t HD = int64_t(L.n_heads) * L.head_dim;
  std::vector<float> expected(out.size(), 0.0f);
  std::vector<std::string> problems(tokens.size());
  std::vector<int> swaps(tokens.size(), 0);
  parallel_for(static_cast<int>(tokens.size()), [&](int n) {
    const Token tk = tokens[static_cast<size_t>(n)];
    const int64_t t = c.sequences[static_cast<size_t>(tk.s)].query_offset + tk.i;
    problems[static_cast<size_t>(n)] = judge_token(
        c, tk.s, tk.i, selected, tol, expected.data() + t * HD, &swaps[static_cast<size_t>(n)]);
  });
  for (size_t n = 0; n < tokens.size(); ++n) {
    v.tie_swaps += swaps[n];
    if (!problems[n].empty() && v.problem.empty()) {
      const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(tokens[n].s)];
      v.problem = "token " + std::to_string(seq.query_offset + tokens[n].i) + " (position " +
                  std::to_string(seq.first_position + tokens[n].i) + "): " + problems[n];
    }
  }
  if (!v.problem.empty()) return v;

  std::ostringstream bad;
  int reported = 0;
  int64_t differing = 0;
  for (int64_t th = 0; th < int64_t(c.n_tokens) * L.n_heads; ++th) {
    double num = 0, den = 0;
    for (int32_t e = 0; e < L.head_dim; ++e) {
      const size_t at = static_cast<size_t>(th * L.head_dim + e);
      const float a = out[at], b = expected[at];
      differing += std::memcmp(&a, &b, 4) != 0;
      const double err = std::abs(double(a) - b);
      num += err * err;
      den += double(b) * b;
      if ((!std::isfinite(a) || (tol.abs > 0 && err > tol.abs + tol.rel * std::abs(b))) &&
          reported++ < 8)
        bad << "\n       token " << th / L.n_heads << " head " << th % L.n_heads << " channel " << e
            << ": plugin " << a << ", reference " << b;
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    v.worst_rel_l2 = std::isfinite(rel) ? std::max(v.worst_rel_l2, rel) : INFINITY;
    if (!(rel <= tol.rel_l2) && reported++ < 8)
      bad << "\n       token " << th / L.n_heads << " head " << th % L.n_heads
          << ": relative L2 error " << rel << " above " << tol.rel_l2;
  }
  if (reported > 0)
    v.problem = std::to_string(reported) + " value(s) out of tolerance:" + bad.str();
  else if (tol.bit_equal && differing > 0)
    v.problem = std::to_string(differing) + " value(s) differ from the oracle's bits";
  return v;
}

}  // namespace tessera::cudatest
