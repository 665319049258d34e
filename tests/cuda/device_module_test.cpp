// device_module_test [MODULE.so]: the CUDA device module (core/cuda/device_api.h) loaded the
// way the core loads it. Without a device: device_count refuses with "no CUDA device" and the
// test exits 77 (skipped). With one: describe, allocate, fill, host->device->device->host copies
// on a stream, and clean refusals (an impossible allocation, an unknown copy kind).
#include "device_module.hpp"

#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

using tessera::cuda::DeviceBuffer;
using tessera::cuda::DeviceModule;
using tessera::cuda::DeviceStream;

int g_failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("  %-60s %s\n", what.c_str(), ok ? "ok" : "FAIL");
  g_failures += !ok;
}

int run(const std::string& path) {
  const DeviceModule module = DeviceModule::load(path);
  const ts_cuda_device_api& api = module.api();
  int32_t count = -1;
  const ts_status s = api.device_count(&count);
  if (s.code != TS_OK) {
    const std::string why = s.message ? s.message : "";
    if (s.code != TS_ERR_UNSUPPORTED || why.find("no CUDA device") != 0 || count != 0) {
      std::printf("FAIL: device_count without a device: %d '%s'\n", s.code, why.c_str());
      return 1;
    }
    std::printf("no CUDA device: skipped (%s)\n", why.c_str());
    return 77;
  }
  ts_cuda_device_info info{};
  DeviceModule::check(api.describe(0, &info), "describe");
  std::printf(
      "device 0: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f free), driver %d, runtime "
      "%d\n",
      info.name, info.compute_major, info.compute_minor, info.multiprocessors,
      info.total_bytes / 1073741824.0, info.free_bytes / 1073741824.0, info.driver_version,
      info.runtime_version);

  const size_t n = size_t{16} << 20;  // 16 Mi ints
  std::vector<int32_t> host(n), back(n, 0);
  std::iota(host.begin(), host.end(), 7);
  DeviceStream stream(module, 0);
  DeviceBuffer a(module, 0, n * 4), b(module, 0, n * 4);
  DeviceModule::check(api.fill(0, b.data(), 0x5A, n * 4, stream.get()), "fill");
  DeviceModule::check(api.copy(0, back.data(), b.data(), 16, TS_COPY_DEVICE_TO_HOST, stream.get()),
                      "copy");
  stream.synchronize();
  expect(back[0] == 0x5A5A5A5A && back[3] == 0x5A5A5A5A, "fill writes the byte pattern");
  DeviceModule::check(
      api.copy(0, a.data(), host.data(), n * 4, TS_COPY_HOST_TO_DEVICE, stream.get()), "h2d");
  DeviceModule::check(
      api.copy(0, b.data(), a.data(), n * 4, TS_COPY_DEVICE_TO_DEVICE, stream.get()), "d2d");
  DeviceModule::check(
      api.copy(0, back.data(), b.data(), n * 4, TS_COPY_DEVICE_TO_HOST, stream.get()), "d2h");
  stream.synchronize();
  expect(back == host, "host -> device -> device -> host round trip on a stream");
  void* huge = nullptr;
  const ts_status oom = api.allocate(0, size_t{1} << 50, &huge);
  expect(oom.code == TS_ERR_OUT_OF_MEMORY && huge == nullptr,
         std::string("1 PiB refused: ") + (oom.message ? oom.message : ""));
  const ts_status kind = api.copy(0, a.data(), host.data(), 4, 9, nullptr);
  expect(kind.code == TS_ERR_INVALID_ARGUMENT, "unknown copy kind refused");
  ts_cuda_device_info missing{};
  expect(api.describe(count + 3, &missing).code != TS_OK, "describe of a missing device refused");
  std::printf("device_module_test: %s\n", g_failures == 0 ? "pass" : "FAIL");
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TESSERA_CUDA_MODULE_PATH
  const std::string path = argc > 1 ? argv[1] : TESSERA_CUDA_MODULE_PATH;
#else
  if (argc < 2) {
    std::printf("usage: device_module_test MODULE.so\n");
    return 1;
  }
  const std::string path = argv[1];
#endif
  try {
    return run(path);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
