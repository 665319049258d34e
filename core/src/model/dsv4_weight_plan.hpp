// What a DeepSeek-V4 checkpoint must contain for a given config: one TensorSpec per tensor of
// ModelWeights (official name, fp32 shape, which storage formats are acceptable) pointing at the
// destination inside a pre-shaped ModelWeights. The loader validates the checkpoint against
// this list before reading a single weight byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/dsv4_weights.hpp"
#include "weights/dsv4_config.hpp"

namespace tessera::dsv4 {

enum class StorageKind {
  Dense,         // F32 / BF16 / F16 only: norms, hc_*, sinks, ape, bias, embedding
  Linear,        // [out, in]: F32 / BF16 / F16, or F8_E4M3 + `.scale` per 128x128 block
  RoutedExpert,  // Linear, or FP4 e2m1 (I8 [out, in/2] or F4 [out, in]) + `.scale` per 32
  TokenTable,    // tid2eid: I64 or I32 [vocab, experts_per_token], values in [0, E)
};

struct TensorSpec {
  std::string name;            // official name
  std::vector<int64_t> shape;  // fp32 shape after loading
  std::string dims;            // the shape in config terms, e.g. "[q_lora_rank, hidden_size]"
  StorageKind kind = StorageKind::Dense;
  Tensor* dst = nullptr;                  // all kinds but TokenTable
  std::vector<int32_t>* table = nullptr;  // TokenTable
  int64_t table_limit = 0;                // TokenTable: values must be < this (E)
};

// Shapes `weights` (layers, optional compressor/indexer/bias, experts) for `config` and returns
// the spec of every tensor to load, in checkpoint order (top level, then layer by layer).
// `weights` must outlive the specs and must not be resized afterwards.
[[nodiscard]] std::vector<TensorSpec> plan_model_tensors(const ModelConfig& config,
                                                         ModelWeights& weights);

}  // namespace tessera::dsv4
