// The collectives of tensor-parallel ranks on devices (device/device_communicator.hpp), one suite
// for every implementation this build has:
//   cpu       the host-memory communicator on the cpu backend, 1, 2, 3 and 4 ranks;
//   emulated  the host-memory communicator on the SIMT emulator, each rank its own stream;
//   nccl      NcclStreamCommunicator on a GPU: one rank (NCCL takes one rank per GPU; several
//             GPUs are not lent here), skipped without a GPU or without the CUDA module, unless
//             TESSERA_REQUIRE_GPU=1 (the device check, tools/gpu/check.sh): then that fails.
// Checks: a collective sees the work enqueued before it on the rank's stream and the work
// enqueued after it sees its result; all-reduce gives every rank the same bits, the pairwise tree
// of the ranks' values (ops/tree_sum.hpp); all-gather; a rank that aborts wakes the others, whose
// collectives throw instead of waiting forever.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../../core/cuda/device_module.hpp"
#include "../../core/cuda/nccl_communicator.hpp"
#include "device/cpu_device.hpp"
#include "device/open_device.hpp"
#include "device_backends.hpp"
#include "executor/host_memory_communicator.hpp"
#include "ops/tree_sum.hpp"
#include "util/check.hpp"
#include "weights/numeric_encoding.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera {
namespace {

using device::CopyKind;
using device::Device;
using device::DeviceCommunicator;
using device::Stream;

// The GPU's device module where open_device finds it (beside the binary in a bundle, else the
// build's), or "" when there is none.
std::string native_module() {
  for (const std::string& path : device::cuda_module_candidates("native"))
    if (std::filesystem::exists(path)) return path;
  return "";
}

// One rank's view: its device, its stream and its communicator.
using RankFn = std::function<void(DeviceCommunicator&, Device&, const Stream&)>;

class Ranks : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs fn on `size` rank threads with the implementation under test.
  void run(int size, const RankFn& fn) {
    const std::string& kind = GetParam();
    if (kind == "nccl") return run_nccl(size, fn);
    std::unique_ptr<Device> owned =
        kind == "cpu" ? std::unique_ptr<Device>(std::make_unique<device::CpuDevice>())
                      : device::open_device({"cuda", 0, "emulated"});
    Device& dev = *owned;
    HostCommGroup group(size);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        try {
          const Stream stream = dev.create_stream();
          auto comm = make_host_memory_communicator(group, r, dev);
          fn(*comm, dev, stream);
          dev.synchronize(stream);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    rank_errors = errors;
  }

  void run_nccl(int size, const RankFn& fn) {
    const std::string module = native_module();
    if (module.empty()) {
      if (device::gpu_required())
        FAIL() << "TESSERA_REQUIRE_GPU=1 but no libtessera_cuda.so was found";
      GTEST_SKIP() << "built without TESSERA_CUDA";
    }
    if (size > 1) GTEST_SKIP() << "NCCL takes one rank per GPU; one GPU at most is lent here";
    std::unique_ptr<Device> dev;
    try {
      dev = device::open_device({"cuda", 0, "native"});
    } catch (const std::exception& e) {
      if (device::gpu_required())
        FAIL() << "TESSERA_REQUIRE_GPU=1 but no CUDA device: " << e.what();
      GTEST_SKIP() << "no CUDA device: " << e.what();
    }
    const ts_cuda_nccl_api& api = cuda::NcclCommunicator::load_api(module);
    const Stream stream = dev->create_stream();
    cuda::NcclStreamCommunicator comm(api, 0, 1, 0, cuda::NcclCommunicator::unique_id(api));
    fn(comm, *dev, stream);
    dev->synchronize(stream);
    rank_errors.assign(1, "");
  }

  std::vector<std::string> rank_errors;
};

std::vector<float> rank_values(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)  // magnitudes that make the order of the sum visible
    v[i] = static_cast<float>((rank * 7 + static_cast<int>(i)) % 9 - 4) *
           (i % 3 == 0 ? 1e6f : 1e-2f) * (1.0f + 0.1f * static_cast<float>(rank));
  return v;
}

TEST_P(Ranks, CollectivesAreOrderedOnTheStreamAndAgreeOnEveryRank) {
  const size_t n = 777;
  for (int size : {1, 2, 3, 4}) {
    std::vector<std::vector<float>> reduced(static_cast<size_t>(size)),
        gathered(static_cast<size_t>(size));
    run(size, [&](DeviceCommunicator& comm, Device& dev, const Stream& s) {
      EXPECT_EQ(comm.size(), size);
      const std::vector<float> v = rank_values(comm.rank(), n);
      device::DeviceBuffer d = dev.allocate(n * sizeof(float));
      device::DeviceBuffer all = dev.allocate(static_cast<size_t>(size) * n * sizeof(float));
      dev.copy(d.data(), v.data(), n * sizeof(float), CopyKind::kHostToDevice, s);
      dev.ops().scale(s, d.as<float>(), static_cast<int64_t>(n), 2.0f);  // before: seen
      comm.all_gather(d.as<float>(), n, all.as<float>(), s);
      comm.all_reduce_sum(d.as<float>(), n, s);
      dev.ops().scale(s, d.as<float>(), static_cast<int64_t>(n), 0.5f);  // after: sees the sum
      std::vector<float>& out = reduced[static_cast<size_t>(comm.rank())];
      std::vector<float>& got = gathered[static_cast<size_t>(comm.rank())];
      out.resize(n);
      got.resize(static_cast<size_t>(size) * n);
      dev.copy(out.data(), d.data(), n * sizeof(float), CopyKind::kDeviceToHost, s);
      dev.copy(got.data(), all.data(), got.size() * sizeof(float), CopyKind::kDeviceToHost, s);
      dev.synchronize(s);
    });
    if (IsSkipped() || HasFatalFailure()) return;
    for (const std::string& e : rank_errors) ASSERT_EQ(e, "") << size << " ranks";
    const int ranks = static_cast<int>(rank_errors.size());
    std::vector<std::vector<float>> doubled;
    std::vector<float> want_gather;
    for (int r = 0; r < ranks; ++r) {
      doubled.push_back(rank_values(r, n));
      for (float& x : doubled.back()) x *= 2.0f;
      want_gather.insert(want_gather.end(), doubled.back().begin(), doubled.back().end());
    }
    std::vector<const float*> parts;
    for (const auto& d : doubled) parts.push_back(d.data());
    std::vector<float> want(n);
    ops::tree_sum(parts, static_cast<int64_t>(n), want.data());
    for (float& x : want) x *= 0.5f;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(reduced[static_cast<size_t>(r)], want) << "rank " << r << " of " << ranks;
      EXPECT_EQ(gathered[static_cast<size_t>(r)], want_gather) << "rank " << r << " of " << ranks;
    }
  }
}

// collective_dtype = "bf16": each rank's part rounded to bf16 on its device, the bf16 values
// summed (the host-memory communicator: widened, in all_reduce_sum's fp32 order, rounded once;
// NCCL: its bf16 ring, one rank here) and widened back. Every rank gets the same bits.
TEST_P(Ranks, Bf16AllReduceRoundsEachPartAndTheSum) {
  const size_t n = 777;
  for (int size : {1, 2, 4}) {
    std::vector<std::vector<float>> reduced(static_cast<size_t>(size));
    run(size, [&](DeviceCommunicator& comm, Device& dev, const Stream& s) {
      const std::vector<float> v = rank_values(comm.rank(), n);
      device::DeviceBuffer d = dev.allocate(n * sizeof(float));
      device::DeviceBuffer wire = dev.allocate(n * sizeof(uint16_t));
      dev.copy(d.data(), v.data(), n * sizeof(float), CopyKind::kHostToDevice, s);
      const auto count = static_cast<int64_t>(n);
      dev.ops().round_to_bf16(s, d.as<float>(), count, wire.as<uint16_t>());
      comm.all_reduce_sum_bf16(wire.as<uint16_t>(), n, s);
      dev.ops().widen_bf16(s, wire.as<uint16_t>(), count, d.as<float>());
      std::vector<float>& out = reduced[static_cast<size_t>(comm.rank())];
      out.resize(n);
      dev.copy(out.data(), d.data(), n * sizeof(float), CopyKind::kDeviceToHost, s);
      dev.synchronize(s);
    });
    if (IsSkipped() || HasFatalFailure()) return;
    for (const std::string& e : rank_errors) ASSERT_EQ(e, "") << size << " ranks";
    const int ranks = static_cast<int>(rank_errors.size());
    std::vector<std::vector<float>> rounded;
    for (int r = 0; r < ranks; ++r) {
      rounded.push_back(rank_values(r, n));
      for (float& x : rounded.back()) x = weights::bf16_to_f32(weights::f32_to_bf16(x));
    }
    std::vector<const float*> parts;
    for (const auto& p : rounded) parts.push_back(p.data());
    std::vector<float> want(n);
    ops::tree_sum(parts, static_cast<int64_t>(n), want.data());
    for (float& x : want) x = weights::bf16_to_f32(weights::f32_to_bf16(x));
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(reduced[static_cast<size_t>(r)], want) << "rank " << r << " of " << ranks;
  }
}

TEST_P(Ranks, AnAbortingRankWakesTheOthers) {
  if (GetParam() == "nccl") GTEST_SKIP() << "one rank: nobody to wake";
  run(3, [&](DeviceCommunicator& comm, Device& dev, const Stream& s) {
    device::DeviceBuffer d = dev.allocate(64 * sizeof(float));
    dev.fill(d.data(), 0, 64 * sizeof(float), s);
    if (comm.rank() == 1) {
      comm.abort_group("rank 1 failed to allocate");
      throw Error("rank 1 stopped");
    }
    comm.all_reduce_sum(d.as<float>(), 64, s);
  });
  ASSERT_EQ(rank_errors.size(), 3u);
  EXPECT_EQ(rank_errors[1], "rank 1 stopped");
  for (int r : {0, 2}) {
    EXPECT_NE(rank_errors[static_cast<size_t>(r)].find("rank 1 failed to allocate"),
              std::string::npos)
        << "rank " << r << ": '" << rank_errors[static_cast<size_t>(r)] << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Implementations, Ranks, ::testing::Values("cpu", "emulated", "nccl"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tessera
