#include "bench/gemm_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>

#include "ops/compute_threads.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"

namespace tessera::bench {
namespace {

// The GEMMs of one 64-sequence decode step of the 50m preset (bench_model_config), and two of the
// shipped tiny-dsv4's.
const std::vector<GemmShape> kShapes = {
    {1, 16384, 512},   // vocabulary head, one decode row (memory-bound)
    {16, 256, 512},    // an expert's w1 / w3 for its ~16 of 64 rows
    {16, 512, 256},    // an expert's w2
    {64, 256, 512},    // wq_a, shared expert w1 / w3
    {64, 1024, 256},   // wq_b
    {64, 16384, 512},  // vocabulary head, 64 rows
    {32, 24, 2048},    // the mHC mix, one thread's 32 tokens (split by rows)
    {64, 128, 256},    // tiny-dsv4 (models/): a 64-row projection, the shared expert's w1 / w3
    {16, 128, 256},    // tiny-dsv4: a routed expert's w1 / w3 for its ~16 of 64 rows
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds per call of call(w_index), which multiplies by copy w_index of W; `cold` moves to the
// next copy on every call.
template <typename Call>
double time_calls(size_t copies, bool cold, double budget, const Call& call) {
  long calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    call(cold ? static_cast<size_t>(calls) % copies : 0);
    ++calls;
    elapsed = seconds_since(t0);
  } while (elapsed < budget || calls < 3);
  return elapsed / static_cast<double>(calls);
}

// One row of the table per variant: a backend, W in fp32 or (our kernel only) in bf16, x in fp32
// or (W in bf16, AVX512_BF16 only) rounded to bf16 (model.dtype = "bf16").
struct Variant {
  ops::GemmBackend backend;
  bool bf16_w;
  bool bf16_x = false;
  bool panels = false;  // W (fp32 or bf16) packed into panels (ops::pack_weight_panels)
};

}  // namespace

std::string run_gemm_bench(const GemmBenchOptions& options) {
  std::vector<Variant> variants = {{ops::GemmBackend::kBlas, false}};
  if (ops::gemm_nt_avx512_available()) {
    variants.insert(variants.begin(), {{ops::GemmBackend::kAuto, false},
                                       {ops::GemmBackend::kAuto, false, false, true},
                                       {ops::GemmBackend::kAuto, true},
                                       {ops::GemmBackend::kAuto, true, false, true}});
  }
  if (ops::gemm_nt_bf16_available()) {
    variants.insert(variants.begin() + 4, {ops::GemmBackend::kAuto, true, true});
  }
  if (ops::gemm_nt_avx2_available()) {  // the AVX2 kernel: the default where AVX-512 is missing
    const ops::GemmBackend avx2 =
        ops::gemm_nt_avx512_available() ? ops::GemmBackend::kAvx2 : ops::GemmBackend::kAuto;
    variants.insert(
        variants.end() - 1,
        {{avx2, false}, {avx2, false, false, true}, {avx2, true}, {avx2, true, false, true}});
  }
  const int threads_before = ops::compute_threads();
  std::string table =
      "| rows x out x in | backend | threads | hot µs | hot GFLOP/s | cold µs | cold GFLOP/s | "
      "cold W GB/s |\n|---|---|---|---|---|---|---|---|\n";
  for (const GemmShape& s : kShapes) {
    const size_t w_size = static_cast<size_t>(s.out * s.in);
    const size_t copies = std::max<size_t>(2, (size_t{64} << 20) / (w_size * sizeof(float)));
    std::vector<float> x(static_cast<size_t>(s.rows * s.in)), ring(w_size * copies);
    std::vector<float> y(static_cast<size_t>(s.rows * s.out));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(std::sin(0.37 * i));
    }
    std::vector<uint16_t> ring16(ring.size());  // the same ring in bf16 (the top 16 bits)
    for (size_t i = 0; i < ring.size(); ++i) {
      ring[i] = static_cast<float>(0.05 * std::cos(0.11 * i));
      ring16[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(ring[i]) >> 16);
    }
    // The same rings in panels.
    const size_t panel_size =
        static_cast<size_t>(ops::weight_panel_count(s.out) * s.in * ops::kWeightPanelWidth);
    std::vector<float> panels(panel_size * copies);
    std::vector<uint16_t> panels16(panels.size());
    for (size_t c = 0; c < copies; ++c) {
      ops::pack_weight_panels(ring.data() + c * w_size, s.out, s.in,
                              panels.data() + c * panel_size);
      ops::pack_weight_panels(ring16.data() + c * w_size, s.out, s.in,
                              panels16.data() + c * panel_size);
    }
    const double flop = 2.0 * s.rows * s.out * s.in;
    for (const Variant& v : variants) {
      ops::set_gemm_backend(v.backend);
      auto call = [&](size_t copy) {
        ops::GemmNtArgs a{x.data(), s.rows, s.in,     s.in, ring.data() + copy * w_size,
                          s.out,    s.in,   y.data(), s.out};
        if (v.panels) {
          a.w = nullptr;
          a.panel_stride = s.in * ops::kWeightPanelWidth;
          if (v.bf16_w) {
            a.w_panels_bf16 = panels16.data() + copy * panel_size;
          } else {
            a.w_panels = panels.data() + copy * panel_size;
          }
        } else if (v.bf16_w) {
          a.w = nullptr;
          a.w_bf16 = ring16.data() + copy * w_size;
        }
        const ops::Bf16ActivationScope precision(v.bf16_x);
        ops::linear_group(std::span<const ops::GemmNtArgs>(&a, 1));
      };
      const double w_bytes = static_cast<double>(w_size * (v.bf16_w ? 2 : sizeof(float)));
      for (const int threads : options.threads) {
        ops::set_compute_threads(threads);
        const double hot = time_calls(copies, false, options.seconds_per_cell, call);
        const double cold = time_calls(copies, true, options.seconds_per_cell, call);
        table += fmt::format(
            "| {} x {} x {} | {}{} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", s.rows,
            s.out, s.in, ops::gemm_backend_name(),
            v.bf16_x ? (ops::gemm_nt_amx_available() ? ", x + W bf16 on AMX" : ", x + W bf16")
                     : (v.bf16_w ? (v.panels ? ", W bf16 panels" : ", W bf16")
                                 : (v.panels ? ", W panels" : "")),
            threads, hot * 1e6, flop / hot / 1e9, cold * 1e6, flop / cold / 1e9,
            w_bytes / cold / 1e9);
      }
    }
  }
  ops::set_gemm_backend(ops::GemmBackend::kAuto);
  ops::set_compute_threads(threads_before);
  return table;
}

}  // namespace tessera::bench
