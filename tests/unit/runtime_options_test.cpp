// RuntimeOptions::from_config: what the runtime takes from a configuration file, and the settings
// it refuses with the file:line:col of the key (values the schema accepts but this build path
// cannot honour).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "config/config.hpp"
#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"
#include "runtime/runtime.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

const std::string kModel =
    (std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4").generic_string();

Config config_with(const std::string& model_keys, const std::string& rest = "") {
  return load_config_string("[model]\npath = \"" + kModel + "\"\n" + model_keys + rest, "x.toml");
}

// The message of the Error from_config throws, or "" when it accepts the file.
std::string refusal(const Config& c) {
  try {
    (void)RuntimeOptions::from_config(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeOptions, WeightStorageSelectsBf16OrFp32LinearWeights) {
  EXPECT_TRUE(RuntimeOptions::from_config(config_with("")).linear_weights_in_bf16);
  EXPECT_TRUE(RuntimeOptions::from_config(config_with("weight_storage = \"auto\"\n"))
                  .linear_weights_in_bf16);
  EXPECT_FALSE(RuntimeOptions::from_config(config_with("weight_storage = \"fp32\"\n"))
                   .linear_weights_in_bf16);
}

// model.dtype = "bf16" runs where the CPU has AVX512_BF16 and our GEMM runs (it multiplies the
// weights held in bf16); elsewhere, or with weight_storage = "fp32" (no bf16 weights to multiply),
// it is refused with the key's location.
TEST(RuntimeOptions, Bf16ActivationsNeedTheBf16KernelAndBf16Weights) {
  EXPECT_FALSE(RuntimeOptions::from_config(config_with("dtype = \"fp32\"\n")).bf16_activations);
  EXPECT_FALSE(RuntimeOptions::from_config(config_with("dtype = \"auto\"\n")).bf16_activations);
  const Config bf16 = config_with("max_context = 1024\ndtype = \"bf16\"\n");
  const auto expect_refused = [](const std::string& why, const std::string& reason) {
    EXPECT_NE(why.find("x.toml:4:1"), std::string::npos) << why;
    EXPECT_NE(why.find("model.dtype = \"bf16\""), std::string::npos) << why;
    EXPECT_NE(why.find(reason), std::string::npos) << why;
  };
  if (ops::gemm_nt_bf16_available() && ops::gemm_reads_bf16_weights()) {
    EXPECT_TRUE(RuntimeOptions::from_config(bf16).bf16_activations);
    expect_refused(refusal(config_with("max_context = 1024\ndtype = \"bf16\"\n"
                                       "weight_storage = \"fp32\"\n")),
                   "weight_storage = \"auto\"");
    ops::set_gemm_backend(ops::GemmBackend::kBlas);  // TESSERA_GEMM=blas
    expect_refused(refusal(bf16), "this one runs openblas");
    ops::set_gemm_backend(ops::GemmBackend::kAuto);
  } else {
    expect_refused(refusal(bf16), "needs a CPU with AVX512_BF16");
  }
}

// device = "cuda" runs the device forward with the module the file names, or the one
// TESSERA_CUDA_MODULE names (the same file on the emulator).
TEST(RuntimeOptions, CudaDeviceTakesItsModule) {
  const Config c = config_with("", "[executor]\ndevice = \"cuda\"\ncuda_module = \"emulated\"\n");
  const RuntimeOptions o = RuntimeOptions::from_config(c);
  EXPECT_EQ(o.device, "cuda");
  EXPECT_EQ(o.cuda_module, "emulated");
  EXPECT_EQ(RuntimeOptions::from_config(config_with("")).cuda_module, "native");  // the default
  ::setenv("TESSERA_CUDA_MODULE", "/opt/x/libtessera_cuda.so", 1);
  EXPECT_EQ(RuntimeOptions::from_config(c).cuda_module, "/opt/x/libtessera_cuda.so");
  ::unsetenv("TESSERA_CUDA_MODULE");
}

// tensor_parallel reaches the runtime (it places rank 0's share on a device); what the device
// forward cannot do is refused with the key's location.
TEST(RuntimeOptions, CudaDeviceTakesTensorParallelismAndRefusesBf16Activations) {
  const RuntimeOptions o = RuntimeOptions::from_config(
      config_with("", "[executor]\ndevice = \"cuda\"\ntensor_parallel = 2\n"));
  EXPECT_EQ(o.tensor_parallel, 2);
  EXPECT_EQ(RuntimeOptions::from_config(config_with("")).tensor_parallel, 1);  // the default
  const std::string why =
      refusal(config_with("dtype = \"bf16\"\n", "[executor]\ndevice = \"cuda\"\n"));
  EXPECT_NE(why.find("x.toml:3:1"), std::string::npos) << why;
  EXPECT_NE(why.find("model.dtype = \"bf16\""), std::string::npos) << why;
}

// moe_split = "ep" gives each device rank whole routed experts; the CPU ranks cut experts by
// tensor parallelism only, so there it is refused with the key's location.
// collective_dtype = "bf16" rounds the device ranks' all-reduces; the CPU ranks sum in fp32,
// so there it is refused with the key's location.
TEST(RuntimeOptions, Bf16CollectivesNeedACudaDevice) {
  EXPECT_FALSE(RuntimeOptions::from_config(config_with("")).bf16_collectives);  // fp32 by default
  const RuntimeOptions bf16 = RuntimeOptions::from_config(config_with(
      "", "[executor]\ndevice = \"cuda\"\ncollective_dtype = \"bf16\"\ntensor_parallel = 2\n"));
  EXPECT_TRUE(bf16.bf16_collectives);
  const std::string why =
      refusal(config_with("", "[executor]\ncollective_dtype = \"bf16\"\ntensor_parallel = 2\n"));
  EXPECT_NE(why.find("x.toml:4:1"), std::string::npos) << why;
  EXPECT_NE(why.find("collective_dtype = \"bf16\" is for the device forward"), std::string::npos)
      << why;
  // The device forward on the cpu backend takes it.
  EXPECT_TRUE(RuntimeOptions::from_config(
                  config_with("",
                              "[executor]\ncpu_forward = \"device\"\ncollective_dtype = "
                              "\"bf16\"\ntensor_parallel = 2\n"))
                  .bf16_collectives);
}

TEST(RuntimeOptions, ExpertParallelismNeedsACudaDevice) {
  EXPECT_FALSE(RuntimeOptions::from_config(config_with("")).expert_parallel);  // "tp" by default
  const RuntimeOptions ep = RuntimeOptions::from_config(
      config_with("", "[executor]\ndevice = \"cuda\"\nmoe_split = \"ep\"\ntensor_parallel = 2\n"));
  EXPECT_TRUE(ep.expert_parallel);
  const std::string why =
      refusal(config_with("", "[executor]\nmoe_split = \"ep\"\ntensor_parallel = 2\n"));
  EXPECT_NE(why.find("x.toml:4:1"), std::string::npos) << why;
  EXPECT_NE(why.find("moe_split = \"ep\" runs on the device forward"), std::string::npos) << why;
  EXPECT_TRUE(
      RuntimeOptions::from_config(config_with("",
                                              "[executor]\ncpu_forward = \"device\"\nmoe_split = "
                                              "\"ep\"\ntensor_parallel = 2\n"))
          .expert_parallel);
}

// cpu_forward = "device" runs the device forward on the cpu backend; "host" (the default) the host
// forward; with device = "cuda" it has no effect. The host forward's own options are refused
// with the key's location.
TEST(RuntimeOptions, CpuForwardChoosesTheForwardOfTheCpuDevice) {
  const RuntimeOptions host = RuntimeOptions::from_config(config_with(""));
  EXPECT_FALSE(host.cpu_device_forward);
  EXPECT_FALSE(host.device_forward());
  const RuntimeOptions dev =
      RuntimeOptions::from_config(config_with("", "[executor]\ncpu_forward = \"device\"\n"));
  EXPECT_TRUE(dev.cpu_device_forward);
  EXPECT_TRUE(dev.device_forward());
  EXPECT_EQ(dev.device, "cpu");
  const RuntimeOptions cuda = RuntimeOptions::from_config(
      config_with("", "[executor]\ndevice = \"cuda\"\ncpu_forward = \"device\"\n"));
  EXPECT_FALSE(cuda.cpu_device_forward);
  EXPECT_TRUE(cuda.device_forward());
  std::string why =
      refusal(config_with("dtype = \"bf16\"\n", "[executor]\ncpu_forward = \"device\"\n"));
  EXPECT_NE(why.find("x.toml:3:1"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu_forward = \"device\""), std::string::npos) << why;
  why = refusal(config_with("", "[executor]\ncpu_forward = \"device\"\nreduction_parts = 2\n"));
  EXPECT_NE(why.find("x.toml:5:1"), std::string::npos) << why;
  EXPECT_NE(why.find("reduction_parts = 2"), std::string::npos) << why;
}

}  // namespace
}  // namespace tessera
