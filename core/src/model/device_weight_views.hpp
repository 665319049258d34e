// The device forward's view of a checkpoint placed on a device (device_weights.hpp): every weight
// by its role, as stored (BF16, F32, FP8 e4m3 + UE8M0 128x128 scales, FP4 e2m1 + UE8M0 per 32),
// with the one dispatch that multiplies by it. Built once; points into DeviceModelWeights, which
// must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "device/device_ops.hpp"
#include "model/device_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

// A linear weight [out, in] (y = x . W^T).
struct DeviceWeight {
  using Format = device::LinearFormat;
  Format format = Format::kF32;
  int64_t out = 0, in = 0;
  const void* data = nullptr;
  const uint8_t* scale = nullptr;  // FP8: [ceil(out/128), ceil(in/128)]; FP4: [out, in/32]
  const std::string* name = nullptr;

  // Output rows [first, first + count): FP8 needs first % 128 == 0 (its scale blocks).
  [[nodiscard]] DeviceWeight rows(int64_t first, int64_t count) const;
};

// y[rows, w.out] = x[rows, w.in] . W^T by the kernel of w's format.
void linear(const device::DeviceOps& ops, const device::Stream& stream, const float* x,
            int64_t rows, const DeviceWeight& w, float* y);

// A vector or table in BF16 or F32 (norm weights, the embedding).
struct DeviceVector {
  bool bf16 = false;
  const void* data = nullptr;
};

// x[rows, width] RMS-normalised, times w when given (w.data null: unweighted).
void rms_norm(const device::DeviceOps& ops, const device::Stream& stream, float* x, int64_t rows,
              int64_t width, const DeviceVector& w, float eps);

struct DeviceHyperConnection {
  const float* fn = nullptr;  // [rows, hc * D]
  const float* base = nullptr;
  const float* scale = nullptr;
  int64_t rows = 0;
};

// A compressor (model/device_compressors.hpp): projections [c * d, D] (c = 2 when m == 4, else
// 1), ape [m, c * d] in F32 (as checkpoints store it), the entry norm [d].
struct DeviceCompressor {
  DeviceWeight wkv, wgate;
  const float* ape = nullptr;
  DeviceVector norm;
};

struct DeviceAttentionWeights {
  const float* attn_sink = nullptr;  // [H]
  DeviceWeight wq_a, wq_b, wkv, wo_a, wo_b;
  DeviceVector q_norm, kv_norm;
  std::optional<DeviceCompressor> compressor;
  // CSA layers: the indexer.
  DeviceWeight index_wq_b, index_weights_proj;
  std::optional<DeviceCompressor> index_compressor;
};

struct DeviceExpert {
  DeviceWeight w1, w2, w3;
};

// One projection (w1, w2 or w3) of every routed expert for device::DeviceOps::grouped_linear:
// the experts' weights share a format and shape; the pointer arrays are in device memory.
struct DeviceExpertTable {
  device::LinearFormat format = device::LinearFormat::kF32;
  int64_t out = 0, in = 0;
  const void* const* weights = nullptr;    // [E]
  const uint8_t* const* scales = nullptr;  // [E] (null entries for bf16 / f32)
};

struct DeviceMoeWeights {
  DeviceWeight gate;
  const float* bias = nullptr;       // learned layers
  const int32_t* tid2eid = nullptr;  // hash layers: [vocab * K]
  int64_t table_size = 0;
  DeviceExpert shared;
  // The routed experts this rank holds: all, or under expert parallelism experts
  // [first_expert, first_expert + experts.size()) (model/device_shard.hpp).
  std::vector<DeviceExpert> experts;
  int64_t first_expert = 0;
  DeviceExpertTable w1, w2, w3;  // the routed experts' projections, grouped
};

struct DeviceLayerWeights {
  DeviceVector attn_norm, ffn_norm;
  DeviceHyperConnection hc_attn, hc_ffn;
  DeviceAttentionWeights attn;
  DeviceMoeWeights ffn;
};

struct DeviceModelView {
  DeviceVector embed;  // [V, D]
  DeviceWeight head;   // [V, D]
  DeviceVector norm;
  DeviceHyperConnection hc_head;
  std::vector<DeviceLayerWeights> layers;
  std::vector<device::DeviceBuffer> expert_tables;  // what the DeviceExpertTables point into
};

// y[r] = x[r] . W_e^T for every expert e over its rows [offsets[e], offsets[e + 1]).
void grouped_linear(const device::DeviceOps& ops, const device::Stream& stream, const float* x,
                    const DeviceExpertTable& table, int64_t experts, const int64_t* offsets,
                    float* y);

// Throws tessera::Error naming the tensor when one is missing or in a format the device forward
// does not take (FP8 with F32 scales, norms other than BF16 / F32). `experts`: the routed
// experts the weights hold (a range under expert parallelism; default: all).
[[nodiscard]] DeviceModelView view_device_weights(const DeviceModelWeights& weights,
                                                  const ModelConfig& config, device::Device& device,
                                                  const device::Stream& stream,
                                                  ExpertRange experts = {0, -1});

}  // namespace tessera::dsv4
