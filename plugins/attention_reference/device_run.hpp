// The reference attention on a CUDA device (docs/cuda.md): per sequence, the kv format's device
// load() decodes the window rows, the visible compressed entries and (CSA) their indexer keys into
// the caller's workspace, then the plugin's CUDA module (cuda/) enqueues the indexer scores, the
// top-k and the sparse attention with the sink, each a simple kernel computing the CPU path's
// operations in the same order: the output and the choices are the CPU path's bits. Sequences
// reuse one workspace region (the stream runs them in order), so plan() asks for the largest
// sequence's share, as on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "reference_cuda_api.h"
#include "tessera/plugin_abi.h"

namespace tessera::reference {

// Byte offsets of one sequence's sections of the workspace (each 256-byte aligned).
struct DeviceSections {
  size_t rows, keys, scores, candidates, picks, total;
};

DeviceSections device_sections(const ts_attention_layer& layer, const ts_attention_sequence& seq);

// What plan() answers for a CUDA instance: the largest sequence's sections.
size_t device_workspace_bytes(const ts_attention_layer& layer, const ts_attention_batch& batch);

// "" when every query's rows fit the attention kernel's shared memory (max_rows of the device),
// else what does not.
std::string check_rows_fit(const ts_attention_layer& layer, const ts_attention_batch& batch,
                           int64_t max_rows);

// Enqueues the whole batch on device.stream; inputs and outputs as plugin_abi.h says for CUDA.
ts_status run_on_device(const ts_reference_cuda_api& api, const ts_attention_layer& layer,
                        const ts_attention_batch& batch, const ts_attention_inputs& in,
                        ts_attention_outputs& out, void* workspace, size_t workspace_bytes,
                        ts_device device);

}  // namespace tessera::reference
