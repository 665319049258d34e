// Which kind of CUDA device module this process runs (ts_cuda_build, plugin_abi.h): the GPU's
// (native) or the SIMT emulator's. open_device() records the kind of the module it loaded; the
// host services answer plugins with it (ts_host_api.cuda_build), so a plugin with device code of
// its own loads the same kind. The emulator is one per process, so a process runs one kind;
// native until a module is opened.
#pragma once

#include <cstdint>

namespace tessera::device {

void set_process_cuda_build(int32_t build) noexcept;
[[nodiscard]] int32_t process_cuda_build() noexcept;

}  // namespace tessera::device
