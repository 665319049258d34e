// attention_mma_test PLUGIN.so [--seed N] [--only NAME] [--heavy|--quick] [--markdown FILE]
//
// Compares the "mma" attention plugin (loaded with dlopen, as the registry would) with the CPU
// reference of plugins/attention_reference on random problems: Flash-like shapes (64 heads x 512,
// rope 64, window 128, ratios 0 / 4 / 128, top-k 512) and small ones, decode (1 query) and
// prefill (many queries) batches of several sequences, scattered slots over bf16 pages.
// Checks: every output written and finite; each element within tolerance of the reference
// (failing values printed); CSA choices equal to reference::indexer_select up to near-ties (the
// reference output is then computed over the plugin's choices); entries_scored == visible
// entries; identical results when run twice; the shaped run (ABI 1.7) gives run()'s bits with
// zero padding rows (attention_mma_shaped.hpp); refusals (other cache formats, CPU device, host
// memory, small workspace, unsupported shapes) with a clear status.
//
// Exit status: 0 pass, 1 failure, 77 no CUDA device (ctest SKIP_RETURN_CODE), after checking
// that the plugin itself refuses cleanly there.
// The emulator build (TESSERA_TEST_EMULATED) runs the same on the SIMT emulator, without the
// heavy cases unless --heavy.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "attention_case.hpp"
#include "attention_mma_shaped.hpp"
#include "parallel_for.hpp"
#include "plugin_loader.hpp"
#include "test_device.hpp"

namespace {

using namespace tessera::cudatest;

constexpr int kSkip = 77;

std::vector<CaseSpec> all_cases() {
  std::vector<CaseSpec> cases;
  auto add = [&](CaseSpec c) { cases.push_back(std::move(c)); };
  // name, heads, dim, rope, window, ratio, index heads, index dim, topk, page, sequences
  add({"window-small", 4, 64, 16, 8, 0, 0, 64, 1, 5, {{20, 1}, {0, 12}, {5, 7, 3}}});
  add({"hca-small", 20, 128, 32, 16, 128, 0, 64, 1, 7, {{1000, 1}, {250, 3}, {0, 5}, {120, 20}}});
  add({"csa-small", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{200, 1}, {0, 40}, {60, 9}, {3, 2}}});
  add({"csa-topk-above-visible", 32, 256, 64, 32, 4, 16, 128, 64, 64, {{100, 1}, {300, 4}}});
  add({"csa-q-not-bf16", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{150, 1}, {40, 6}}, false});
  // models/tiny-dsv4's CSA layer: 4 heads x 64, rope 16, 4 indexer heads x 32, top-k 16.
  add({"tiny-dsv4-csa", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{300, 1}, {0, 70}, {9, 5}}});
  // The fp8 cache's records (kvcache_fp8), dequantised in the gather.
  auto fp8 = [](CaseSpec c) {
    c.name += "-fp8";
    c.fp8_cache = true;
    return c;
  };
  add(fp8({"tiny-dsv4-csa", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{300, 1}, {0, 70}, {9, 5}}}));
  add(fp8({"hca-small", 20, 128, 32, 16, 128, 0, 64, 1, 7, {{1000, 1}, {250, 3}, {0, 5}}}));
  add(fp8({"flash-decode-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {90, 1}}}));
  add({"heads128-hca", 128, 64, 16, 32, 128, 0, 64, 1, 64, {{600, 2}, {0, 3}}});
  add({"flash-decode-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {700, 1}, {90, 1}}});
  add({"flash-decode-hca", 64, 512, 64, 128, 128, 64, 128, 512, 64, {{5000, 1}, {130, 1}}});
  add({"flash-decode-window", 64, 512, 64, 128, 0, 64, 128, 512, 64, {{3000, 1}, {10, 1}}});
  // Heavy: GPU only (minutes on the emulator).
  add({"flash-prefill-csa",
       64,
       512,
       64,
       128,
       4,
       64,
       128,
       512,
       64,
       {{0, 256}, {1024, 128}},
       true,
       true});
  add({"flash-decode-batch-csa",
       64,
       512,
       64,
       128,
       4,
       64,
       128,
       512,
       64,
       {{1000, 1},
        {2047, 1},
        {2048, 1},
        {3000, 1},
        {4095, 1},
        {5000, 1},
        {6000, 1},
        {8191, 1},
        {127, 1},
        {128, 1},
        {511, 1},
        {9000, 1},
        {12000, 1},
        {3, 1},
        {700, 1},
        {16383, 1}},
       true,
       true});
  add({"flash-prefill-hca",
       64,
       512,
       64,
       128,
       128,
       64,
       128,
       512,
       64,
       {{0, 384}, {4096, 64}},
       true,
       true});
  add({"flash-prefill-window",
       64,
       512,
       64,
       128,
       0,
       64,
       128,
       512,
       64,
       {{0, 300}, {77, 50}},
       true,
       true});
  add({"flash-mixed-csa",
       64,
       512,
       64,
       128,
       4,
       64,
       128,
       512,
       64,
       {{4000, 1}, {0, 100}, {2500, 40}, {9000, 1}},
       true,
       true});
  return cases;
}

struct Options {
  std::string plugin;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string only;
  bool heavy = false;
  bool quick = false;
  std::string markdown;
};

struct CaseResult {
  std::string name;
  int tokens = 0;
  double max_abs_err = 0, max_rel_l2 = 0, ms = 0;
  int tie_swaps = 0;
  bool pass = false;
  std::string note;
};

std::string shape_text(const CaseSpec& s, int tokens) {
  std::ostringstream o;
  o << tokens << " tok, " << s.n_heads << "x" << s.head_dim << ", window " << s.window << ", ratio "
    << s.ratio;
  if (s.ratio == 4) o << ", topk " << s.topk;
  return o.str();
}

struct DeviceCase {
  DeviceArray<float> q, index_q, index_w, sink, out;
  DeviceArray<uint8_t> main_pool, index_pool, workspace;
  DeviceArray<int32_t> selected;
};

DeviceCase upload(const HostCase& c) {
  DeviceCase d;
  d.q = DeviceArray<float>(c.q);
  d.sink = DeviceArray<float>(c.sink);
  d.main_pool = DeviceArray<uint8_t>(c.main_pool);
  if (c.layer.compress_ratio == 4) {
    d.index_q = DeviceArray<float>(c.index_q);
    d.index_w = DeviceArray<float>(c.index_w);
    d.index_pool = DeviceArray<uint8_t>(c.index_pool);
    d.selected = DeviceArray<int32_t>(static_cast<size_t>(c.n_tokens) * c.layer.index_topk);
  }
  d.out = DeviceArray<float>(c.q.size());
  return d;
}

ts_attention_inputs inputs_of(const HostCase& c, const DeviceCase& d) {
  return case_inputs(c, d.q.get(), d.index_q.get(), d.index_w.get(), d.main_pool.get(),
                     d.index_pool.get());
}

std::string message(const ts_status& s) { return s.message ? s.message : ""; }

// One run: poison the outputs, plan, run, wait; returns the status.
ts_status run_once(const AttentionInstance& inst, HostCase& c, DeviceCase& d,
                   int64_t* entries_scored, double* ms) {
  d.out.upload(std::vector<float>(d.out.size(), std::numeric_limits<float>::quiet_NaN()));
  if (d.selected.size() > 0) d.selected.upload(std::vector<int32_t>(d.selected.size(), -7));
  c.layer.attn_sink = d.sink.get();
  const ts_attention_batch batch = c.batch();
  size_t bytes = 0;
  ts_status s = inst.table().plan(inst.get(), &c.layer, &batch, &bytes);
  if (s.code != TS_OK) return s;
  if (d.workspace.size() < bytes) d.workspace = DeviceArray<uint8_t>(bytes);
  const ts_attention_inputs in = inputs_of(c, d);
  ts_attention_outputs out{};
  out.struct_size = sizeof out;
  out.out = d.out.get();
  out.selected = d.selected.size() > 0 ? d.selected.get() : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  s = inst.table().run(inst.get(), &c.layer, &batch, &in, &out, d.workspace.get(),
                       d.workspace.size(), AttentionInstance::device());
  synchronize();
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  *entries_scored = out.entries_scored;
  return s;
}

CaseResult check_case(const AttentionInstance& inst, const CaseSpec& spec, uint64_t seed) {
  CaseResult r;
  r.name = spec.name;
  HostCase c = make_case(spec, seed);
  r.tokens = c.n_tokens;
  DeviceCase d = upload(c);
  int64_t scored = 0;
  ts_status s = run_once(inst, c, d, &scored, &r.ms);
  if (s.code != TS_OK) {
    r.note = "run failed: " + message(s);
    return r;
  }
  const std::vector<float> out = d.out.download();
  const std::vector<int32_t> selected =
      d.selected.size() > 0 ? d.selected.download() : std::vector<int32_t>{};

  // ---- second run: a kernel race shows up as a different result on the same inputs
  if (!emulated()) {
    double ms2 = 0;
    int64_t scored2 = 0;
    s = run_once(inst, c, d, &scored2, &ms2);
    if (s.code != TS_OK || std::memcmp(d.out.download().data(), out.data(), out.size() * 4) != 0 ||
        (d.selected.size() > 0 && d.selected.download() != selected)) {
      r.note = "a second run on the same inputs gave a different result (race?)";
      return r;
    }
    r.ms = std::min(r.ms, ms2);
  }

  const int32_t H = c.layer.n_heads, D = c.layer.head_dim, K = c.layer.index_topk;
  const bool csa = c.layer.compress_ratio == 4;
  struct Token {
    int32_t s, i;
  };
  std::vector<Token> tokens;
  int64_t expect_scored = 0;
  for (int32_t s2 = 0; s2 < static_cast<int32_t>(c.sequences.size()); ++s2)
    for (int32_t i = 0; i < c.sequences[static_cast<size_t>(s2)].n_queries; ++i) {
      tokens.push_back({s2, i});
      if (csa)
        expect_scored += c.visible(s2, c.sequences[static_cast<size_t>(s2)].first_position + i);
    }
  if (scored != expect_scored) {
    r.note = "entries_scored " + std::to_string(scored) + ", visible entries " +
             std::to_string(expect_scored);
    return r;
  }

  std::vector<float> ref(out.size(), 0.0f);
  std::vector<std::string> problems(tokens.size());
  std::vector<int> swaps(tokens.size(), 0);
  parallel_for(static_cast<int>(tokens.size()), [&](int n) {
    const auto [si, i] = tokens[static_cast<size_t>(n)];
    const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(si)];
    const int64_t t = seq.query_offset + i, p = seq.first_position + i;
    std::vector<int32_t> picks;
    if (csa) {
      const int64_t vis = c.visible(si, p), k = std::min<int64_t>(vis, K);
      const int32_t* row = selected.data() + t * K;
      const std::vector<int32_t> want = reference_selection(c, si, i);
      const std::vector<double> score = reference_scores(c, si, i);
      double top = 1e-30;
      for (double v : score) top = std::max(top, std::abs(v));
      const double tol = (spec.bf16_exact_q ? 1e-4 : 2e-2) * top;
      std::vector<char> seen(static_cast<size_t>(vis), 0);
      for (int64_t j = 0; j < K; ++j) {
        const int32_t v = row[j];
        if (j >= k) {
          if (v != -1)
            problems[n] =
                "selected[" + std::to_string(j) + "] = " + std::to_string(v) + ", want -1 padding";
          continue;
        }
        if (v < 0 || v >= vis || seen[static_cast<size_t>(v)]) {
          problems[n] = "selected[" + std::to_string(j) + "] = " + std::to_string(v) +
                        " is not a new visible entry";
          break;
        }
        seen[static_cast<size_t>(v)] = 1;
        if (std::abs(score[static_cast<size_t>(v)] -
                     score[static_cast<size_t>(want[static_cast<size_t>(j)])]) > tol) {
          problems[n] =
              "rank " + std::to_string(j) + ": chose entry " + std::to_string(v) + " (score " +
              std::to_string(score[static_cast<size_t>(v)]) + "), reference entry " +
              std::to_string(want[static_cast<size_t>(j)]) + " (score " +
              std::to_string(score[static_cast<size_t>(want[static_cast<size_t>(j)])]) + ")";
          break;
        }
        swaps[n] += v != want[static_cast<size_t>(j)];
        picks.push_back(v);
      }
      if (!problems[n].empty()) return;
    }
    reference_attention(c, si, i, picks, ref.data() + t * H * D);
  });
  for (size_t n = 0; n < tokens.size(); ++n) {
    r.tie_swaps += swaps[n];
    if (!problems[n].empty()) {
      const ts_attention_sequence& seq = c.sequences[static_cast<size_t>(tokens[n].s)];
      r.note = "token " + std::to_string(seq.query_offset + tokens[n].i) + " (position " +
               std::to_string(seq.first_position + tokens[n].i) + "): " + problems[n];
      return r;
    }
  }

  // ---- outputs: |dev - ref| <= 4e-3 + 2e-2 |ref| per element (bf16 probabilities, fp32 sums),
  // and per (token, head) a relative L2 error below 1e-2.
  int reported = 0;
  std::ostringstream bad;
  for (int64_t t = 0; t < c.n_tokens; ++t)
    for (int32_t h = 0; h < H; ++h) {
      double num = 0, den = 0;
      for (int32_t e = 0; e < D; ++e) {
        const size_t at = static_cast<size_t>((t * H + h) * D + e);
        const double dv = out[at], rv = ref[at], err = std::abs(dv - rv);
        num += err * err;
        den += rv * rv;
        if (!std::isfinite(dv) || err > 4e-3 + 2e-2 * std::abs(rv)) {
          if (reported++ < 12)
            bad << "\n    token " << t << " head " << h << " channel " << e << ": mma " << dv
                << ", reference " << rv;
          r.max_abs_err = std::isfinite(dv) ? std::max(r.max_abs_err, err) : INFINITY;
        } else {
          r.max_abs_err = std::max(r.max_abs_err, err);
        }
      }
      const double rel = std::sqrt(num / std::max(den, 1e-30));
      r.max_rel_l2 = std::max(r.max_rel_l2, std::isfinite(rel) ? rel : INFINITY);
      if (!(rel <= 1e-2) && reported++ < 12)
        bad << "\n    token " << t << " head " << h << ": relative L2 error " << rel;
    }
  if (reported > 0) {
    r.note = std::to_string(reported) + " mismatches:" + bad.str();
    return r;
  }
  // ---- the shaped run (CUDA graphs) writes these bits too
  if (std::string why = check_shaped_run(inst, c, out, scored); !why.empty()) {
    r.note = "shaped run: " + why;
    return r;
  }
  r.pass = true;
  return r;
}

// ---- refusals: each must be a clean status, never a crash
int check_refusals(const LoadedPlugin& plugin, const AttentionInstance& inst) {
  int failures = 0;
  auto expect = [&](const char* what, ts_status s, int32_t code, const char* must_contain) {
    const bool good = s.code == code && message(s).find(must_contain) != std::string::npos;
    std::printf("  refusal %-44s %s  (%s)\n", what, good ? "ok  " : "FAIL", message(s).c_str());
    failures += !good;
  };
  CaseSpec spec{"refusal", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{64, 2}}};
  HostCase c = make_case(spec, 1);
  DeviceCase d = upload(c);
  c.layer.attn_sink = d.sink.get();
  const ts_attention_batch batch = c.batch();
  size_t bytes = 0;
  if (inst.table().plan(inst.get(), &c.layer, &batch, &bytes).code != TS_OK) return failures + 1;
  d.workspace = DeviceArray<uint8_t>(bytes);
  ts_attention_outputs out{sizeof(ts_attention_outputs), d.out.get(), nullptr, 0};
  auto run = [&](const ts_attention_inputs& in, size_t ws_bytes, const ts_attention_layer& layer) {
    return inst.table().run(inst.get(), &layer, &batch, &in, &out, d.workspace.get(), ws_bytes,
                            AttentionInstance::device());
  };
  ts_attention_inputs in = inputs_of(c, d);

  ts_kv_layout odd_fp8 = fp8_layout(TS_KV_MAIN, 128, 40, 16);  // 88 e4m3 channels
  in.kv.main_layout = &odd_fp8;
  expect("fp8 entries of 88 e4m3 channels", run(in, bytes, c.layer), TS_ERR_UNSUPPORTED,
         "multiple of 16");
  ts_kv_layout fp32 = c.main_layout;  // kvcache_bf16 with storage = "fp32"
  std::strncpy(fp32.payload_dtype, "fp32", sizeof fp32.payload_dtype);
  std::strncpy(fp32.rope_dtype, "fp32", sizeof fp32.rope_dtype);
  in.kv.main_layout = &fp32;
  expect("bf16 plugin with fp32 storage", run(in, bytes, c.layer), TS_ERR_UNSUPPORTED, "bf16");
  in.kv.main_layout = &c.main_layout;
  ts_kv_layout index_fp32 = c.index_layout;
  std::strncpy(index_fp32.payload_dtype, "fp32", sizeof index_fp32.payload_dtype);
  in.kv.indexer_layout = &index_fp32;
  expect("fp32 indexer cache", run(in, bytes, c.layer), TS_ERR_UNSUPPORTED, "indexer");
  in.kv.indexer_layout = &c.index_layout;
  expect("workspace smaller than plan()", run(in, bytes - 1, c.layer), TS_ERR_INVALID_ARGUMENT,
         "workspace");
  std::vector<float> host_q(c.q);
  in.q = host_q.data();
  expect("q in host memory", run(in, bytes, c.layer), TS_ERR_INVALID_ARGUMENT, "host memory");
  in.q = d.q.get();
  ts_attention_layer odd = c.layer;
  odd.head_dim = 96;
  size_t ignored = 0;
  expect("head_dim 96 (plan)", inst.table().plan(inst.get(), &odd, &batch, &ignored),
         TS_ERR_UNSUPPORTED, "head_dim");
  odd = c.layer;
  odd.index_topk = 5000;
  expect("index_topk 5000 (plan)", inst.table().plan(inst.get(), &odd, &batch, &ignored),
         TS_ERR_UNSUPPORTED, "index_topk");
  expect("CPU device (check_support)",
         plugin.descriptor().check_support("{}", ts_device{TS_DEVICE_CPU, 0, nullptr}),
         TS_ERR_UNSUPPORTED, "CUDA");
  expect("CPU device (run)",
         inst.table().run(inst.get(), &c.layer, &batch, &in, &out, d.workspace.get(), bytes,
                          ts_device{TS_DEVICE_CPU, 0, nullptr}),
         TS_ERR_UNSUPPORTED, "CUDA");
  expect("missing device 7 (check_support)",
         plugin.descriptor().check_support("{}", ts_device{TS_DEVICE_CUDA, 7, nullptr}),
         TS_ERR_UNSUPPORTED, "does not exist");
  return failures;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) {
      o.seed = std::stoull(argv[++i]);
      o.seed_given = true;
    } else if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (a == "--heavy") {
      o.heavy = true;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--markdown" && i + 1 < argc) {
      o.markdown = argv[++i];
    } else if (o.plugin.empty() && a[0] != '-') {
      o.plugin = a;
    } else {
      throw std::runtime_error(
          "usage: attention_mma_test PLUGIN.so [--seed N] [--only NAME] [--heavy|--quick] "
          "[--markdown FILE]");
    }
  }
  if (o.plugin.empty()) throw std::runtime_error("attention_mma_test: give the plugin .so path");
  if (!o.seed_given)
    o.seed = std::random_device{}() | static_cast<uint64_t>(std::random_device{}()) << 32;
  return o;
}

int main_impl(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  LoadedPlugin plugin(opt.plugin);
  const Backend backend = open_backend(plugin.handle());
  std::printf("attention_mma_test: plugin %s %s (%s)\n", plugin.descriptor().name,
              plugin.descriptor().version, plugin.descriptor().build_info_json);
  if (!backend.unavailable.empty()) {
    // No device: the plugin must still refuse cleanly, then the test is skipped. (The plugin
    // the registry loads checks in check_support() only that its CUDA module is installed; the
    // device is probed by create().)
    ts_instance* instance = nullptr;
    const ts_status s =
        plugin.descriptor().create(nullptr, "{}", AttentionInstance::device(), &instance);
    if (s.code != TS_ERR_UNSUPPORTED || message(s).find("no CUDA device") == std::string::npos) {
      std::printf("FAIL: without a device create returned %d '%s'\n", s.code, message(s).c_str());
      if (instance != nullptr) plugin.descriptor().destroy(instance);
      return 1;
    }
    std::printf("create without a device: '%s'\nno CUDA device: skipped (%s)\n", message(s).c_str(),
                backend.unavailable.c_str());
    return kSkip;
  }
  std::printf("device: %s\nseed: %llu (rerun with --seed %llu)\n", backend.description.c_str(),
              static_cast<unsigned long long>(opt.seed), static_cast<unsigned long long>(opt.seed));
  AttentionInstance inst(plugin);

  int failures = check_refusals(plugin, inst);
  std::vector<CaseResult> results;
  const bool run_heavy = opt.heavy || (!emulated() && !opt.quick);
  uint64_t seed = opt.seed;
  const std::vector<CaseSpec> cases = all_cases();
  for (const CaseSpec& spec : cases) {
    ++seed;
    if (!opt.only.empty() && spec.name != opt.only) continue;
    if (spec.heavy && !run_heavy) continue;
    CaseResult r = check_case(inst, spec, seed);
    std::printf("%-4s %-24s %-48s max|err| %.2e  rel L2 %.2e  tie swaps %d  %.1f ms%s%s\n",
                r.pass ? "ok" : "FAIL", spec.name.c_str(), shape_text(spec, r.tokens).c_str(),
                r.max_abs_err, r.max_rel_l2, r.tie_swaps, r.ms, r.note.empty() ? "" : "\n     ",
                r.note.c_str());
    std::fflush(stdout);
    failures += !r.pass;
    results.push_back(r);
  }
  if (!opt.markdown.empty()) {
    std::ofstream md(opt.markdown);
    md << "| case | shape | result | max abs err | max rel L2 (token, head) | tie swaps | run ms "
          "|\n"
          "|---|---|---|---|---|---|---|\n";
    for (const CaseResult& r : results) {
      const auto spec = std::find_if(cases.begin(), cases.end(),
                                     [&](const CaseSpec& s) { return s.name == r.name; });
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %s | %s | %.2e | %.2e | %d | %.2f |\n",
                    r.name.c_str(), shape_text(*spec, r.tokens).c_str(), r.pass ? "pass" : "FAIL",
                    r.max_abs_err, r.max_rel_l2, r.tie_swaps, r.ms);
      md << line;
    }
  }
  std::printf("attention_mma_test: %zu cases, %d failure(s)\n", results.size(), failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
