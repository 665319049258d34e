// The CUDA module of the "reference" attention plugin (reference_cuda_api.h), built for the GPU
// (nvcc) and for the SIMT emulator from this one source.
#include <string>

#include "cuda_module_support.hpp"
#include "reference_cuda_api.h"
#include "reference_launch.hpp"

namespace {

namespace ref = tessera::refcuda;

using tessera::cuda_module::check_device;
using tessera::cuda_module::failed;
using tessera::cuda_module::is_device_memory;

const char* max_rows(int32_t ordinal, int64_t* rows) {
  size_t bytes = 0;
  if (const cudaError_t e = ref::sink_attention_shared_limit(ordinal, &bytes); e != cudaSuccess)
    return failed("reading the shared-memory limit", e);
  *rows = static_cast<int64_t>(bytes / sizeof(float)) - 16 - 2;
  return nullptr;
}

const char* enqueue_sequence(int32_t ordinal, void* stream, const ts_reference_cuda_layer* layer,
                             const ts_reference_cuda_sequence* sequence) {
  if (const cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    return failed("cudaSetDevice", e);
  auto* s = static_cast<cudaStream_t>(stream);
  if (layer->compress_ratio == 4) {
    if (const cudaError_t e = ref::launch_indexer_scores(*layer, *sequence, s); e != cudaSuccess)
      return failed("launching the indexer scores", e);
    if (const cudaError_t e = ref::launch_select_top_k(*layer, *sequence, s); e != cudaSuccess)
      return failed("launching the top-k", e);
  }
  if (const cudaError_t e = ref::launch_sink_attention(*layer, *sequence, s); e != cudaSuccess)
    return failed("launching the attention", e);
  return nullptr;
}

const ts_reference_cuda_api kApi = {sizeof(ts_reference_cuda_api), check_device, is_device_memory,
                                    max_rows, enqueue_sequence};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ts_reference_cuda_api*
tessera_attention_reference_cuda_entry() {
  return &kApi;
}
