// attention_reference_{emulated,device}_test REFERENCE.so BF16.so
//
// The "reference" attention plugin on a CUDA device (its CUDA module: the emulated build, or the
// GPU's in the native build) against its own CPU path, both through plan/run, the cache read
// through the "bf16" kv plugin's load on each device. Random problems (attention_case.hpp):
// Flash shapes (64 x 512, rope 64, window 128, top-k 512), the tiny model's (4 x 64, rope 16,
// indexer 4 x 32, top-k 16), indexer widths 32/64/128, ratios 0/4/128, decode and prefill
// batches of several sequences, window edges (position 0, slots from before the window), top-k
// above the visible count, and exact ties in the indexer's scores.
// Checks: the choices equal the CPU path's (same scores bit for bit, same order rule); each
// (token, head)'s output within a relative L2 error of 1e-5 of the CPU path's (the kernels
// compute the CPU's operations in its order, so the emulated build must give the same bits:
// required there; counted and printed on a GPU); entries_scored equal; refusals (host memory, a
// small workspace, a CPU instance given a CUDA device).
// Exit status: 0 pass, 1 failure, 77 no CUDA device (native build only).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "plugin_loader.hpp"
#include "runtime_device.hpp"

namespace {

using namespace tessera::cudatest;

constexpr int kSkip = 77;
constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};

std::string message(const ts_status& s) { return s.message ? s.message : ""; }

class Instance {
 public:
  Instance(const LoadedPlugin& plugin, ts_device device) : plugin_(plugin), host_(test_host_api()) {
    const ts_status s = plugin.descriptor().create(&host_, "{}", device, &instance_);
    if (s.code != TS_OK) throw std::runtime_error("create: " + message(s));
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

struct Plugins {
  const LoadedPlugin& reference;
  const LoadedPlugin& bf16;
  const Instance& cpu;
  const Instance& cuda;
  const Instance& kv;
  const TestStream& stream;
  const ts_attention_table& table() const { return reference.table(); }
  ts_kv_reader reader(const HostCase& c) const {
    return ts_kv_reader{kv.get(), &bf16.functions<ts_kv_cache_table>(), &c.main_layout,
                        &c.index_layout};
  }
};

struct Result {
  std::vector<float> out;
  std::vector<int32_t> selected;
  int64_t scored = 0;
};

Result run_cpu(const Plugins& p, HostCase& c) {
  Result r;
  r.out.assign(c.q.size(), std::nanf(""));
  r.selected.assign(c.layer.compress_ratio == 4 ? size_t(c.n_tokens) * c.layer.index_topk : 0, -7);
  c.layer.attn_sink = c.sink.data();
  const ts_attention_batch batch = c.batch();
  size_t bytes = 0;
  if (const ts_status s = p.table().plan(p.cpu.get(), &c.layer, &batch, &bytes); s.code != TS_OK)
    throw std::runtime_error("CPU plan: " + message(s));
  std::vector<uint8_t> workspace(bytes + 16);
  ts_attention_inputs in{sizeof in,        c.q.data(),         c.index_q.data(),
                         c.index_w.data(), c.main_pool.data(), c.index_pool.data(),
                         p.reader(c)};
  ts_attention_outputs out{sizeof out, r.out.data(),
                           r.selected.empty() ? nullptr : r.selected.data(), 0};
  if (const ts_status s =
          p.table().run(p.cpu.get(), &c.layer, &batch, &in, &out, workspace.data(), bytes, kCpu);
      s.code != TS_OK)
    throw std::runtime_error("CPU run: " + message(s));
  r.scored = out.entries_scored;
  return r;
}

struct DeviceCase {
  DeviceVector<float> q, index_q, index_w, sink, out;
  DeviceVector<uint8_t> main_pool, index_pool, workspace;
  DeviceVector<int32_t> selected;
};

DeviceCase upload(const HostCase& c, const TestStream& stream) {
  const bool csa = c.layer.compress_ratio == 4;
  DeviceCase d;
  d.q = DeviceVector<float>(c.q, stream);
  d.sink = DeviceVector<float>(c.sink, stream);
  d.main_pool = DeviceVector<uint8_t>(c.main_pool, stream);
  d.out = DeviceVector<float>(std::vector<float>(c.q.size(), std::nanf("")), stream);
  if (csa) {
    d.index_q = DeviceVector<float>(c.index_q, stream);
    d.index_w = DeviceVector<float>(c.index_w, stream);
    d.index_pool = DeviceVector<uint8_t>(c.index_pool, stream);
    d.selected = DeviceVector<int32_t>(
        std::vector<int32_t>(size_t(c.n_tokens) * c.layer.index_topk, -7), stream);
  }
  return d;
}

ts_status run_device(const Plugins& p, HostCase& c, DeviceCase& d, Result* r,
                     size_t workspace_shortfall = 0) {
  c.layer.attn_sink = d.sink.get();
  const ts_attention_batch batch = c.batch();
  size_t bytes = 0;
  if (const ts_status s = p.table().plan(p.cuda.get(), &c.layer, &batch, &bytes); s.code != TS_OK)
    return s;
  if (d.workspace.size() < bytes)
    d.workspace = DeviceVector<uint8_t>(std::vector<uint8_t>(bytes, 0xFF), p.stream);
  ts_attention_inputs in{sizeof in,         d.q.get(),          d.index_q.get(), d.index_w.get(),
                         d.main_pool.get(), d.index_pool.get(), p.reader(c)};
  ts_attention_outputs out{sizeof out, d.out.get(), d.selected.get(), 0};
  const ts_status s = p.table().run(p.cuda.get(), &c.layer, &batch, &in, &out, d.workspace.get(),
                                    bytes - workspace_shortfall, p.stream.device());
  p.stream.synchronize();
  if (s.code == TS_OK && r != nullptr) {
    r->out = d.out.download(p.stream);
    if (d.selected.size() > 0) r->selected = d.selected.download(p.stream);
    r->scored = out.entries_scored;
  }
  return s;
}

// Every indexer key of a sequence made a copy of one of its first three: many exactly equal
// scores, so the order among equals decides the choice.
void tie_keys(HostCase& c) {
  const ts_kv_layout& l = c.index_layout;
  auto record = [&](int64_t slot) {
    return c.index_pool.data() + slot / l.entries_per_page * l.page_bytes +
           slot % l.entries_per_page * l.payload_stride;
  };
  for (const auto& slots : c.index_slots)
    for (size_t k = 3; k < slots.size(); ++k)
      std::memcpy(record(slots[k]), record(slots[k % 3]), l.bytes_per_entry);
}

int check_case(const Plugins& p, const CaseSpec& spec, uint64_t seed, bool ties) {
  HostCase c = make_case(spec, seed);
  if (ties) tie_keys(c);
  const Result cpu = run_cpu(p, c);
  DeviceCase d = upload(c, p.stream);
  Result dev;
  if (const ts_status s = run_device(p, c, d, &dev); s.code != TS_OK) {
    std::printf("FAIL %-26s device run: %s\n", spec.name.c_str(), message(s).c_str());
    return 1;
  }
  std::string problem;
  if (dev.selected != cpu.selected) problem = "the choices differ from the CPU path's";
  if (dev.scored != cpu.scored)
    problem =
        "entries_scored " + std::to_string(dev.scored) + ", CPU " + std::to_string(cpu.scored);
  const int64_t H = c.layer.n_heads, D = c.layer.head_dim;
  double worst = 0;
  int64_t differing = 0;
  for (int64_t th = 0; th < c.n_tokens * H; ++th) {
    double num = 0, den = 0;
    for (int64_t e = 0; e < D; ++e) {
      const float a = dev.out[size_t(th * D + e)], b = cpu.out[size_t(th * D + e)];
      differing += std::memcmp(&a, &b, 4) != 0;
      num += (double(a) - b) * (double(a) - b);
      den += double(b) * b;
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    worst = std::isfinite(rel) ? std::max(worst, rel) : INFINITY;
  }
  if (!(worst <= 1e-5)) problem = "relative L2 error " + std::to_string(worst) + " above 1e-5";
#ifdef TESSERA_DEVICE_EMULATION
  if (problem.empty() && differing > 0)
    problem = std::to_string(differing) + " values differ from the CPU path's bits";
#endif
  std::printf(
      "%-4s %-26s %3d tok, %3dx%-3d ratio %3d  rel L2 %.1e  values not bit-equal %lld%s%s\n",
      problem.empty() ? "ok" : "FAIL", spec.name.c_str(), c.n_tokens, spec.n_heads, spec.head_dim,
      spec.ratio, worst, static_cast<long long>(differing), problem.empty() ? "" : "\n     ",
      problem.c_str());
  return problem.empty() ? 0 : 1;
}

int check_refusals(const Plugins& p) {
  int failures = 0;
  auto expect = [&](const char* what, ts_status s, int32_t code, const char* needle) {
    const bool good = s.code == code && message(s).find(needle) != std::string::npos;
    std::printf("  refusal %-34s %s  (%s)\n", what, good ? "ok  " : "FAIL", message(s).c_str());
    failures += !good;
  };
  CaseSpec spec{"refusal", 4, 64, 16, 16, 4, 4, 32, 8, 16, {{64, 2}}};
  HostCase c = make_case(spec, 3);
  DeviceCase d = upload(c, p.stream);
  expect("workspace smaller than plan()", run_device(p, c, d, nullptr, 1), TS_ERR_INVALID_ARGUMENT,
         "workspace");
  const DeviceVector<float> device_q = std::move(d.q);
  std::vector<float> host_q = c.q;
  c.layer.attn_sink = d.sink.get();
  const ts_attention_batch batch = c.batch();
  ts_attention_inputs in{sizeof in,         host_q.data(),      d.index_q.get(), d.index_w.get(),
                         d.main_pool.get(), d.index_pool.get(), p.reader(c)};
  ts_attention_outputs out{sizeof out, d.out.get(), nullptr, 0};
  expect("q in host memory",
         p.table().run(p.cuda.get(), &c.layer, &batch, &in, &out, d.workspace.get(),
                       d.workspace.size(), p.stream.device()),
         TS_ERR_INVALID_ARGUMENT, "host memory");
  in.q = device_q.get();
  expect("CPU instance, CUDA device",
         p.table().run(p.cpu.get(), &c.layer, &batch, &in, &out, d.workspace.get(),
                       d.workspace.size(), p.stream.device()),
         TS_ERR_INVALID_ARGUMENT, "created for the CPU");
  return failures;
}

int main_impl(int argc, char** argv) {
  if (argc != 3)
    throw std::runtime_error("usage: attention_reference_device_test REFERENCE.so BF16.so");
  LoadedPlugin reference(argv[1], TS_KIND_ATTENTION);
  LoadedPlugin bf16(argv[2], TS_KIND_KV_CACHE);
  if (const std::string why = device_unavailable(); !why.empty()) {
    std::printf("no CUDA device: skipped (%s)\n", why.c_str());
    return kSkip;
  }
  TestStream stream;
  Instance cpu(reference, kCpu), cuda(reference, stream.device()), kv(bf16, stream.device());
  const Plugins p{reference, bf16, cpu, cuda, kv, stream};
  // name, heads, dim, rope, window, ratio, index heads, index dim, topk, page, sequences
  const std::vector<std::pair<CaseSpec, bool>> cases = {
      {{"window-small", 4, 64, 16, 8, 0, 0, 64, 1, 5, {{20, 1}, {0, 12}, {5, 7, 3}}}, false},
      {{"tiny-csa", 4, 64, 16, 128, 4, 4, 32, 16, 64, {{300, 1}, {0, 40}, {130, 9}, {3, 2}}},
       false},
      {{"tiny-hca", 4, 64, 16, 128, 128, 4, 32, 16, 64, {{1000, 1}, {250, 3}, {0, 5}}}, false},
      {{"csa-index64", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{200, 1}, {0, 40}, {60, 9, 2}}}, false},
      {{"csa-index64-ties", 16, 128, 32, 16, 4, 8, 64, 12, 16, {{200, 1}, {0, 30}}}, true},
      {{"csa-topk-above-visible", 8, 256, 64, 32, 4, 16, 128, 64, 64, {{100, 1}, {300, 4}}}, false},
      {{"flash-decode-csa", 64, 512, 64, 128, 4, 64, 128, 512, 64, {{2100, 1}, {700, 1}}}, false},
      {{"flash-decode-hca", 64, 512, 64, 128, 128, 64, 128, 512, 64, {{5000, 1}, {130, 1}}}, false},
      {{"flash-prefill-window", 64, 512, 64, 128, 0, 64, 128, 512, 64, {{0, 6}, {300, 3}}}, false},
  };
  int failures = check_refusals(p);
  uint64_t seed = 40;
  for (const auto& [spec, ties] : cases) failures += check_case(p, spec, ++seed, ties);
  std::printf("attention_reference_device_test: %zu cases, %d failure(s)\n", cases.size(),
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
