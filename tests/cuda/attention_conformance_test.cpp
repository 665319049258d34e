// attention_conformance_{emulated,device}_test ATTENTION.so KV.so [--device cpu] [--heavy]
//                                              [--only NAME] [--seed N]
//
// One conformance suite for every (attention plugin x kv plugin x device) the build has; ctest
// runs it for reference and mma x bf16 and fp8 on the emulated device, on a GPU (native build;
// exit 77 without one) and, with --device cpu, on the CPU (the plugins that run there).
// Both plugins are loaded as the registry loads them (the .so it would dlopen; a plugin with a
// CUDA module finds the build this test names through the host table).
//
// For each case: random fp32 rows are stored into pages by the kv plugin itself (its CPU path
// into host pages, and on a device its device path into device pages, which must be the same
// bytes), then the attention plugin under test runs plan + run on the device. The oracle is the
// reference kernels (plugins/attention_reference/reference_kernels.hpp, compiled into this test)
// over the rows the kv plugin's CPU load decodes from its pages:
//   - CSA choices: the reference plugin's must equal reference::indexer_select's; other plugins
//     (bf16 tensor-core scores) may swap entries whose exact scores are within 1e-4 of the top
//     score; -1 padding past the visible count; entries_scored equals the visible entries (the
//     work follows the real context);
//   - outputs: the oracle over the plugin's own choices; reference: relative L2 error per (token,
//     head) <= 1e-5 (bit-equal on the CPU and the emulated device, whose kernels compute the CPU's
//     operations in its order); others: |err| <= 4e-3 + 2e-2 |ref| per value and relative L2
//     <= 1e-2 (bf16 operands, fp32 sums);
//   - on a GPU a second run must give the same bits (races).
// Cases: decode and prefill batches of several sequences, queries crossing compressor boundaries
// (ratio 4 and 128), sliding-window edges (position 0, window - 1, window, slots from before the
// window), exact top-k ties, top-k above the visible count (padding), the shipped tiny model's
// shapes and DeepSeek-V4-Flash's (64 heads x 512, rope 64, window 128, indexer 64 x 128, top-k
// 512, and 8 heads per rank as at tensor_parallel = 8); --heavy adds long Flash prefills (the
// default on a GPU). Device runs give a page-locked host workspace as plan_host() asks (ABI 1.4,
// as the core does) and also check the ABI's refusals: a workspace smaller than plan(), a host
// workspace smaller than plan_host() (and the same bits without one, as a 1.3 host gives), q in
// host memory and, for a plugin that also runs on the CPU, an instance created for the CPU given
// the device. Exit status: 0 pass, 1 failure, 77 no CUDA device (native build only).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "conformance_oracle.hpp"
#include "plugin_loader.hpp"
#include "runtime_device.hpp"

namespace {

using namespace tessera::cudatest;

constexpr int kSkip = 77;
constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};

std::string message(const ts_status& s) { return s.message ? s.message : ""; }

constexpr bool emulated_device() {
#ifdef TESSERA_DEVICE_EMULATION
  return true;
#else
  return false;
#endif
}

// The CPU and the emulated device compute the reference plugin's operations in the oracle's order.
bool bit_exact_device(const void* stream) { return stream == nullptr || emulated_device(); }

class Instance {
 public:
  Instance(const LoadedPlugin& plugin, ts_device device) : plugin_(plugin), host_(test_host_api()) {
    const ts_status s = plugin.descriptor().create(&host_, "{}", device, &instance_);
    if (s.code != TS_OK)
      throw std::runtime_error(std::string(plugin.descriptor().name) + " create: " + message(s));
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() { plugin_.descriptor().destroy(instance_); }
  ts_instance* get() const { return instance_; }

 private:
  const LoadedPlugin& plugin_;
  ts_host_api host_;
  ts_instance* instance_ = nullptr;
};

struct Case {
  CaseSpec spec;
  bool ties = false;  // every indexer key of a sequence a copy of one of its first three
};

std::vector<Case> all_cases() {
  // name, heads, dim, rope, window, ratio, index heads, index dim, topk, page, sequences
  // {first position, queries, window slots before the lowest needed}
  std::vector<Case> v = {
      // models/tiny-dsv4's shapes: 4 heads x 64, rope 16, window 128, indexer 4 x 32, top-k 16
      {{"tiny-window-edges", 4, 64, 16, 128, 0, 4, 32, 16, 64, {{0, 1}, {127, 2}, {126, 1, 5}}}},
      {{"tiny-csa-decode", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{300, 1}, {129, 1}, {17, 1}}}},
      {{"tiny-csa-prefill", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{0, 70}, {9, 5}, {250, 12}}}},
      {{"tiny-csa-padding", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{3, 1}, {10, 3}, {60, 2}}}},
      {{"tiny-csa-ties", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{200, 1}, {0, 30}}}, true},
      {{"tiny-hca-boundaries",
        4,
        64,
        16,
        128,
        128,
        4,
        32,
        16,
        64,
        {{125, 6}, {254, 4}, {1000, 1}}}},
      // other widths: indexer 64 and 128, small pages, heads not a multiple of 16
      {{"csa-index64-ties", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{200, 1}, {0, 30}}}, true},
      {{"csa-index128", 20, 256, 64, 32, 4, 16, 128, 64, 7, {{100, 1}, {300, 4}, {6, 3}}}},
      {{"hca-window16", 20, 128, 32, 16, 128, 0, 64, 1, 5, {{255, 3}, {0, 17}, {140, 1, 2}}}},
      // DeepSeek-V4-Flash: 64 heads x 512, rope 64, window 128, indexer 64 x 128, top-k 512
      {{"flash-decode-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {700, 1}, {90, 1}}}},
      {{"flash-decode-hca", 64, 512, 64, 128, 128, 64, 128, 512, 64, {{5000, 1}, {130, 1}}}},
      {{"flash-decode-window", 64, 512, 64, 128, 0, 64, 128, 512, 64, {{3000, 1}, {10, 1}}}},
      {{"flash-prefill-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2046, 6}, {0, 5}}}},
      {{"flash-csa-ties", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2600, 1}}}, true},
      // Flash at tensor_parallel = 8: 8 query heads per rank, the indexer whole
      {{"flash-tp8-decode-csa", 8, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {700, 1}}}},
      {{"flash-tp8-prefill-hca", 8, 512, 64, 128, 128, 64, 128, 512, 64, {{250, 9}, {0, 4}}}},
  };
  CaseSpec heavy{"flash-prefill-csa-long",          64, 512, 64, 128, 4, 64, 128, 512, 64,
                 {{0, 256}, {1024, 128}, {4000, 1}}};
  heavy.heavy = true;
  v.push_back({heavy});
  heavy = {"flash-prefill-hca-long", 64, 512, 64, 128, 128, 64, 128, 512, 64, {{0, 300}, {77, 50}}};
  heavy.heavy = true;
  v.push_back({heavy});
  return v;
}

struct Options {
  std::string attention, kv, only;
  bool on_cpu = false, heavy = false;
  uint64_t seed = 0;
};

struct Setup {
  const LoadedPlugin& attention;
  const LoadedPlugin& kv;
  const Instance& attn;      // on the device under test
  const Instance& kv_host;   // the kv plugin on the CPU: host pages and the oracle's rows
  const Instance& kv_dev;    // the kv plugin on the device under test (kv_host on the CPU)
  const TestStream* stream;  // null on the CPU
  bool exact;                // the reference plugin: the oracle's own choices and bits
  const ts_kv_cache_table& kv_table() const { return kv.functions<ts_kv_cache_table>(); }
  const ts_attention_table& table() const { return attention.table(); }
  ts_device device() const { return stream ? stream->device() : kCpu; }
};

// Host or device memory of n values of T, by where the run happens.
template <class T>
struct Buffer {
  std::vector<T> host;
  DeviceVector<T> dev;
  Buffer(std::vector<T> values, const TestStream* stream) : host(std::move(values)) {
    if (stream) dev = DeviceVector<T>(host, *stream);
  }
  T* get() { return dev.get() ? dev.get() : host.data(); }
  std::vector<T> read(const TestStream* stream) const {
    return stream ? dev.download(*stream) : host;
  }
};

ts_kv_layout describe(const Setup& p, const Instance& kv, int32_t stream, int32_t dim, int32_t rope,
                      int32_t per_page) {
  ts_kv_layout l{};
  l.struct_size = sizeof l;
  if (const ts_status s = p.kv_table().describe(kv.get(), stream, dim, rope, per_page, &l);
      s.code != TS_OK)
    throw std::runtime_error("kv describe: " + message(s));
  return l;
}

// Pages of one stream written by the kv plugin: host ones by its CPU path, device ones (on a
// device) by its device path; both must hold the same bytes.
struct Pages {
  std::vector<uint8_t> host;
  DeviceVector<uint8_t> dev;
  uint8_t* get() { return dev.get() ? dev.get() : host.data(); }
};

Pages store(const Setup& p, const ts_kv_layout& l, const std::vector<float>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size()) / l.dim;
  const int64_t pages = (n + l.entries_per_page - 1) / l.entries_per_page;
  std::vector<int64_t> slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i;
  Pages out;
  out.host.assign(static_cast<size_t>(pages * l.page_bytes), 0);
  if (const ts_status s = p.kv_table().store(p.kv_host.get(), &l, rows.data(), n, slots.data(),
                                             out.host.data(), kCpu);
      s.code != TS_OK)
    throw std::runtime_error("kv store (CPU): " + message(s));
  if (p.stream == nullptr) return out;
  DeviceVector<float> dev_rows(rows, *p.stream);
  out.dev = DeviceVector<uint8_t>(std::vector<uint8_t>(out.host.size(), 0), *p.stream);
  if (const ts_status s = p.kv_table().store(p.kv_dev.get(), &l, dev_rows.get(), n, slots.data(),
                                             out.dev.get(), p.device());
      s.code != TS_OK)
    throw std::runtime_error("kv store (device): " + message(s));
  p.stream->synchronize();
  if (out.dev.download(*p.stream) != out.host)
    throw std::runtime_error("the kv plugin's device path wrote other bytes than its CPU path");
  return out;
}

struct Problem {
  HostCase c;  // layer, sequences, slots, queries (its own random pools are not used)
  ts_kv_layout main_layout{}, index_layout{};
  Oracle oracle;
};

Problem make_problem(const Setup& p, const Case& k, uint64_t seed, Pages* main, Pages* index) {
  Problem pr;
  pr.c = make_case(k.spec, seed);
  const CaseSpec& s = k.spec;
  pr.main_layout = describe(p, p.kv_host, TS_KV_MAIN, s.head_dim, s.rope_dim, s.entries_per_page);
  // Indexer keys: the runtime describes them with rope_dim = dim (docs/kvcache.md).
  pr.index_layout =
      describe(p, p.kv_host, TS_KV_INDEXER, s.index_dim, s.index_dim, s.entries_per_page);
  std::mt19937_64 rng(seed * 7919 + 1);
  std::vector<float> main_rows =
      random_rows(slot_count(pr.c.main_pool, s.head_dim), s.head_dim, rng);
  *main = store(p, pr.main_layout, main_rows);
  if (s.ratio == 4) {
    std::vector<float> index_rows =
        random_rows(slot_count(pr.c.index_pool, s.index_dim), s.index_dim, rng);
    if (k.ties) copy_first_three_keys(pr.c, s.index_dim, index_rows);
    *index = store(p, pr.index_layout, index_rows);
  }
  pr.oracle =
      Oracle(decode_all(p.kv_table(), p.kv_host.get(), pr.main_layout, main->host),
             s.ratio == 4 ? decode_all(p.kv_table(), p.kv_host.get(), pr.index_layout, index->host)
                          : std::vector<float>{});
  return pr;
}

struct Outcome {
  std::vector<float> out;
  std::vector<int32_t> selected;
  int64_t scored = 0;
};

// The page-locked host workspace of ABI 1.4 (ts_attention_inputs.host_workspace): given as large
// as plan_host() asks (as the core's step arena does), given `host_shortfall` bytes short, or not
// given (a 1.3 host: the plugin stages its metadata itself).
enum class HostWorkspace { kGiven, kShort, kNone };

bool has_plan_host(const ts_attention_table& t) {
  return t.struct_size >= offsetof(ts_attention_table, plan_host) + sizeof(t.plan_host) &&
         t.plan_host != nullptr;
}

ts_status run(const Setup& p, Problem& pr, Pages& main, Pages& index, Outcome* r,
              size_t shortfall = 0, bool host_q = false,
              HostWorkspace host_workspace = HostWorkspace::kGiven) {
  HostCase& c = pr.c;
  const bool csa = c.layer.compress_ratio == 4;
  Buffer<float> q(c.q, p.stream), iq(csa ? c.index_q : std::vector<float>{}, p.stream),
      iw(csa ? c.index_w : std::vector<float>{}, p.stream), sink(c.sink, p.stream),
      out(std::vector<float>(c.q.size(), std::nanf("")), p.stream);
  Buffer<int32_t> selected(
      std::vector<int32_t>(csa ? size_t(c.n_tokens) * c.layer.index_topk : 0, -7), p.stream);
  c.layer.attn_sink = sink.get();
  const ts_attention_batch batch = c.batch();
  size_t bytes = 0;
  if (ts_status s = p.table().plan(p.attn.get(), &c.layer, &batch, &bytes); s.code != TS_OK)
    return s;
  Buffer<uint8_t> workspace(std::vector<uint8_t>(bytes + 1, 0xFF), p.stream);
  ts_attention_inputs in{
      sizeof in,
      host_q ? c.q.data() : q.get(),
      csa ? iq.get() : nullptr,
      csa ? iw.get() : nullptr,
      main.get(),
      csa ? index.get() : nullptr,
      ts_kv_reader{p.kv_dev.get(), &p.kv_table(), &pr.main_layout, &pr.index_layout},
      nullptr,
      0};
  std::unique_ptr<PageLockedBytes> host_bytes;
  if (p.stream != nullptr && has_plan_host(p.table()) && host_workspace != HostWorkspace::kNone) {
    size_t wanted = 0;
    if (ts_status s = p.table().plan_host(p.attn.get(), &c.layer, &batch, p.device(), &wanted);
        s.code != TS_OK)
      return s;
    if (wanted > 0) {
      host_bytes = std::make_unique<PageLockedBytes>(wanted);
      in.host_workspace = host_bytes->get();
      in.host_workspace_bytes = wanted - (host_workspace == HostWorkspace::kShort ? 1 : 0);
    }
  }
  ts_attention_outputs o{sizeof o, out.get(), csa ? selected.get() : nullptr, 0};
  const ts_status s = p.table().run(p.attn.get(), &c.layer, &batch, &in, &o, workspace.get(),
                                    bytes - shortfall, p.device());
  if (p.stream) p.stream->synchronize();
  if (s.code == TS_OK && r != nullptr) {
    r->out = out.read(p.stream);
    if (csa) r->selected = selected.read(p.stream);
    r->scored = o.entries_scored;
  }
  return s;
}

std::string check_case(const Setup& p, const Case& k, uint64_t seed) {
  Pages main, index;
  Problem pr = make_problem(p, k, seed, &main, &index);
  Outcome got;
  if (const ts_status s = run(p, pr, main, index, &got); s.code != TS_OK)
    return "run failed: " + message(s);
  if (p.stream && !emulated_device()) {  // a race shows up as other bits on the same inputs
    Outcome again;
    if (run(p, pr, main, index, &again).code != TS_OK || again.out.size() != got.out.size() ||
        std::memcmp(again.out.data(), got.out.data(), got.out.size() * 4) != 0 ||
        again.selected != got.selected)
      return "a second run on the same inputs gave a different result (race?)";
  }
  const Verdict v = pr.oracle.judge(
      pr.c, got.out, got.selected, got.scored,
      p.exact ? Tolerance::exact(bit_exact_device(p.stream)) : Tolerance::tensor_core());
  std::printf("     %-24s %4d tok, %3dx%-3d ratio %3d  rel L2 %.1e  tie swaps %d\n",
              k.spec.name.c_str(), pr.c.n_tokens, k.spec.n_heads, k.spec.head_dim, k.spec.ratio,
              v.worst_rel_l2, v.tie_swaps);
  return v.problem;
}

int check_refusals(const Setup& p) {
  int failures = 0;
  auto expect = [&](const char* what, ts_status s, int32_t code, const char* needle) {
    const bool good = s.code == code && message(s).find(needle) != std::string::npos;
    std::printf("%-4s refusal: %-30s (%s)\n", good ? "ok" : "FAIL", what, message(s).c_str());
    failures += !good;
  };
  const Case k{{"refusal", 4, 64, 16, 16, 4, 4, 32, 8, 16, {{64, 2}}}};
  Pages main, index;
  Problem pr = make_problem(p, k, 3, &main, &index);
  expect("workspace smaller than plan()", run(p, pr, main, index, nullptr, 1),
         TS_ERR_INVALID_ARGUMENT, "workspace");
  expect("q in host memory", run(p, pr, main, index, nullptr, 0, true), TS_ERR_INVALID_ARGUMENT,
         "host memory");
  if (p.stream != nullptr && has_plan_host(p.table())) {
    expect("host workspace short",
           run(p, pr, main, index, nullptr, 0, false, HostWorkspace::kShort),
           TS_ERR_INVALID_ARGUMENT, "host workspace");
    // A 1.3 host gives no host workspace: the plugin stages the same metadata itself.
    Outcome given, none;
    const bool both = run(p, pr, main, index, &given).code == TS_OK &&
                      run(p, pr, main, index, &none, 0, false, HostWorkspace::kNone).code == TS_OK;
    const bool same = both && given.out.size() == none.out.size() &&
                      std::memcmp(given.out.data(), none.out.data(), given.out.size() * 4) == 0 &&
                      given.selected == none.selected;
    std::printf("%-4s without a host workspace: the same bits as with one\n", same ? "ok" : "FAIL");
    failures += !same;
  }
  if (p.attention.descriptor().check_support("{}", kCpu).code == TS_OK) {
    const Instance on_cpu(p.attention, kCpu);  // a plugin that runs on both, given the device
    const Setup q{p.attention, p.kv, on_cpu, p.kv_host, p.kv_dev, p.stream, p.exact};
    const ts_status s = run(q, pr, main, index, nullptr);
    const bool good = s.code != TS_OK && message(s).find("CPU") != std::string::npos;
    std::printf("%-4s refusal: %-30s (%s)\n", good ? "ok" : "FAIL", "CPU instance, CUDA device",
                message(s).c_str());
    failures += !good;
  }
  return failures;
}

Options parse(int argc, char** argv) {
  Options o;
  o.seed = std::random_device{}() | static_cast<uint64_t>(std::random_device{}()) << 32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc && std::string(argv[i + 1]) == "cpu") {
      o.on_cpu = true;
      ++i;
    } else if (a == "--heavy") {
      o.heavy = true;
    } else if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (a == "--seed" && i + 1 < argc) {
      o.seed = std::stoull(argv[++i]);
    } else if (a[0] != '-' && o.attention.empty()) {
      o.attention = a;
    } else if (a[0] != '-' && o.kv.empty()) {
      o.kv = a;
    } else {
      throw std::runtime_error(
          "usage: attention_conformance_test ATTENTION.so KV.so [--device cpu] [--heavy] "
          "[--only NAME] [--seed N]");
    }
  }
  if (o.kv.empty()) throw std::runtime_error("give the attention and kv plugin .so paths");
  return o;
}

int main_impl(int argc, char** argv) {
  const Options o = parse(argc, argv);
  LoadedPlugin attention(o.attention, TS_KIND_ATTENTION);
  LoadedPlugin kv(o.kv, TS_KIND_KV_CACHE);
  const std::string pair = std::string(attention.descriptor().name) + " x " + kv.descriptor().name +
                           " on " +
                           (o.on_cpu            ? "the CPU"
                            : emulated_device() ? "the emulated device"
                                                : "a CUDA device");
  if (!o.on_cpu)
    if (const std::string why = device_unavailable(); !why.empty()) {
      std::printf("%s: no CUDA device: skipped (%s)\n", pair.c_str(), why.c_str());
      return kSkip;
    }
  std::printf("attention_conformance_test: %s, seed %llu (rerun with --seed)\n", pair.c_str(),
              static_cast<unsigned long long>(o.seed));
  std::unique_ptr<TestStream> stream = o.on_cpu ? nullptr : std::make_unique<TestStream>();
  const ts_device device = stream ? stream->device() : kCpu;
  Instance attn(attention, device), kv_host(kv, kCpu), kv_dev(kv, device);
  const Setup p{attention,
                kv,
                attn,
                kv_host,
                kv_dev,
                stream.get(),
                std::string(attention.descriptor().name) == "reference"};
  int failures = stream ? check_refusals(p) : 0;
  const bool heavy = o.heavy || (stream && !emulated_device());
  int ran = 0;
  uint64_t seed = o.seed;
  for (const Case& k : all_cases()) {
    ++seed;
    if ((k.spec.heavy && !heavy) || (!o.only.empty() && o.only != k.spec.name)) continue;
    ++ran;
    const std::string problem = check_case(p, k, seed);
    std::printf("%-4s %s%s%s\n", problem.empty() ? "ok" : "FAIL", k.spec.name.c_str(),
                problem.empty() ? "" : ": ", problem.c_str());
    std::fflush(stdout);
    failures += !problem.empty();
  }
  std::printf("attention_conformance_test: %s: %d cases, %d failure(s)\n", pair.c_str(), ran,
              failures);
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
