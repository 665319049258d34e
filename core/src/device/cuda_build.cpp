#include "device/cuda_build.hpp"

#include <atomic>

#include "tessera/plugin_abi.h"

namespace tessera::device {
namespace {

std::atomic<int32_t> g_cuda_build{TS_CUDA_BUILD_NATIVE};

}  // namespace

void set_process_cuda_build(int32_t build) noexcept { g_cuda_build.store(build); }

int32_t process_cuda_build() noexcept { return g_cuda_build.load(); }

}  // namespace tessera::device
