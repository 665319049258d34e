// The oracle of attention_conformance_test: random cache rows, the rows a kv plugin's CPU load
// decodes from its pages, and the reference kernels (plugins/attention_reference) over those rows
// judging an attention plugin's choices and outputs, with the failing values in the verdict.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "tessera/plugin_abi.h"

namespace tessera::cudatest {

// n rows of dim values in +-1.7 times a per-row power of two (1 .. 2^-3), so that the fp8 cache's
// scale groups differ from row to row.
std::vector<float> random_rows(int64_t n, int32_t dim, std::mt19937_64& rng);

// The number of slots make_case's bf16 pool of `dim` channels holds (the case's slot range).
int64_t slot_count(const std::vector<uint8_t>& bf16_pool, int32_t dim);

// Every indexer key of each sequence made a copy of one of its first three: many exactly equal
// scores, so the order rule among equals decides the choice.
void copy_first_three_keys(const HostCase& c, int32_t dim, std::vector<float>& rows);

// Every slot of `pool` decoded by the kv plugin's CPU load: [slots, layout.dim].
std::vector<float> decode_all(const ts_kv_cache_table& table, ts_instance* kv_on_cpu,
                              const ts_kv_layout& layout, const std::vector<uint8_t>& pool);

struct Tolerance {
  bool exact_choices = false;     // choices equal to reference::indexer_select's
  bool bit_equal = false;         // outputs equal to the oracle's bits
  double rel_l2 = 1e-2;           // per (token, head)
  double abs = 4e-3, rel = 2e-2;  // per value: |err| <= abs + rel |ref| (0: not checked)
  static Tolerance exact(bool bits) { return {true, bits, 1e-5, 0, 0}; }
  static Tolerance tensor_core() { return {}; }
};

struct Verdict {
  std::string problem;  // "" when the plugin's results conform
  double worst_rel_l2 = 0;
  int tie_swaps = 0;  // choices that differ from the oracle's within the near-tie tolerance
};

class Oracle {
 public:
  Oracle() = default;
  Oracle(std::vector<float> main_rows, std::vector<float> index_rows)
      : main_(std::move(main_rows)), index_(std::move(index_rows)) {}

  // out [tokens, heads, head_dim]; selected [tokens, top-k] (CSA); entries_scored as run() said.
  Verdict judge(const HostCase& c, const std::vector<float>& out,
                const std::vector<int32_t>& selected, int64_t entries_scored,
                const Tolerance& tol) const;

 private:
  std::string judge_token(const HostCase& c, int32_t s, int32_t i,
                          const std::vector<int32_t>& selected, const Tolerance& tol,
                          float* expected, int* swaps) const;

  std::vector<float> main_, index_;
};

}  // namespace tessera::cudatest
