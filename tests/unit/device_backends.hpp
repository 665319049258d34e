// What the device-layer tests share (device_ops_test.cpp, device_moe_ops_test.cpp,
// device_compressor_ops_test.cpp; device_communicator_test.cpp for gpu_required): the
// backends this build has (the emulated CUDA device always, a GPU when the native module finds
// one), the cpu backend as the oracle, host <-> device copies, random inputs, and a closeness check
// that prints the worst element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/cpu_device.hpp"
#include "device/device.hpp"
#include "device/open_device.hpp"
#include "kernels/number_formats.cuh"

namespace tessera::device {

struct Backend {
  std::string name;
  std::unique_ptr<Device> device;
};

// Why the GPU backend did not open (empty when it did, or before backends() ran).
inline std::string& gpu_backend_refusal() {
  static std::string why;
  return why;
}

// The backends to check: emulated always; native where a GPU is present.
inline std::vector<Backend>& backends() {
  static std::vector<Backend> list = [] {
    std::vector<Backend> out;
    out.push_back({"emulated", open_device({"cuda", 0, "emulated"})});
    try {
      out.push_back({"cuda", open_device({"cuda", 0, "native"})});
    } catch (const std::exception& e) {
      gpu_backend_refusal() = e.what();
      std::printf("[ info ] no GPU backend: %s\n", e.what());
    }
    return out;
  }();
  return list;
}

// The device check (tools/gpu/check.sh) sets TESSERA_REQUIRE_GPU=1: there a GPU backend that
// does not open fails the run instead of leaving only the emulated one to test.
inline bool gpu_required() {
  const char* required = std::getenv("TESSERA_REQUIRE_GPU");
  return required != nullptr && std::string(required) == "1";
}

inline void expect_gpu_backend_where_required() {
  if (!gpu_required()) return;
  ASSERT_EQ(backends().size(), 2u)
      << "TESSERA_REQUIRE_GPU=1 but the GPU backend did not open: " << gpu_backend_refusal();
  EXPECT_EQ(backends()[1].name, "cuda");
}

inline CpuDevice& cpu() {
  static CpuDevice device;
  return device;
}

inline uint16_t to_bf16(float v) {  // round to nearest even (finite)
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> random_bf16(size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<uint16_t> out(n);
  const std::vector<float> f = random_floats(n, seed, scale);
  for (size_t i = 0; i < n; ++i) out[i] = to_bf16(f[i]);
  return out;
}

// A host vector's copy in `device`'s memory, and back.
template <class T>
DeviceBuffer upload(Device& device, const Stream& stream, const std::vector<T>& host) {
  DeviceBuffer b = device.allocate(host.size() * sizeof(T));
  device.copy(b.data(), host.data(), host.size() * sizeof(T), CopyKind::kHostToDevice, stream);
  return b;
}

template <class T>
std::vector<T> download(Device& device, const Stream& stream, const DeviceBuffer& b, size_t n) {
  std::vector<T> host(n);
  device.copy(host.data(), b.data(), n * sizeof(T), CopyKind::kDeviceToHost, stream);
  device.synchronize(stream);
  return host;
}

// Fails with the worst element when |got - want| > bound(i) anywhere.
inline void expect_close(const std::string& what, const std::vector<float>& got,
                         const std::vector<float>& want,
                         const std::function<double(size_t)>& bound) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t worst = 0, bad = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double excess = d - bound(i);
    if (!(excess <= 0)) ++bad;  // NaN counts as bad
    if (!(excess <= worst_excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements out of tolerance; worst at " << worst << ": got " << got[worst]
                     << ", cpu " << want[worst] << ", bound " << bound(worst);
}

inline std::vector<uint8_t> random_e4m3(size_t n, uint32_t seed, float scale) {
  std::vector<uint8_t> out(n);
  const std::vector<float> f = random_floats(n, seed, scale);
  for (size_t i = 0; i < n; ++i) out[i] = formats::float_to_e4m3(f[i]);
  return out;
}

inline std::vector<uint8_t> random_scales(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& e : out) e = static_cast<uint8_t>(124 + rng() % 4);  // 2^-3 .. 2^0
  return out;
}

}  // namespace tessera::device
