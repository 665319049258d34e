// What the engine runs a step with: the host forward (model/dsv4_model.hpp) or the device forward
// (model/device_model.hpp), one interface.
#pragma once

#include "model/forward_batch.hpp"
#include "ops/logits.hpp"

namespace tessera::dsv4 {

class ForwardModel {
 public:
  virtual ~ForwardModel() = default;
  // One step: every chunk's tokens appended to its SequenceKv; logits (host memory) for the last
  // token of each chunk, or all of its tokens when chunk.all_logits.
  virtual Logits forward(const ForwardBatch& batch, ForwardStats* stats = nullptr) = 0;
};

}  // namespace tessera::dsv4
