// The NCCL communicator of the CUDA module (core/cuda/nccl_api.h, nccl_communicator.hpp). Built
// only with TESSERA_CUDA: without the module the test says so and skips; without a GPU only the
// module's NCCL link is checked (ncclGetVersion needs no device); with one GPU a one-rank group
// runs every collective on device buffers (NCCL allows one rank per GPU; multi-rank runs need
// several GPUs: tools/gpu/check.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "../../core/cuda/device_module.hpp"
#include "../../core/cuda/nccl_communicator.hpp"

namespace tessera {
namespace {

const std::string kModule = std::string(TESSERA_BINARY_DIR) + "/libtessera_cuda.so";

TEST(NcclCommunicator, ModuleExportsNccl) {
  if (!std::filesystem::exists(kModule)) GTEST_SKIP() << "built without TESSERA_CUDA";
  const ts_cuda_nccl_api& api = cuda::NcclCommunicator::load_api(kModule);
  int32_t version = 0;
  ASSERT_EQ(api.nccl_version(&version).code, TS_OK);
  EXPECT_GE(version, 21800);  // NCCL 2.18 or newer
}

TEST(NcclCommunicator, OneRankCollectivesOnTheDevice) {
  if (!std::filesystem::exists(kModule)) GTEST_SKIP() << "built without TESSERA_CUDA";
  const auto module = cuda::DeviceModule::load(kModule);
  int32_t devices = 0;
  if (module.api().device_count(&devices).code != TS_OK || devices == 0)
    GTEST_SKIP() << "no CUDA device";
  const ts_cuda_nccl_api& api = cuda::NcclCommunicator::load_api(kModule);
  void* stream = nullptr;
  cuda::DeviceModule::check(module.api().stream_create(0, &stream), "stream");
  {
    cuda::NcclCommunicator comm(api, 0, 1, 0, cuda::NcclCommunicator::unique_id(api), stream);
    EXPECT_EQ(comm.size(), 1);
    const std::vector<float> host{1.5f, -2.0f, 3.25f};
    cuda::DeviceBuffer a(module, 0, host.size() * sizeof(float));
    cuda::DeviceBuffer b(module, 0, host.size() * sizeof(float));
    auto up = [&](cuda::DeviceBuffer& d) {
      cuda::DeviceModule::check(
          module.api().copy(0, d.data(), host.data(), d.size(), TS_COPY_HOST_TO_DEVICE, stream),
          "copy");
    };
    auto down = [&](cuda::DeviceBuffer& d) {
      std::vector<float> out(host.size());
      cuda::DeviceModule::check(
          module.api().copy(0, out.data(), d.data(), d.size(), TS_COPY_DEVICE_TO_HOST, stream),
          "copy");
      cuda::DeviceModule::check(module.api().stream_synchronize(0, stream), "sync");
      return out;
    };
    up(a);
    comm.all_reduce_sum(static_cast<float*>(a.data()), host.size());
    EXPECT_EQ(down(a), host);
    comm.all_gather(static_cast<const float*>(a.data()), host.size(),
                    static_cast<float*>(b.data()));
    EXPECT_EQ(down(b), host);
    comm.broadcast(a.data(), a.size(), 0);
    EXPECT_EQ(down(a), host);
    comm.barrier();
  }
  module.api().stream_destroy(0, stream);
}

}  // namespace
}  // namespace tessera
