// `tessera bench device`: decode steps of the model a configuration describes, on its device
// (cpu, or cuda: a GPU or the SIMT emulator), at several batch sizes. Per batch: time per step
// and per output token; the bytes a step reads (weights in their stored formats and the kv
// entries, from the sizing model: bench/sizing_model.hpp, one rank) and the GB/s that makes
// against the device's copy bandwidth measured by the same binary first; and, on a CUDA device,
// where the step's time goes, block by block (timing events: device/step_timeline.hpp). Also,
// when asked, the prefill of one prompt of each given length in chunks: tokens per second.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
class Runtime;
}

namespace tessera::bench {

struct DeviceBenchOptions {
  std::string config_path;
  std::vector<int64_t> batches{1, 8, 64};
  int64_t context = 256;         // tokens in every sequence's cache before the timed steps
  int64_t steps = 4;             // timed decode steps per batch size (after one untimed)
  std::vector<int64_t> prefill;  // prompt lengths to time a prefill of (one sequence; none: skip)
  int64_t prefill_chunk = 256;   // tokens per forward of a prefill (the engine's chunked prefill)
};

struct PrefillRow {
  int64_t tokens = 0;
  double seconds = 0;
  std::vector<std::pair<std::string, double>> breakdown_ms;  // whole prefill, CUDA device only
};

struct DeviceBenchRow {
  int64_t batch = 1;
  double ms_per_step = 0;  // decode steps as served: from CUDA graphs when the model has them
  bool graphs = false;      // whether those steps replayed graphs (executor.cuda_graphs)
  // CUDA device: steps run eagerly with the timing events of the breakdown (their time, for
  // comparing with breakdown_ms and with ms_per_step).
  double ms_per_step_eager = 0;
  double weight_bytes = 0, kv_bytes = 0;                     // per step (sizing model)
  double gbps = 0;                                           // (weight + kv bytes) / time
  std::vector<std::pair<std::string, double>> breakdown_ms;  // per step, CUDA device only
};

struct DeviceBenchResult {
  std::string device, model, attention, kv_cache;
  double copy_gbps = 0;  // device-to-device (or host) copy, read + write bytes
  std::vector<DeviceBenchRow> rows;
  std::vector<PrefillRow> prefills;
};

DeviceBenchResult run_device_bench(const DeviceBenchOptions& options);

// The pieces run_device_bench is made of, for benches that time other configurations the same way
// (bench/attention_bench.hpp).
// c = a between two buffers of the runtime's device (read + write bytes, STREAM's Copy), best of
// 5, in GB/s; the host's copy bandwidth on the CPU.
double runtime_copy_gbps(Runtime& rt, int threads);
// One row: `batch` fresh sequences filled with options.context tokens, one untimed decode step,
// then options.steps timed ones; the block breakdown on a CUDA device. The sequences are freed
// before it returns.
DeviceBenchRow time_decode_steps(Runtime& rt, const DeviceBenchOptions& options, int64_t batch,
                                 double copy_gbps);
// Markdown: the machine, the configuration, then one table of the rows and one of the breakdown.
std::string format_device_bench(const DeviceBenchOptions& options, const DeviceBenchResult& r);

}  // namespace tessera::bench
