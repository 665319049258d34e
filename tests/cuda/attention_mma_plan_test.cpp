// attention_mma_plan_test: the host half of the mma backend (plugins/attention_mma/work_plan.cpp),
// no GPU needed. Checks that the work split covers every token's rows exactly once per head
// group, that the indexer scores exactly the entries visible to each token (cost grows with the
// real context, never with a maximum), that workspace sections are aligned and disjoint, and
// which layers and kv-cache layouts are accepted or refused.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "work_plan.hpp"

namespace {

using namespace tessera::mma;
using tessera::cudatest::CaseSpec;
using tessera::cudatest::HostCase;
using tessera::cudatest::make_case;

int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++g_failures;
  }
}

const DeviceLimits kH200{132, 232448, 233472};
const DeviceLimits kSm120{48, 101376, 102400};

void check_cover(const HostCase& c, const DeviceLimits& limits) {
  const std::string name = c.spec.name + ": ";
  const ts_attention_batch batch = c.batch();
  expect(check_layer(c.layer, limits).empty(),
         name + "layer refused: " + check_layer(c.layer, limits));
  expect(check_batch(c.layer, batch).empty(),
         name + "batch refused: " + check_batch(c.layer, batch));
  const WorkPlan plan = build_work_plan(c.layer, batch, limits);
  expect(static_cast<int32_t>(plan.tasks.size()) == c.n_tokens, name + "one task per token");

  // attention rows: each (task, head group) covered exactly once, in order
  std::map<std::pair<int, int>, int> next_row;
  std::vector<int> partial_uses(static_cast<size_t>(plan.n_partials), 0);
  for (const AttentionItem& it : plan.attention_items) {
    int& row = next_row[{it.task, it.head_group}];
    expect(it.row_begin == row && it.row_end > it.row_begin, name + "attention items contiguous");
    row = it.row_end;
    if (it.partial >= 0) ++partial_uses[static_cast<size_t>(it.partial)];
  }
  int64_t expect_scored = 0;
  for (int32_t ti = 0; ti < static_cast<int32_t>(plan.tasks.size()); ++ti) {
    const TokenTask& t = plan.tasks[static_cast<size_t>(ti)];
    for (int hg = 0; hg < plan.head_groups; ++hg)
      expect(next_row[{ti, hg}] == t.n_window + t.n_comp_rows,
             name + "all rows of a token covered");
    expect(t.n_window == std::min<int64_t>(t.position + 1, c.layer.window), name + "window rows");
    expect(
        t.n_visible == (c.layer.compress_ratio > 0 ? (t.position + 1) / c.layer.compress_ratio : 0),
        name + "visibility: entry k seen by p iff (k+1)*m <= p+1");
    if (c.layer.compress_ratio == 4) {
      expect(t.n_comp_rows == std::min(t.n_visible, c.layer.index_topk),
             name + "top-k = min(index_topk, visible)");
      expect_scored += t.n_visible;
    }
  }
  for (int u : partial_uses) expect(u == 1, name + "each partial slot written once");
  int combined = 0;
  for (const CombineItem& ci : plan.combine_items) {
    combined += ci.n_partials;
    expect(ci.n_partials > 1, name + "combine only split rows");
  }
  expect(combined == plan.n_partials, name + "every partial combined");

  // indexer: exactly the visible entries of each token
  std::map<int, int> next_key;
  for (const IndexerItem& it : plan.indexer_items) {
    int& key = next_key[it.task];
    expect(it.key_begin == key && it.key_end > it.key_begin, name + "indexer items contiguous");
    key = it.key_end;
  }
  for (int32_t ti = 0; ti < static_cast<int32_t>(plan.tasks.size()); ++ti)
    expect(next_key[ti] ==
               (c.layer.compress_ratio == 4 ? plan.tasks[static_cast<size_t>(ti)].n_visible : 0),
           name + "indexer covers the visible entries only");
  expect(plan.entries_scored == expect_scored && plan.n_scores == expect_scored,
         name + "entries_scored");

  // workspace sections: aligned, in order, inside total
  const WorkspaceLayout& w = plan.workspace;
  const size_t sections[] = {w.tasks,          w.attention_items, w.combine_items, w.indexer_items,
                             w.window_offsets, w.comp_offsets,    w.index_offsets, w.metadata_bytes,
                             w.scores,         w.selected,        w.partial_o,     w.partial_ml,
                             w.total};
  for (size_t i = 0; i < std::size(sections); ++i) {
    expect(sections[i] % 256 == 0, name + "section aligned");
    if (i > 0) expect(sections[i] >= sections[i - 1], name + "sections in order");
  }
  expect(w.partial_ml + static_cast<size_t>(plan.n_partials) * plan.heads_per_block * 8 <= w.total,
         name + "partials inside the workspace");
  std::vector<uint8_t> blob(w.metadata_bytes, 0xab);
  pack_metadata(plan, blob.data());
  expect(plan.tasks.empty() || std::memcmp(blob.data() + w.tasks, plan.tasks.data(),
                                           plan.tasks.size() * sizeof(plan.tasks[0])) == 0,
         name + "tasks packed in their section");
}

void check_splits() {
  // One decode token with 640 rows on 132 SMs: split for parallelism; 4096 prefill tokens: not.
  CaseSpec decode{"split-decode", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}}};
  const HostCase d = make_case(decode, 3);
  const WorkPlan pd = build_work_plan(d.layer, d.batch(), kH200);
  expect(pd.attention_items.size() >= 4 && pd.combine_items.size() == 1,
         "a long decode row list is split");
  CaseSpec prefill{"split-prefill", 64, 512, 64, 128, 0, 64, 128, 512, 64, {{0, 4096}}};
  const HostCase p = make_case(prefill, 4);
  const WorkPlan pp = build_work_plan(p.layer, p.batch(), kH200);
  expect(pp.attention_items.size() == 4096 && pp.combine_items.empty(),
         "prefill tokens are not split");
  expect(pp.heads_per_block == 64 && pp.head_groups == 1, "64 heads in one block on an H200");
  const WorkPlan small = build_work_plan(p.layer, p.batch(), kSm120);
  expect(small.heads_per_block == 32 && small.head_groups == 2 && small.attention_smem <= 101376,
         "sm_120 shared memory: 2 groups of 32 heads");
}

void check_indexer_cost() {
  // The same token position costs the same indexer work whatever else the cache holds.
  CaseSpec a{"cost-a", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{1000, 1}}};
  CaseSpec b{"cost-b", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{1000, 1}, {0, 1}}};
  const HostCase ca = make_case(a, 5), cb = make_case(b, 6);
  const int64_t wa = build_work_plan(ca.layer, ca.batch(), kH200).entries_scored;
  const int64_t wb = build_work_plan(cb.layer, cb.batch(), kH200).entries_scored;
  expect(wa == 1001 / 4 && wb == wa, "indexer work = visible entries (250), not a maximum");
}

void check_refusals() {
  CaseSpec s{"layer", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{10, 1}}};
  HostCase c = make_case(s, 7);
  c.layer.attn_sink = reinterpret_cast<const float*>(16);  // any non-null device address
  expect(check_layer(c.layer, kH200).empty(), "Flash layer accepted");
  auto refused = [&](auto edit, const char* word) {
    ts_attention_layer l = c.layer;
    edit(l);
    const std::string why = check_layer(l, kH200);
    expect(why.find(word) != std::string::npos,
           std::string("layer refused naming ") + word + ": '" + why + "'");
  };
  refused([](ts_attention_layer& l) { l.head_dim = 96; }, "head_dim");
  refused([](ts_attention_layer& l) { l.compress_ratio = 3; }, "compress_ratio");
  refused([](ts_attention_layer& l) { l.index_topk = 5000; }, "index_topk");
  refused([](ts_attention_layer& l) { l.index_n_heads = 65; }, "index_n_heads");
  refused([](ts_attention_layer& l) { l.index_head_dim = 96; }, "index_head_dim");
  refused([](ts_attention_layer& l) { l.attn_sink = nullptr; }, "attn_sink");
  expect(check_layer(c.layer, DeviceLimits{1, 16 * 1024, 16 * 1024}).find("shared memory") !=
             std::string::npos,
         "too little shared memory refused");

  RecordFormat f{};
  const ts_kv_layout bf16 = tessera::cudatest::bf16_layout(TS_KV_MAIN, 512, 64, 64);
  expect(read_layout(&bf16, 512, "main", f).empty() && f.fp8 == 0, "bf16 layout accepted");
  expect(!read_layout(&bf16, 256, "main", f).empty(), "dim mismatch refused");
  const ts_kv_layout fp8 = tessera::cudatest::fp8_layout(TS_KV_MAIN, 512, 64, 64);
  expect(read_layout(&fp8, 512, "main", f).empty() && f.fp8 == 1 && f.nope == 448 &&
             f.record_bytes == 576 && f.scale_offset == 64 * 576 && f.scale_stride == 8,
         "kvcache_fp8's Flash main layout accepted: 448 e4m3 + 64 bf16, 8 scale bytes");
  const ts_kv_layout keys = tessera::cudatest::fp8_layout(TS_KV_INDEXER, 128, 128, 64);
  expect(read_layout(&keys, 128, "indexer", f).empty() && f.fp8 == 1 && f.record_bytes == 128 &&
             f.scale_offset == 64 * 128 && f.scale_stride == 4,
         "kvcache_fp8's indexer layout accepted: 128 e4m3 + an fp32 scale");
  const ts_kv_layout odd = tessera::cudatest::fp8_layout(TS_KV_MAIN, 128, 40, 64);
  expect(read_layout(&odd, 128, "main", f).find("multiple of 16") != std::string::npos,
         "fp8 entries of 88 e4m3 channels refused");
  ts_kv_layout fp32 = bf16;  // kvcache_bf16 with storage = "fp32"
  std::strncpy(fp32.payload_dtype, "fp32", sizeof fp32.payload_dtype);
  expect(read_layout(&fp32, 512, "main", f).find("'bf16' and 'fp8'") != std::string::npos,
         "fp32 layout refused");
  ts_kv_layout split = bf16;
  split.rope_offset = 4096;
  expect(!read_layout(&split, 512, "main", f).empty(), "non-contiguous rope refused");
  expect(!read_layout(nullptr, 512, "main", f).empty(), "missing layout refused");

  ts_attention_batch batch = c.batch();
  ts_attention_sequence seq = c.sequences[0];
  seq.first_position = 500;
  seq.window_first_position = 450;  // position 373 is the lowest needed
  batch.sequences = &seq;
  expect(check_batch(c.layer, batch).find("window") != std::string::npos,
         "late window slots refused");
}

}  // namespace

int main() {
  const CaseSpec specs[] = {
      {"window", 4, 64, 16, 8, 0, 0, 64, 1, 5, {{20, 1}, {0, 12}, {5, 7, 3}}},
      {"hca", 20, 128, 32, 16, 128, 0, 64, 1, 7, {{1000, 1}, {250, 3}, {0, 5}, {120, 20}}},
      {"csa", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{200, 1}, {0, 40}, {60, 9}, {3, 2}}},
      {"heads128", 128, 64, 16, 32, 128, 0, 64, 1, 64, {{600, 2}, {0, 3}}},
      {"flash-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {0, 700}, {9000, 64}}},
  };
  for (const CaseSpec& spec : specs) {
    HostCase c = make_case(spec, 11);
    c.layer.attn_sink = reinterpret_cast<const float*>(16);
    check_cover(c, kH200);
    check_cover(c, kSm120);
    check_cover(c, DeviceLimits{4, 232448, 233472});
  }
  check_splits();
  check_indexer_cost();
  check_refusals();
  std::printf("attention_mma_plan_test: %s (%d failure(s))\n", g_failures == 0 ? "pass" : "FAIL",
              g_failures);
  return g_failures == 0 ? 0 : 1;
}
