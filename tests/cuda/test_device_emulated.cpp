#include <dlfcn.h>

#include <cstring>

#include "test_device.hpp"

namespace tessera::cudatest {
namespace {

using AllocFn = void* (*)(size_t);
using FreeFn = void (*)(void*);
AllocFn g_alloc = nullptr;
FreeFn g_free = nullptr;

}  // namespace

Backend open_backend(void* plugin_handle) {
  Backend b;
  g_alloc = reinterpret_cast<AllocFn>(dlsym(plugin_handle, "tessera_emu_device_alloc"));
  g_free = reinterpret_cast<FreeFn>(dlsym(plugin_handle, "tessera_emu_device_free"));
  if (g_alloc == nullptr || g_free == nullptr)
    b.unavailable = "the plugin is not the emulated build (no tessera_emu_device_alloc)";
  else
    b.description = "SIMT emulator on the CPU (kernels of plugins/attention_mma)";
  return b;
}

bool emulated() { return true; }

void* device_alloc(size_t bytes) { return g_alloc(bytes); }

void device_free(void* p) noexcept {
  if (p != nullptr) g_free(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void copy_to_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void synchronize() {}  // emulated launches run to completion inside run()

}  // namespace tessera::cudatest
