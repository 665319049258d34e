// upload_model_weights: a checkpoint placed on the emulated CUDA device in its stored formats.
// Every tensor's device bytes equal its stored bytes (FP8 with its block scales, FP4 with its
// group scales, BF16 and F32 as they are), the device holds exactly the stored bytes (no
// expansion), and a checkpoint that does not match its config is refused with the CPU loader's
// message before anything is placed.
#include "model/device_weights.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "device/open_device.hpp"
#include "model/dsv4_tensor_names.hpp"
#include "util/check.hpp"
#include "weights/checkpoint.hpp"

namespace tessera::dsv4 {
namespace {

namespace fs = std::filesystem;
const fs::path kParity = fs::path(TESSERA_SOURCE_DIR) / "tests/data/parity";

std::vector<std::byte> download(device::Device& dev, const device::Stream& s,
                                const device::DeviceBuffer& b) {
  std::vector<std::byte> host(b.bytes());
  dev.copy(host.data(), b.data(), host.size(), device::CopyKind::kDeviceToHost, s);
  dev.synchronize(s);
  return host;
}

bool same_bytes(const std::vector<std::byte>& a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

void expect_stored_bytes(const fs::path& dir, bool expect_fp8, bool expect_fp4) {
  auto dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream s = dev->create_stream();
  const ModelConfig config = load_model_config(dir);
  const DeviceModelWeights placed = upload_model_weights(*dev, s, dir, config);
  const weights::Checkpoint ckpt = weights::Checkpoint::open(dir);
  const std::map<std::string, StoredTensor> catalog = build_tensor_catalog(ckpt);
  uint64_t stored = 0;
  int fp8 = 0, fp4 = 0;
  for (const auto& [name, t] : placed.tensors) {
    const auto it = catalog.find(name);
    ASSERT_NE(it, catalog.end()) << name;
    const StoredTensor& w = it->second;
    if (t.dtype == weights::DType::I32 && w.dtype == weights::DType::I64) {  // the token table
      EXPECT_EQ(t.data.bytes() * 2, w.bytes.size()) << name;
    } else {
      EXPECT_EQ(t.dtype, w.dtype) << name << " changed format on the device";
      EXPECT_EQ(t.shape, w.shape) << name;
      EXPECT_TRUE(same_bytes(download(*dev, s, t.data), w.bytes)) << name;
      stored += w.bytes.size();
    }
    if (t.scale.data() != nullptr) {
      const std::string scale_name = name.substr(0, name.rfind(".weight")) + ".scale";
      const auto sc = catalog.find(scale_name);
      ASSERT_NE(sc, catalog.end()) << scale_name;
      EXPECT_EQ(t.scale_dtype, sc->second.dtype) << scale_name;
      EXPECT_TRUE(same_bytes(download(*dev, s, t.scale), sc->second.bytes)) << scale_name;
      stored += sc->second.bytes.size();
    }
    fp8 += t.dtype == weights::DType::F8_E4M3;
    fp4 += t.dtype == weights::DType::I8 || t.dtype == weights::DType::F4;
  }
  EXPECT_EQ(fp8 > 0, expect_fp8) << fp8 << " FP8 tensors";
  EXPECT_EQ(fp4 > 0, expect_fp4) << fp4 << " FP4 tensors";
  uint64_t table_bytes = 0;
  for (const auto& [name, t] : placed.tensors)
    if (t.dtype == weights::DType::I32) table_bytes += t.data.bytes();
  EXPECT_EQ(placed.bytes, stored + table_bytes) << "device bytes beyond the stored formats";
}

TEST(DeviceWeights, Fp8CheckpointKeepsItsFormats) {
  expect_stored_bytes(kParity / "tiny-fp8", true, true);
}

TEST(DeviceWeights, Fp32CheckpointKeepsItsFormats) {
  expect_stored_bytes(kParity / "tiny-a", false, false);
}

TEST(DeviceWeights, MismatchedCheckpointIsRefusedBeforePlacing) {
  auto dev = device::open_device({"cuda", 0, "emulated"});
  const device::Stream s = dev->create_stream();
  ModelConfig config = load_model_config(kParity / "tiny-a");
  config.q_lora_rank *= 2;
  try {
    (void)upload_model_weights(*dev, s, kParity / "tiny-a", config);
    FAIL() << "a checkpoint of another q_lora_rank was placed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("does not match its config"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor 'layers.0.attn.wq_a.weight'"), std::string::npos) << what;
    EXPECT_NE(what.find("[q_lora_rank, hidden_size]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tessera::dsv4
