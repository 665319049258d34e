// Entry points of the emulated plugin for the tests: its "device" memory comes from the emulator
// of this module (guard pages, bounds checks of cp.async sources).
#include <cstddef>

#include "simt_emulator.hpp"

extern "C" __attribute__((visibility("default"))) void* tessera_emu_device_alloc(size_t bytes) {
  return tessera::emu::device_alloc(bytes);
}

extern "C" __attribute__((visibility("default"))) void tessera_emu_device_free(void* p) {
  tessera::emu::device_free(p);
}
