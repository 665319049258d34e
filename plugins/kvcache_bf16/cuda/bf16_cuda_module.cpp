// The CUDA module of the "bf16" kv-cache plugin (bf16_cuda_api.h): the runtime calls and kernel
// launches the plugin needs for a CUDA device, built for the GPU (nvcc) and for the SIMT
// emulator from this one source.
#include "bf16_cuda_api.h"
#include "bf16_records.hpp"
#include "kv_cuda_module.hpp"

using Module = tessera::cuda_module::KvModule<ts_bf16_cuda_api, ts_bf16_records,
                                              tessera::kvbf16::launch_store_records,
                                              tessera::kvbf16::launch_load_records>;

extern "C" __attribute__((visibility("default"))) const ts_bf16_cuda_api*
tessera_kvcache_bf16_cuda_entry() {
  return &Module::kTable;
}
