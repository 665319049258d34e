// The figures the sizing model (bench/sizing_model.hpp) predicts from: memory bandwidth, dense
// tensor throughput, and the link a tensor-parallel collective crosses. Each figure says where it
// comes from (vendor datasheet, a measurement, or an assumption) so a table built on it can be
// judged; docs/perf.md lists them.
#pragma once

#include <string>

namespace tessera::bench {

struct HardwareFigures {
  std::string name;
  double memory_gb = 0;              // capacity per device, datasheet (0: not stated)
  double nominal_memory_gbps = 0;    // datasheet
  double memory_gbps = 0;            // what a well-written kernel reaches: predictions use this
  double dense_bf16_tflops = 0;      // datasheet, without sparsity
  double dense_fp8_tflops = 0;       // datasheet, without sparsity
  double link_gbps = 0;              // per GPU, per direction, what a ring collective moves
  double collective_latency_us = 0;  // one small all-reduce / all-gather inside a CUDA graph
  std::string sources;
};

// "h200" | "rtx-pro-6000"; throws tessera::Error for another name.
[[nodiscard]] HardwareFigures gpu_figures(const std::string& name);
// A CPU measured on the spot: `memory_gbps` (e.g. bench::measure_copy_bandwidth) and a compute
// rate; no links (one rank).
[[nodiscard]] HardwareFigures cpu_figures(double memory_gbps, double gflops);

}  // namespace tessera::bench
