// A weight tensor of the model in the engine's working form: its shape and its values, fp32
// row-major, or the same values kept as bfloat16 or packed in panels for the GEMMs (ops/linear.hpp
// reads every form). The model's weights are made of these (model/dsv4_weights.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "util/huge_page_arena.hpp"

namespace tessera::dsv4 {

// A tensor's values: on the heap, or in a HugePageArena once placed (model/weight_placement.hpp).
template <typename T>
using TensorStorage = std::vector<T, ArenaAllocator<T>>;

struct Tensor {
  std::vector<int64_t> shape;
  TensorStorage<float> data;  // row-major
  // A linear weight whose every value is a bfloat16 may be kept here instead (data then empty;
  // see model/bf16_weights.hpp): the same values in half the bytes, widened exactly by the GEMM.
  TensorStorage<uint16_t> bf16;
  // Or a linear weight may be kept packed for the outer-product GEMM instead, fp32 or bf16 (data
  // and bf16 then empty; model/weight_panels.hpp): [ceil(out / 16), in, 16], the same values.
  TensorStorage<float> panels;
  TensorStorage<uint16_t> bf16_panels;
  bool in_bf16() const { return data.empty() && !bf16.empty(); }
  bool in_panels() const { return data.empty() && !panels.empty(); }
  bool in_bf16_panels() const { return data.empty() && !bf16_panels.empty(); }
  int64_t numel() const {
    if (in_panels() || in_bf16_panels()) {
      return shape.size() == 2 ? shape[0] * shape[1] : 0;
    }
    return static_cast<int64_t>(in_bf16() ? bf16.size() : data.size());
  }
  const float* ptr() const { return data.data(); }  // fp32 storage only
};

}  // namespace tessera::dsv4
