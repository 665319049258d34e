// CUDA graphs in the device layer (Device::capture / launch; docs/cuda.md "Graphs"), on every
// backend the build has (the emulated device always, a GPU when present):
// - a captured chain (an upload from page-locked memory, ops, a download into page-locked memory)
//   replayed with new host inputs gives the bits of the same chain run eagerly, each replay;
// - what a graph cannot hold breaks the capture with an error naming it, and the stream runs
//   work again afterwards: a synchronisation, a copy from pageable host memory, an event;
// - the cpu device refuses capture, naming itself.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/device_ops.hpp"
#include "device_backends.hpp"

namespace tessera::device {
namespace {

constexpr int64_t kRows = 3, kIn = 64, kOut = 48;

struct Chain {
  Device& dev;
  const Stream& stream;
  DeviceBuffer x, w, norm, y;
  HostBuffer in, out;  // page-locked on CUDA devices
  Chain(Device& d, const Stream& s)
      : dev(d),
        stream(s),
        x(d.allocate(kRows * kIn * sizeof(float))),
        w(d.allocate(kOut * kIn * sizeof(float))),
        norm(d.allocate(kIn * sizeof(float))),
        y(d.allocate(kRows * kOut * sizeof(float))),
        in(d.allocate_host(kRows * kIn * sizeof(float))),
        out(d.allocate_host(kRows * kOut * sizeof(float))) {
    const std::vector<float> wv = random_floats(kOut * kIn, 3), nv = random_floats(kIn, 4);
    d.copy(w.data(), wv.data(), wv.size() * sizeof(float), CopyKind::kHostToDevice, s);
    d.copy(norm.data(), nv.data(), nv.size() * sizeof(float), CopyKind::kHostToDevice, s);
    d.synchronize(s);
  }
  // in -> x, rms_norm, y = x . w^T, swiglu(y, y), y -> out
  void enqueue() const {
    dev.copy(x.data(), in.get(), kRows * kIn * sizeof(float), CopyKind::kHostToDevice, stream);
    dev.ops().rms_norm(stream, x.as<float>(), kRows, kIn, norm.as<float>(), 1e-6f);
    dev.ops().linear_f32(stream, x.as<float>(), kRows, kIn, w.as<float>(), kOut, y.as<float>());
    dev.ops().swiglu(stream, y.as<float>(), y.as<float>(), kRows * kOut, 0.0f);
    dev.copy(out.get(), y.data(), kRows * kOut * sizeof(float), CopyKind::kDeviceToHost, stream);
  }
  void set_input(uint32_t seed) const {
    const std::vector<float> v = random_floats(kRows * kIn, seed);
    std::memcpy(in.get(), v.data(), v.size() * sizeof(float));
  }
  std::vector<float> output() const {
    std::vector<float> v(kRows * kOut);
    std::memcpy(v.data(), out.get(), v.size() * sizeof(float));
    return v;
  }
};

std::string capture_error(Device& dev, const Stream& stream, const std::function<void()>& record) {
  try {
    (void)dev.capture(stream, record);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceGraphs, ReplaysEqualEagerRunsWithNewInputs) {
  expect_gpu_backend_where_required();
  for (Backend& b : backends()) {
    Device& dev = *b.device;
    ASSERT_TRUE(dev.graphs()) << b.name;
    const Stream stream = dev.create_stream();
    const Chain chain(dev, stream);
    const Graph graph = dev.capture(stream, [&] { chain.enqueue(); });
    ASSERT_TRUE(graph) << b.name;
    for (uint32_t seed : {11u, 12u, 13u}) {
      chain.set_input(seed);
      chain.enqueue();
      dev.synchronize(stream);
      const std::vector<float> eager = chain.output();
      std::memset(chain.out.get(), 0, kRows * kOut * sizeof(float));
      chain.set_input(seed);
      dev.launch(graph, stream);
      dev.synchronize(stream);
      const std::vector<float> replayed = chain.output();
      EXPECT_EQ(std::memcmp(replayed.data(), eager.data(), eager.size() * sizeof(float)), 0)
          << b.name << " seed " << seed;
      EXPECT_NE(eager[0], 0.0f) << b.name;  // the chain computed something
    }
  }
}

TEST(DeviceGraphs, WhatAGraphCannotHoldBreaksTheCaptureAndTheStreamRecovers) {
  for (Backend& b : backends()) {
    Device& dev = *b.device;
    const Stream stream = dev.create_stream();
    const Chain chain(dev, stream);
    const std::string sync = capture_error(dev, stream, [&] {
      chain.enqueue();
      dev.synchronize(stream);
    });
    EXPECT_NE(sync.find("capturing"), std::string::npos) << b.name << ": " << sync;
    std::vector<float> pageable(kRows * kIn, 1.0f);
    const std::string copy = capture_error(dev, stream, [&] {
      dev.copy(chain.x.data(), pageable.data(), pageable.size() * sizeof(float),
               CopyKind::kHostToDevice, stream);
    });
    EXPECT_NE(copy.find("capturing"), std::string::npos) << b.name << ": " << copy;
    const Event event = dev.create_event();
    const std::string recorded = capture_error(dev, stream, [&] { dev.record(event, stream); });
    EXPECT_NE(recorded, "") << b.name;
    // The stream runs work at once again.
    chain.set_input(21);
    chain.enqueue();
    dev.synchronize(stream);
    EXPECT_NE(chain.output()[0], 0.0f) << b.name;
  }
}

TEST(DeviceGraphs, TheCpuDeviceHasNone) {
  CpuDevice& dev = cpu();
  EXPECT_FALSE(dev.graphs());
  const Stream stream = dev.create_stream();
  const std::string e = capture_error(dev, stream, [] {});
  EXPECT_NE(e.find("cpu: no graphs on this device"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::device
