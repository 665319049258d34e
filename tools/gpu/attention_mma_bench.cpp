// attention_mma_bench [--markdown FILE] [--iterations N] [--only NAME]
//
// Times the mma attention kernels on DeepSeek-V4-Flash shapes (64 heads x 512, window 128,
// indexer 64 x 128, top-k 512) with CUDA events: the whole sequence run() enqueues, and for CSA
// layers the selection (indexer + top-k) and the attention (+ combine) apart. Reports the median
// time, the cache bytes the kernels must read (attention rows x 1024 B + indexer keys x 256 B;
// "logical" for prefill, where tokens share rows through L2), GB/s against the H200's 4.8 TB/s
// and against a device-to-device copy measured here, and TFLOP/s against the 989 TFLOP/s dense
// bf16 datasheet rate (mma.sync reaches only part of it; wgmma is the later path).
// Exit 77 when there is no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "attention_enqueue.hpp"
#include "test_device.hpp"
#include "work_plan.hpp"

namespace {

using namespace tessera::cudatest;
namespace mma = tessera::mma;

constexpr double kHbmPeak = 4.8e12;     // H200 datasheet, bytes/s
constexpr double kBf16Peak = 989.4e12;  // H200 SXM dense bf16 datasheet, FLOP/s

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::vector<SequenceSpec> decode_batch(int n, int64_t position) {
  std::vector<SequenceSpec> s;
  for (int i = 0; i < n; ++i) s.push_back({position - i % 7, 1});  // a little spread
  return s;
}

std::vector<CaseSpec> configs() {
  auto flash = [](std::string name, int ratio, std::vector<SequenceSpec> seqs) {
    return CaseSpec{std::move(name), 64, 512, 64, 128, ratio, 64, 128, 512, 64, std::move(seqs)};
  };
  return {
      flash("decode-window-b128", 0, decode_batch(128, 20000)),
      flash("decode-hca-64k-b64", 128, decode_batch(64, 65535)),
      flash("decode-csa-32k-b64", 4, decode_batch(64, 32767)),
      flash("decode-csa-128k-b16", 4, decode_batch(16, 131071)),
      flash("prefill-csa-8k-2048q", 4, {{6144, 2048}}),
      flash("prefill-hca-64k-512q", 128, {{65024, 512}}),
  };
}

struct Row {
  std::string name, stage;
  int tokens;
  double ms, bytes, flops, plan_us;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `iterations` enqueues of `stages`, after 3 warm-ups.
double time_stages(const mma::WorkPlan& plan, const ts_attention_layer& layer,
                   const ts_attention_inputs& in, const ts_attention_outputs& out, uint8_t* ws,
                   mma::Stages stages, int iterations) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < iterations + 3; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    const std::string why = mma::enqueue_attention(plan, layer, in, out, ws, nullptr, stages);
    if (!why.empty()) throw std::runtime_error(why);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(ms);
}

double copy_bandwidth() {  // bytes read + written per second, device to device, 2 GiB
  const size_t bytes = size_t{2} << 30;
  DeviceArray<uint8_t> a(bytes), b(bytes);
  check(cudaMemset(a.get(), 1, bytes), "cudaMemset");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> ms;
  for (int i = 0; i < 8; ++i) {
    cudaEventRecord(start);
    check(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(bytes) / (median(ms) * 1e-3);
}

mma::DeviceLimits device_limits() {
  mma::DeviceLimits l;
  int v = 0;
  check(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), "attribute");
  l.sm_count = v;
  check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "attribute");
  l.smem_per_block = v;
  check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), "attribute");
  l.smem_per_sm = v;
  return l;
}

std::vector<Row> bench(const CaseSpec& spec, const mma::DeviceLimits& limits, int iterations) {
  HostCase c = make_case(spec, 42);
  DeviceArray<float> q(c.q), sink(c.sink), out(c.q.size());
  DeviceArray<uint8_t> main_pool(c.main_pool);
  const bool csa = spec.ratio == 4;
  DeviceArray<float> index_q, index_w;
  DeviceArray<uint8_t> index_pool;
  if (csa) {
    index_q = DeviceArray<float>(c.index_q);
    index_w = DeviceArray<float>(c.index_w);
    index_pool = DeviceArray<uint8_t>(c.index_pool);
  }
  c.layer.attn_sink = sink.get();
  const ts_attention_batch batch = c.batch();
  if (const std::string why = mma::check_layer(c.layer, limits); !why.empty())
    throw std::runtime_error(why);

  // Host planning, as run() does it per call.
  std::vector<uint8_t> blob;
  const auto t0 = std::chrono::steady_clock::now();
  mma::WorkPlan plan = mma::build_work_plan(c.layer, batch, limits);
  std::string why =
      mma::fill_offsets(plan, c.layer, batch, c.main_layout, csa ? &c.index_layout : nullptr);
  blob.resize(plan.workspace.metadata_bytes);
  mma::pack_metadata(plan, blob.data());
  const double plan_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!why.empty()) throw std::runtime_error(why);
  DeviceArray<uint8_t> ws(plan.workspace.total);
  copy_to_device(ws.get(), blob.data(), blob.size());

  const ts_attention_inputs in =
      case_inputs(c, q.get(), index_q.get(), index_w.get(), main_pool.get(), index_pool.get());
  ts_attention_outputs o{};
  o.struct_size = sizeof o;
  o.out = out.get();

  // Bytes and FLOPs of each stage.
  const double all_bytes = static_cast<double>(c.cache_bytes_read()), all_flops = c.flops();
  double sel_bytes = 0, sel_flops = 0;
  for (const mma::TokenTask& t : plan.tasks) {
    sel_bytes += csa ? 2.0 * c.layer.index_head_dim * t.n_visible : 0;
    sel_flops += csa ? 2.0 * c.layer.index_n_heads * c.layer.index_head_dim * t.n_visible : 0;
  }
  std::vector<Row> rows;
  rows.push_back({spec.name, "all", c.n_tokens,
                  time_stages(plan, c.layer, in, o, ws.get(), mma::Stages::kAll, iterations),
                  all_bytes, all_flops, plan_us});
  if (csa) {
    rows.push_back(
        {spec.name, "indexer+topk", c.n_tokens,
         time_stages(plan, c.layer, in, o, ws.get(), mma::Stages::kSelection, iterations),
         sel_bytes, sel_flops, 0});
    rows.push_back(
        {spec.name, "attention", c.n_tokens,
         time_stages(plan, c.layer, in, o, ws.get(), mma::Stages::kAttention, iterations),
         all_bytes - sel_bytes, all_flops - sel_flops, 0});
  }
  synchronize();
  return rows;
}

int main_impl(int argc, char** argv) {
  std::string markdown, only;
  int iterations = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::stoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else
      throw std::runtime_error(
          "usage: attention_mma_bench [--markdown FILE] [--iterations N] [--only NAME]");
  }
  const Backend backend = open_backend(nullptr);
  if (!backend.unavailable.empty()) {
    std::printf("no CUDA device: skipped (%s)\n", backend.unavailable.c_str());
    return 77;
  }
  const mma::DeviceLimits limits = device_limits();
  const double copy = copy_bandwidth();
  std::string table;
  char line[640];
  std::snprintf(
      line, sizeof line,
      "Device: %s. Measured device-to-device copy: %.2f TB/s (read + write). Median of %d runs "
      "after 3 warm-ups, CUDA events.\n\n"
      "| config | stage | tokens | time ms | cache bytes MB | GB/s | %% of 4.8 TB/s | %% of copy | "
      "TFLOP/s | %% of 989 | host plan us |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
      backend.description.c_str(), copy / 1e12, iterations);
  table += line;
  std::printf("%s", line);
  for (const CaseSpec& spec : configs()) {
    if (!only.empty() && spec.name != only) continue;
    for (const Row& r : bench(spec, limits, iterations)) {
      const double bw = r.bytes / (r.ms * 1e-3), tf = r.flops / (r.ms * 1e-3);
      std::snprintf(line, sizeof line,
                    "| %s | %s | %d | %.3f | %.1f | %.0f | %.1f | %.1f | %.1f | %.1f | %s |\n",
                    r.name.c_str(), r.stage.c_str(), r.tokens, r.ms, r.bytes / 1e6, bw / 1e9,
                    100 * bw / kHbmPeak, 100 * bw / copy, tf / 1e12, 100 * tf / kBf16Peak,
                    r.plan_us > 0 ? std::to_string(static_cast<int>(r.plan_us)).c_str() : "");
      table += line;
      std::printf("%s", line);
      std::fflush(stdout);
    }
  }
  if (!markdown.empty()) std::ofstream(markdown) << table;
  return 0;
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
