// The CUDA module of the "fp8" kv-cache plugin (fp8_cuda_api.h): the runtime calls and kernel
// launches the plugin needs for a CUDA device, built for the GPU (nvcc) and for the SIMT
// emulator from this one source.
#include "fp8_cuda_api.h"
#include "fp8_records.hpp"
#include "kv_cuda_module.hpp"

using Module = tessera::cuda_module::KvModule<ts_fp8_cuda_api, ts_fp8_records,
                                              tessera::kvfp8::launch_store_entries,
                                              tessera::kvfp8::launch_load_entries>;

extern "C" __attribute__((visibility("default"))) const ts_fp8_cuda_api*
tessera_kvcache_fp8_cuda_entry() {
  return &Module::kTable;
}
