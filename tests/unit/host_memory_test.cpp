// Host memory for device copies: HostArray (util/host_array.hpp), the pool of a device's
// page-locked blocks (device/host_block_pool.hpp), the emulated runtime's page-locked copies
// (core/emulator: read as the stream runs, as a GPU's DMA does), and the device forward's logits
// coming back into the model's blocks (model/device_model.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "device/cpu_device.hpp"
#include "device/host_block_pool.hpp"
#include "device/host_staging.hpp"
#include "device/open_device.hpp"
#include "device_engine.hpp"
#include "util/host_array.hpp"

namespace tessera {
namespace {

TEST(HostArray, CopiesAreDeepAndResizeKeepsThePrefix) {
  HostArray<float> a(4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  HostArray<float> b = a;
  b[0] = 9;
  EXPECT_EQ(a[0], 0);
  EXPECT_NE(a.data(), b.data());
  b.resize(6);
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[3], 3);
  b.resize(2);
  EXPECT_EQ(b[1], 1);
  b[0] = 0;
  EXPECT_FALSE(a == b);
  b = a;
  EXPECT_TRUE(a == b);
  const HostArray<float> moved = std::move(b);
  EXPECT_TRUE(moved == a);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): a move leaves it empty
}

TEST(HostArray, SharesItsOwnersBlockUntilTheLastArrayGoes) {
  bool freed = false;
  std::vector<float> storage(8, 1.0f);
  {
    const std::shared_ptr<const void> owner(storage.data(), [&](const void*) { freed = true; });
    HostArray<float> first(storage.data(), 4, owner);
    HostArray<float> second(storage.data() + 4, 4, owner);
    EXPECT_EQ(first.data(), storage.data());  // a view, not a copy
    const HostArray<float> deep = first;      // a copy is the heap's
    EXPECT_NE(deep.data(), storage.data());
    first = HostArray<float>();
    EXPECT_FALSE(freed);  // second still holds the block
  }
  EXPECT_TRUE(freed);
}

TEST(HostBlockPool, ReusesReturnedBlocksAndKeepsAtMostKept) {
  device::CpuDevice cpu;
  device::HostBlockPool pool(cpu, 1);
  std::shared_ptr<std::byte> a = pool.take(1000), b = pool.take(1000);
  ASSERT_NE(a.get(), b.get());
  EXPECT_EQ(pool.allocations(), 2u);
  std::byte* const a_data = a.get();
  a.reset();
  b.reset();  // the pool keeps one: b's block is freed
  EXPECT_EQ(pool.free_blocks(), 1u);
  const std::shared_ptr<std::byte> again = pool.take(500);
  EXPECT_EQ(again.get(), a_data);
  EXPECT_EQ(pool.allocations(), 2u);
  const std::shared_ptr<std::byte> larger = pool.take(size_t{3} << 20);  // more than a block has
  EXPECT_EQ(pool.allocations(), 3u);
  std::memset(larger.get(), 1, size_t{3} << 20);  // all of it is there (ASan checks)
}

TEST(HostBlockPool, BlocksReturnFromOtherThreadsAndOutliveThePool) {
  device::CpuDevice cpu;
  std::shared_ptr<std::byte> kept;
  {
    device::HostBlockPool pool(cpu);
    std::shared_ptr<std::byte> block = pool.take(64);
    std::thread([b = std::move(block)]() mutable { b.reset(); }).join();
    EXPECT_EQ(pool.free_blocks(), 1u);
    kept = pool.take(64);
    EXPECT_EQ(pool.allocations(), 1u);
  }
  std::memset(kept.get(), 7, 64);  // the pool is gone; the block is still the holder's
  kept.reset();                    // and is freed now (ASan / LSan check)
}

// The emulated device's host blocks are page-locked, and stay usable after the device object.
TEST(HostBlockPool, EmulatedBlocksArePageLockedAndOutliveTheDevice) {
  std::unique_ptr<device::Device> emulated = device::open_device({"cuda", 0, "emulated"});
  std::shared_ptr<std::byte> block;
  {
    device::HostBlockPool pool(*emulated);
    block = pool.take(4096);
  }
  const std::vector<float> pageable(16);
  EXPECT_TRUE(emulated->page_locked(block.get()));
  EXPECT_TRUE(emulated->page_locked(block.get() + 4000));
  EXPECT_FALSE(emulated->page_locked(pageable.data()));
  {
    const device::DeviceBuffer on_device = emulated->allocate(64);
    EXPECT_FALSE(emulated->page_locked(on_device.data()));
  }
  device::CpuDevice cpu;
  const device::HostBuffer heap = cpu.allocate_host(64);
  EXPECT_FALSE(cpu.page_locked(heap.get()));
  emulated.reset();
  std::memset(block.get(), 3, 4096);
  block.reset();  // released through the module, which stays loaded
}

// A copy from page-locked memory reads its source when the stream runs it (a GPU's DMA); one from
// pageable memory has read it when the call returns (the runtime stages it). The emulated runtime
// does both, so that a step writing a page-locked source too early fails on the emulator too.
TEST(EmulatedCopies, PageLockedSourcesAreReadWhenTheStreamRuns) {
  const std::unique_ptr<device::Device> dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream stream = dev->create_stream();
  const device::HostBuffer pinned = dev->allocate_host(sizeof(float));
  std::vector<float> pageable(1);
  const device::DeviceBuffer a = dev->allocate(sizeof(float)), b = dev->allocate(sizeof(float));
  const float one = 1, two = 2;
  std::memcpy(pinned.get(), &one, sizeof one);
  pageable[0] = one;
  dev->copy(a.data(), pinned.get(), sizeof(float), device::CopyKind::kHostToDevice, stream);
  dev->copy(b.data(), pageable.data(), sizeof(float), device::CopyKind::kHostToDevice, stream);
  std::memcpy(pinned.get(), &two, sizeof two);  // before the stream ran either copy
  pageable[0] = two;
  float got_a = 0, got_b = 0;
  dev->copy(&got_a, a.data(), sizeof(float), device::CopyKind::kDeviceToHost, stream);
  dev->copy(&got_b, b.data(), sizeof(float), device::CopyKind::kDeviceToHost, stream);
  dev->synchronize(stream);
  EXPECT_EQ(got_a, two);  // the page-locked source, as it stood when the stream ran
  EXPECT_EQ(got_b, one);  // the pageable one, as it stood at the call
}

// A step's uploads through the arena: more than its first block holds, every array arrives, and
// the next step starts with one block that holds them all.
TEST(HostStaging, UploadsArriveAndTheArenaGrowsToTheStep) {
  const std::unique_ptr<device::Device> dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream stream = dev->create_stream();
  device::HostStaging staging(*dev, 1024);
  constexpr int kArrays = 9;
  constexpr size_t kCount = 100;  // 400 bytes, 512 in the arena
  const device::DeviceBuffer on_device = dev->allocate(kArrays * kCount * sizeof(int32_t));
  std::vector<int32_t> values(kCount);
  for (int a = 0; a < kArrays; ++a) {
    for (size_t i = 0; i < kCount; ++i) values[i] = static_cast<int32_t>(a * 1000 + i);
    staging.upload(on_device.as<int32_t>() + a * kCount, std::span<const int32_t>(values), stream);
  }  // `values` was rewritten after each upload: the arena holds each array's own copy
  EXPECT_GT(staging.capacity(), 1024u);
  std::vector<int32_t> back(kArrays * kCount);
  dev->copy(back.data(), on_device.data(), back.size() * sizeof(int32_t),
            device::CopyKind::kDeviceToHost, stream);
  dev->synchronize(stream);
  for (int a = 0; a < kArrays; ++a) {
    for (size_t i = 0; i < kCount; i += 33) {
      EXPECT_EQ(back[a * kCount + i], static_cast<int32_t>(a * 1000 + i)) << a << " " << i;
    }
  }
  const size_t grown = staging.capacity();
  EXPECT_TRUE(staging.in_use());
  staging.reset();
  EXPECT_FALSE(staging.in_use());
  EXPECT_EQ(staging.capacity(), grown);  // now one block of that size
}

// Why reset() waits for the step's synchronisation: an arena reused before the stream ran its
// copies hands the device the later step's values (the emulated device reads page-locked sources
// as the stream runs, as a GPU does).
TEST(HostStaging, ResetBeforeTheStreamRanHandsTheDeviceLaterValues) {
  const std::unique_ptr<device::Device> dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream stream = dev->create_stream();
  device::HostStaging staging(*dev);
  const device::DeviceBuffer a = dev->allocate(sizeof(int64_t)), b = dev->allocate(sizeof(int64_t));
  const int64_t first = 1, second = 2;
  staging.upload(a.as<int64_t>(), std::span<const int64_t>(&first, 1), stream);
  staging.reset();  // too early
  staging.upload(b.as<int64_t>(), std::span<const int64_t>(&second, 1), stream);
  int64_t got = 0;
  dev->copy(&got, a.data(), sizeof got, device::CopyKind::kDeviceToHost, stream);
  dev->synchronize(stream);
  EXPECT_EQ(got, second);
}

// The device forward's logits, scans and group maxima come back into one page-locked block of the
// model's pool; a step reuses the block of logits already dropped, and logits may outlive the
// model and its device.
TEST(DeviceModelLogits, ComeBackInPageLockedBlocksTheModelReuses) {
  const auto options =
      testing::parity_options(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4", "{}");
  auto e = std::make_unique<DeviceEngine>("emulated", options);
  auto kv = e->new_sequence();
  const std::vector<int32_t> prompt = synthetic_prompt(6, 5);
  const auto step = [&](std::span<const int32_t> tokens) {
    dsv4::ForwardBatch batch;
    batch.chunks.push_back({kv.get(), tokens, true});
    return e->model->forward(batch);
  };
  dsv4::Logits first = step(std::span(prompt).first(4));
  ASSERT_EQ(first.values.size(), static_cast<size_t>(4 * first.vocab));
  EXPECT_TRUE(e->device->page_locked(first.values.data()));
  EXPECT_TRUE(e->device->page_locked(first.scans.data()));
  EXPECT_TRUE(e->device->page_locked(first.group_max.data()));
  for (int64_t r = 0; r < 4; ++r) {  // the scans came back with their rows
    const float* row = first.row(r);
    const auto argmax = std::max_element(row, row + first.vocab) - row;
    EXPECT_EQ(first.scans[static_cast<size_t>(r)].argmax, argmax) << "row " << r;
  }
  const size_t after_first = e->model->host_blocks().allocations();
  EXPECT_EQ(after_first, 1u);
  const dsv4::Logits second = step(std::span(prompt).subspan(4, 1));  // first still held
  EXPECT_EQ(e->model->host_blocks().allocations(), 2u);
  const dsv4::Logits copy = first;  // deep, in the heap
  EXPECT_FALSE(e->device->page_locked(copy.values.data()));
  first = dsv4::Logits();
  const dsv4::Logits third = step(std::span(prompt).subspan(5, 1));  // reuses first's block
  EXPECT_EQ(e->model->host_blocks().allocations(), 2u);
  kv.reset();
  e.reset();  // the model, its pool and its device go; the logits stay readable
  EXPECT_EQ(third.values.size(), static_cast<size_t>(third.vocab));
  const auto top =
      std::max_element(third.values.begin(), third.values.end()) - third.values.begin();
  EXPECT_EQ(third.scans[0].argmax, top);
  EXPECT_TRUE(copy.values == copy.values);
}

}  // namespace
}  // namespace tessera
