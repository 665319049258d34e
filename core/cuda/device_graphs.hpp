// CUDA graphs for the device module's table (device_api.h, version 8): stream capture and the
// replay of what it recorded. A graph handle is a cudaGraphExec_t.
#pragma once

#include <cstdint>

#include "tessera/plugin_abi.h"

namespace tessera::cuda_module {

ts_status capture_begin(int32_t ordinal, void* stream);
ts_status capture_end(int32_t ordinal, void* stream, void** graph);
ts_status graph_launch(int32_t ordinal, void* graph, void* stream);
ts_status graph_destroy(int32_t ordinal, void* graph);

}  // namespace tessera::cuda_module
