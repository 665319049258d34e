#include "bench/hardware_figures.hpp"

#include <fmt/format.h>

#include "util/check.hpp"

namespace tessera::bench {

HardwareFigures gpu_figures(const std::string& name) {
  HardwareFigures h;
  h.name = name;
  if (name == "h200") {
    h.memory_gb = 141;             // NVIDIA H200 datasheet: 141 GB HBM3e
    h.nominal_memory_gbps = 4800;  // NVIDIA H200 datasheet: 4.8 TB/s HBM3e
    h.memory_gbps = 4300;       // device-to-device copy measured by PyTorch (../shared/docs/GPU.md)
    h.dense_bf16_tflops = 989;  // H200 SXM datasheet: 1,979 TFLOP/s bf16 with sparsity / 2
    h.dense_fp8_tflops = 1979;  // H200 SXM datasheet: 3,958 TFLOP/s fp8 with sparsity / 2
    h.link_gbps = 450;          // NVLink 4: 900 GB/s per GPU, both directions together
    h.collective_latency_us = 8;  // assumption: NCCL LL protocol, 8 GPUs, graph-captured
    h.sources =
        "H200 SXM datasheet (141 GB, 4.8 TB/s, 1,979/3,958 TFLOP/s bf16/fp8 sparse, NVLink 900 "
        "GB/s); "
        "4.3 TB/s copy measured (GPU.md); collective latency assumed";
  } else if (name == "rtx-pro-6000") {
    h.memory_gb = 96;                      // RTX PRO 6000 Blackwell datasheet: 96 GB GDDR7
    h.nominal_memory_gbps = 1792;          // RTX PRO 6000 Blackwell datasheet: 1,792 GB/s GDDR7
    h.memory_gbps = 1792 * 4300.0 / 4800;  // assumption: the H200's measured / nominal ratio
    h.dense_bf16_tflops = 500;     // derived: datasheet 4,000 FP4 TOPS (sparse) / 2 (dense) / 4
    h.dense_fp8_tflops = 1000;     // derived: datasheet 4,000 FP4 TOPS (sparse) / 2 (dense) / 2
    h.link_gbps = 64;              // PCIe 5.0 x16: 64 GB/s per direction (no NVLink)
    h.collective_latency_us = 25;  // assumption: PCIe peer-to-peer through the host's switches
    h.sources =
        "RTX PRO 6000 Blackwell datasheet (96 GB, 1,792 GB/s GDDR7, 4,000 FP4 AI TOPS sparse); "
        "PCIe 5.0 "
        "x16 64 GB/s per direction; 90% of nominal bandwidth and collective latency assumed";
  } else {
    throw Error(fmt::format("unknown GPU `{}` (use h200 or rtx-pro-6000, or cpu)", name));
  }
  return h;
}

HardwareFigures cpu_figures(double memory_gbps, double gflops) {
  HardwareFigures h;
  h.name = "cpu";
  h.nominal_memory_gbps = memory_gbps;
  h.memory_gbps = memory_gbps;
  h.dense_bf16_tflops = gflops / 1000;
  h.dense_fp8_tflops = gflops / 1000;
  h.sources = "copy bandwidth measured on this machine (bench/copy_bandwidth.hpp)";
  return h;
}

}  // namespace tessera::bench
