// The test device of the emulated build: the process's one SIMT emulator (core/emulator, a
// shared library the plugin's emulated CUDA module uses too), so the module's cp.async bounds
// checks know every buffer the test allocates.
#include <cstring>

#include "simt_emulator.hpp"
#include "test_device.hpp"

namespace tessera::cudatest {

Backend open_backend(void*) {
  Backend b;
  b.description = "SIMT emulator on the CPU (kernels of plugins/attention_mma)";
  return b;
}

bool emulated() { return true; }

void* device_alloc(size_t bytes) { return emu::device_alloc(bytes); }

void device_free(void* p) noexcept {
  if (p != nullptr) emu::device_free(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void copy_to_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void synchronize() {}  // emulated launches run to completion inside run()

}  // namespace tessera::cudatest
