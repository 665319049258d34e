// A kv format's store on a device does not wait for the stream (ts_kv_cache_table.store_async,
// ABI 1.4): a row holding a non-finite value is left unwritten and its index comes back with the
// step's one copy to the host; the device forward then fails the step, naming the layer, the
// store and the token, before anything of the step is kept (model/device_model.cpp,
// check_kv_stores). The shipped model on the emulated device, for both in-tree formats.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "device_engine.hpp"
#include "util/check.hpp"

namespace tessera {
namespace {

class DeviceKvStore : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceKvStore, ANonFiniteRowFailsTheStepAndNothingOfItIsKept) {
  RuntimeOptions options =
      testing::parity_options(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/tiny-dsv4", "{}");
  options.kv_plugin = GetParam();
  DeviceEngine e("emulated", options);
  ASSERT_TRUE(e.kv.format->stores_without_waiting());
  // Token 7's embedding row becomes NaN: every kv row computed from it is non-finite.
  constexpr int32_t kPoisoned = 7;
  const int64_t D = e.config.hidden_size;
  const size_t width = e.view.embed.bf16 ? 2 : 4;
  const std::vector<uint8_t> nan_row = [&] {
    std::vector<uint8_t> row(static_cast<size_t>(D) * width);
    const uint16_t nan16 = 0x7FC0;
    const uint32_t nan32 = 0x7FC00000u;
    for (int64_t c = 0; c < D; ++c) {
      std::memcpy(row.data() + c * width, width == 2 ? static_cast<const void*>(&nan16) : &nan32,
                  width);
    }
    return row;
  }();
  auto* table = static_cast<uint8_t*>(const_cast<void*>(e.view.embed.data));
  e.device->copy(table + kPoisoned * D * width, nan_row.data(), nan_row.size(),
                 device::CopyKind::kHostToDevice, e.stream);
  e.device->synchronize(e.stream);

  auto kv = e.new_sequence();
  const std::vector<int32_t> good = {1, 2, 3}, poisoned = {4, kPoisoned};
  dsv4::ForwardBatch batch;
  batch.chunks.push_back({kv.get(), std::span<const int32_t>(good), false});
  (void)e.model->forward(batch);
  ASSERT_EQ(kv->length(), 3);
  batch.chunks[0].tokens = std::span<const int32_t>(poisoned);
  try {
    (void)e.model->forward(batch);
    FAIL() << "a NaN kv row was stored without an error";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("layer 0: the window kv rows given to the kv cache `" + GetParam() + "`"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("the token at position 4 of chunk 0"), std::string::npos) << what;
  }
  EXPECT_EQ(kv->length(), 3);  // the failed step kept nothing
}

INSTANTIATE_TEST_SUITE_P(Formats, DeviceKvStore, ::testing::Values("bf16", "fp8"));

}  // namespace
}  // namespace tessera
