// Enqueues the kernels of one planned batch on a stream: indexer -> top-k (CSA layers), sparse
// attention, combine of split rows. The workspace already holds the plan's metadata sections.
// Shared by run() and the kernel benchmark (tools/gpu), which times exactly this sequence.
#pragma once

#include <string>

#include "kernels/launch.hpp"
#include "tessera/plugin_abi.h"
#include "work_plan.hpp"

namespace tessera::mma {

// Which kernels to enqueue: all of them (run()), or, for the benchmark's split timings, only the
// CSA selection (indexer + top-k) or only the attention (+ combine) over an earlier selection.
enum class Stages { kAll, kSelection, kAttention };

// "" on success, else which launch failed and why.
std::string enqueue_attention(const WorkPlan& plan, const ts_attention_layer& layer,
                              const ts_attention_inputs& in, const ts_attention_outputs& out,
                              uint8_t* workspace, cudaStream_t stream,
                              Stages stages = Stages::kAll);

}  // namespace tessera::mma
