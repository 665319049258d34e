// The CUDA module of the "reference" attention plugin (reference_cuda_api.h), built for the GPU
// (nvcc) and for the SIMT emulator from this one source.
#include <string>

#include "reference_cuda_api.h"
#include "reference_launch.hpp"

namespace {

namespace ref = tessera::refcuda;

thread_local std::string t_error;

const char* failed(std::string why) {
  t_error = std::move(why);
  return t_error.c_str();
}

const char* failed(const std::string& what, cudaError_t e) {
  return failed(what + ": " + cudaGetErrorString(e));
}

const char* check_device(int32_t ordinal) {
  int count = 0;  // left unwritten when there is no driver (TOOLCHAIN.md §3)
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return failed("no CUDA device: cudaGetDeviceCount failed", e);
  if (count == 0) return failed("no CUDA device: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count)
    return failed("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                  std::to_string(count) + " found)");
  return nullptr;
}

int32_t is_device_memory(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is host memory; clear the sticky error
    return 0;
  }
  return attributes.type == cudaMemoryTypeDevice ? 1 : 0;
}

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
