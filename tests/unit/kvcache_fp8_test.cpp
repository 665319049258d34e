// Tests of the "fp8" kv-cache plugin (plugins/kvcache_fp8) through its real .so:
// - bitwise agreement of store() and load() with the independent numpy implementation
//   (tools/fixtures/fp8/, fixtures in tests/data/fp8) on random and adversarial rows;
// - decoding of every e4m3 code against the core's checkpoint decoder;
// - scales come from the data (per entry and group), never a constant;
// - round-trip error bounds and idempotence;
// - NaN / inf rejected with the row and channel, the pool left untouched; bad arguments refused.
// The format-independent contract is in kv_conformance_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kv_plugin_harness.hpp"
#include "weights/numeric_formats.hpp"
#include "weights/safetensors.hpp"

namespace tessera {
namespace {

using kv_test::KvPlugin;
using kv_test::message;

KvPlugin& fp8() {
  static KvPlugin plugin("fp8");
  return plugin;
}

std::vector<float> random_rows(int64_t n, int64_t dim, uint32_t seed, double log10_min = -3,
                               double log10_max = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<double> magnitude(log10_min, log10_max);
  std::vector<float> rows(static_cast<size_t>(n * dim));
  for (int64_t r = 0; r < n; ++r) {
    const auto scale = static_cast<float>(std::pow(10.0, magnitude(rng)));
    for (int64_t c = 0; c < dim; ++c) rows[r * dim + c] = normal(rng) * scale;
  }
  return rows;
}

std::vector<int64_t> iota_slots(int64_t n, int64_t first = 0) {
  std::vector<int64_t> slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) slots[i] = first + i;
  return slots;
}

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// ------------------------------------------------------------------ layout
TEST(Fp8Layout, DeepSeekV4FlashSizes) {
  const ts_kv_layout main = fp8().layout(TS_KV_MAIN, 512, 64, 64);
  EXPECT_EQ(main.bytes_per_entry, 584u);  // 448 fp8 + 64 x 2 bf16 + 7 ue8m0 + 1 pad
  EXPECT_EQ(main.page_bytes, 37440u);     // 64 x 584 = 37376 rounded up to 65 x 576
  EXPECT_EQ(main.payload_offset, 0u);
  EXPECT_EQ(main.payload_stride, 576u);
  EXPECT_EQ(main.rope_offset, 448u);
  EXPECT_EQ(main.rope_stride, 576u);
  EXPECT_EQ(main.scale_offset, 64u * 576u);
  EXPECT_EQ(main.scale_stride, 8u);
  EXPECT_STREQ(main.payload_dtype, "fp8_e4m3");
  EXPECT_STREQ(main.rope_dtype, "bf16");
  EXPECT_STREQ(main.scale_dtype, "ue8m0");

  const ts_kv_layout index = fp8().layout(TS_KV_INDEXER, 128, 128, 64);
  EXPECT_EQ(index.bytes_per_entry, 132u);  // 128 fp8 + one fp32 scale
  EXPECT_EQ(index.page_bytes, 64u * 132u);
  EXPECT_EQ(index.payload_stride, 128u);
  EXPECT_EQ(index.scale_offset, 64u * 128u);
  EXPECT_EQ(index.scale_stride, 4u);
  EXPECT_EQ(index.rope_dim, 0);  // every channel of an indexer key is fp8
  EXPECT_STREQ(index.scale_dtype, "fp32");
}

TEST(Fp8Layout, TinyModelShapesHavePartialGroups) {
  // nope 24: one partial group -> 24 + 16 + 1 scale + 1 pad; page rounded to a multiple of 40.
  const ts_kv_layout a = fp8().layout(TS_KV_MAIN, 32, 8, 64);
  EXPECT_EQ(a.bytes_per_entry, 42u);
  EXPECT_EQ(a.page_bytes, 2720u);
  EXPECT_EQ(a.scale_stride, 2u);
  // nope 96: a full group and a partial one -> 96 + 64 + 2 + 1.
  const ts_kv_layout b = fp8().layout(TS_KV_MAIN, 128, 32, 64);
  EXPECT_EQ(b.bytes_per_entry, 163u);
  EXPECT_EQ(b.page_bytes, 10560u);
  EXPECT_EQ(fp8().layout(TS_KV_INDEXER, 16, 16, 64).bytes_per_entry, 20u);
}

// ------------------------------------------------------------------ numpy fixtures, bitwise
struct Fixture {
  std::string name;
  std::map<std::string, std::string> meta;
  std::vector<float> rows, decoded;
  std::vector<int64_t> slots;
  std::vector<uint8_t> pool;
  std::vector<std::string> labels;
};

std::filesystem::path fixture_dir() {
  return std::filesystem::path(TESSERA_SOURCE_DIR) / "tests/data/fp8";
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  if (std::filesystem::exists(fixture_dir()))
    for (const auto& e : std::filesystem::directory_iterator(fixture_dir()))
      if (e.path().extension() == ".safetensors") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

template <class T>
std::vector<T> tensor(const weights::SafetensorsFile& file, const char* name) {
  const weights::TensorInfo* info = file.find(name);
  if (info == nullptr) throw std::runtime_error(std::string("fixture lacks ") + name);
  const auto bytes = file.data(*info);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

Fixture read_fixture(const std::string& name) {
  const auto file = weights::SafetensorsFile::open(fixture_dir() / (name + ".safetensors"));
  Fixture f;
  f.name = name;
  f.meta = file.header().metadata;
  f.rows = tensor<float>(file, "rows");
  f.decoded = tensor<float>(file, "decoded");
  f.slots = tensor<int64_t>(file, "slots");
  f.pool = tensor<uint8_t>(file, "pool");
  f.labels = nlohmann::json::parse(f.meta.at("labels")).get<std::vector<std::string>>();
  return f;
}

// "page 2, entry 1, scale bytes, byte 3 (row 4: <label>)" for a pool offset.
std::string where(const Fixture& f, const ts_kv_layout& l, uint64_t offset) {
  const uint64_t page = offset / l.page_bytes, in_page = offset % l.page_bytes;
  std::string region;
  uint64_t entry = 0;
  if (in_page < l.scale_offset) {
    entry = in_page / l.payload_stride;
    region = "record byte " + std::to_string(in_page % l.payload_stride);
  } else if (in_page < l.scale_offset + l.entries_per_page * l.scale_stride) {
    entry = (in_page - l.scale_offset) / l.scale_stride;
    region = "scale byte " + std::to_string((in_page - l.scale_offset) % l.scale_stride);
  } else {
    return "page " + std::to_string(page) + ", tail padding byte " + std::to_string(in_page);
  }
  const auto slot = static_cast<int64_t>(page * l.entries_per_page + entry);
  std::string row = "a slot no row was stored to";
  for (size_t i = 0; i < f.slots.size(); ++i)
    if (f.slots[i] == slot) row = "row " + std::to_string(i) + ": " + f.labels.at(i);
  return "page " + std::to_string(page) + ", entry " + std::to_string(entry) + ", " + region +
         " (" + row + ")";
}

class Fp8Fixtures : public ::testing::TestWithParam<std::string> {};

TEST(Fp8FixtureSet, AllPresent) { EXPECT_GE(fixture_names().size(), 6u); }

TEST_P(Fp8Fixtures, StoreAndLoadMatchNumpyBitForBit) {
  const Fixture f = read_fixture(GetParam());
  const int32_t stream = f.meta.at("stream") == "main" ? TS_KV_MAIN : TS_KV_INDEXER;
  const ts_kv_layout l =
      fp8().layout(stream, std::stoi(f.meta.at("dim")), std::stoi(f.meta.at("rope_dim")),
                   std::stoi(f.meta.at("entries_per_page")));
  ASSERT_EQ(l.bytes_per_entry, std::stoull(f.meta.at("bytes_per_entry")));
  ASSERT_EQ(l.page_bytes, std::stoull(f.meta.at("page_bytes")));
  const auto n = static_cast<int64_t>(f.slots.size());
  ASSERT_EQ(f.rows.size(), static_cast<size_t>(n * l.dim));

  std::vector<uint8_t> pool(f.pool.size(), static_cast<uint8_t>(std::stoi(f.meta.at("pool_fill"))));
  const ts_status s = fp8().store(l, f.rows.data(), n, f.slots.data(), pool.data());
  ASSERT_EQ(s.code, TS_OK) << message(s);
  int64_t differing = 0;
  for (uint64_t i = 0; i < pool.size(); ++i)
    if (pool[i] != f.pool[i] && differing++ < 5)
      ADD_FAILURE() << f.name << ": byte " << i << " is 0x" << std::hex << int(pool[i])
                    << ", numpy has 0x" << int(f.pool[i]) << std::dec << " at " << where(f, l, i);
  EXPECT_EQ(differing, 0) << "bytes differing from the numpy implementation";

  std::vector<float> decoded(f.rows.size());
  const ts_status d = fp8().load(l, f.pool.data(), f.slots.data(), n, decoded.data());
  ASSERT_EQ(d.code, TS_OK) << message(d);
  int64_t wrong = 0;
  for (size_t i = 0; i < decoded.size(); ++i)
    if (bits_of(decoded[i]) != bits_of(f.decoded[i]) && wrong++ < 5)
      ADD_FAILURE() << f.name << ": row " << i / l.dim << " (" << f.labels.at(i / l.dim)
                    << ") channel " << i % l.dim << " decodes to " << decoded[i] << ", numpy has "
                    << f.decoded[i];
  EXPECT_EQ(wrong, 0) << "decoded values differing from numpy";
}

INSTANTIATE_TEST_SUITE_P(Numpy, Fp8Fixtures, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Fp8Fixtures);

// ------------------------------------------------------------------ decoding every code
TEST(Fp8Decode, EveryE4m3CodeMatchesTheCheckpointDecoder) {
  const ts_kv_layout l = fp8().layout(TS_KV_MAIN, 256, 0, 1);  // 4 groups, one entry
  for (const int exponent : {0, 5, -13}) {
    std::vector<uint8_t> page(l.page_bytes, 0);
    for (int code = 0; code < 256; ++code) page[code] = static_cast<uint8_t>(code);
    for (int g = 0; g < 4; ++g) page[l.scale_offset + g] = static_cast<uint8_t>(127 + exponent);
    std::vector<float> row(256);
    const int64_t slot = 0;
    ASSERT_EQ(fp8().load(l, page.data(), &slot, 1, row.data()).code, TS_OK);
    for (int code = 0; code < 256; ++code) {
      const float want = weights::fp8_e4m3_to_f32(static_cast<uint8_t>(code)) *
                         weights::ue8m0_to_f32(static_cast<uint8_t>(127 + exponent));
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(row[code])) << "code " << code;
      else
        EXPECT_EQ(bits_of(row[code]), bits_of(want)) << "code " << code << " scale 2^" << exponent;
    }
  }
}

// ------------------------------------------------------------------ scales come from the data
// The scale exponent by the definition, without logarithms: the smallest k >= -13 with
// 448 * 2^k >= amax (exact in double).
int expected_exponent(double amax) {
  int k = -13;
  while (std::ldexp(448.0, k) < amax) ++k;
  return k;
}

TEST(Fp8Scales, EveryGroupScaleIsTheDataDefinedPowerOfTwo) {
  const int64_t n = 300, dim = 512, nope = 448;
  // Each group gets its own magnitude, from 1e-9 to 1e9: scales must follow.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> magnitude(-9, 9);
  std::vector<float> rows = random_rows(n, dim, 11, 0, 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < 7; ++g) {
      const double m = std::pow(10.0, magnitude(rng));
      for (int64_t c = g * 64; c < g * 64 + 64; ++c) rows[r * dim + c] *= static_cast<float>(m);
    }
  const ts_kv_layout l = fp8().layout(TS_KV_MAIN, dim, 64, 16);
  std::vector<uint8_t> pool(l.page_bytes * ((n + 15) / 16), 0);
  const auto slots = iota_slots(n);
  ASSERT_EQ(fp8().store(l, rows.data(), n, slots.data(), pool.data()).code, TS_OK);
  std::set<int> distinct;
  int unit_scales = 0;
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* scales =
        pool.data() + (r / 16) * l.page_bytes + l.scale_offset + (r % 16) * l.scale_stride;
    for (int64_t g = 0; g < 7; ++g) {
      double amax = 0;
      for (int64_t c = g * 64; c < std::min<int64_t>(g * 64 + 64, nope); ++c)
        amax = std::max(amax, std::fabs(double(rows[r * dim + c])));
      const int k = expected_exponent(amax);
      ASSERT_EQ(int(scales[g]) - 127, k) << "row " << r << " group " << g << " amax " << amax;
      distinct.insert(k);
      if (k == 0) {
        ++unit_scales;
        EXPECT_TRUE(amax > 224 && amax <= 448) << "a 1.0 scale for amax " << amax;
      }
    }
    EXPECT_EQ(scales[7], 0) << "pad byte of row " << r;
  }
  // amax from ~1e-9 to ~1e10: exponents from the floor -13 up to ~+24.
  EXPECT_GT(distinct.size(), 30u) << "scales barely vary: are they computed from the data?";
  std::printf("%zu distinct group scales over %lld groups, %d of them 1.0\n", distinct.size(),
              static_cast<long long>(n * 7), unit_scales);
}

TEST(Fp8Scales, ScalingTheDataShiftsTheScaleAndKeepsTheCodes) {
  const int64_t dim = 512;
  const std::vector<float> base = random_rows(1, dim, 3, 0, 0);
  const ts_kv_layout l = fp8().layout(TS_KV_MAIN, dim, 64, 1);
  std::vector<uint8_t> reference(l.page_bytes, 0);
  const int64_t slot = 0;
  ASSERT_EQ(fp8().store(l, base.data(), 1, &slot, reference.data()).code, TS_OK);
  for (int j = -6; j <= 20; j += 2) {
    std::vector<float> scaled(base);
    for (float& v : scaled) v = std::ldexp(v, j);
    std::vector<uint8_t> page(l.page_bytes, 0);
    ASSERT_EQ(fp8().store(l, scaled.data(), 1, &slot, page.data()).code, TS_OK);
    EXPECT_EQ(0, std::memcmp(page.data(), reference.data(), 448)) << "fp8 codes at 2^" << j;
    for (int g = 0; g < 7; ++g)
      EXPECT_EQ(int(page[l.scale_offset + g]), int(reference[l.scale_offset + g]) + j)
          << "group " << g << " scaled by 2^" << j;
  }
}

TEST(Fp8Scales, IndexerScaleIsTheKeysAmaxOver448) {
  const int64_t dim = 128, n = 40;
  std::vector<float> rows = random_rows(n, dim, 5, -6, 6);
  rows[3 * dim + 9] = 448.0f;  // the only key whose scale may be exactly 1.0
  for (int64_t c = 0; c < dim; ++c)
    rows[3 * dim + c] = std::clamp(rows[3 * dim + c], -448.f, 448.f);
  const ts_kv_layout l = fp8().layout(TS_KV_INDEXER, dim, dim, 64);
  std::vector<uint8_t> pool(l.page_bytes, 0);
  const auto slots = iota_slots(n);
  ASSERT_EQ(fp8().store(l, rows.data(), n, slots.data(), pool.data()).code, TS_OK);
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < dim; ++c) amax = std::max(amax, std::fabs(rows[r * dim + c]));
    float scale;
    std::memcpy(&scale, pool.data() + l.scale_offset + r * 4, 4);
    EXPECT_EQ(scale, std::max(amax, 1e-4f) / 448.0f) << "key " << r;
    if (r != 3) EXPECT_NE(scale, 1.0f) << "key " << r;
  }
  float unit;
  std::memcpy(&unit, pool.data() + l.scale_offset + 3 * 4, 4);
  EXPECT_EQ(unit, 1.0f);
}

// ------------------------------------------------------------------ round trip
TEST(Fp8RoundTrip, MainErrorWithinHalfAnE4m3StepOfItsGroupScale) {
  const int64_t n = 500, dim = 512, nope = 448;
  const std::vector<float> rows = random_rows(n, dim, 21, -8, 8);
  const ts_kv_layout l = fp8().layout(TS_KV_MAIN, dim, 64, 64);
  std::vector<uint8_t> pool(l.page_bytes * 8, 0);
  const auto slots = iota_slots(n);
  ASSERT_EQ(fp8().store(l, rows.data(), n, slots.data(), pool.data()).code, TS_OK);
  std::vector<float> back(rows.size());
  ASSERT_EQ(fp8().load(l, pool.data(), slots.data(), n, back.data()).code, TS_OK);
  double worst_rel = 0;
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* scales =
        pool.data() + (r / 64) * l.page_bytes + l.scale_offset + (r % 64) * l.scale_stride;
    for (int64_t c = 0; c < dim; ++c) {
      const double x = rows[r * dim + c], y = back[r * dim + c];
      if (c < nope) {
        // RNE to e4m3: half a step, 2^-4 |x| for normals, 2^-10 x scale for denormals.
        const double scale = std::ldexp(1.0, int(scales[c / 64]) - 127);
        ASSERT_LE(std::fabs(x - y), std::ldexp(std::fabs(x), -4) + std::ldexp(scale, -10))
            << "row " << r << " channel " << c;
        if (std::fabs(x) > std::ldexp(scale, -6))
          worst_rel = std::max(worst_rel, std::fabs(x - y) / std::fabs(x));
      } else {
        // bf16 keeps 8 significant bits: RNE is within 2^-8 relative.
        ASSERT_LE(std::fabs(x - y), std::ldexp(std::fabs(x), -8)) << "bf16 rope channel " << c;
      }
    }
  }
  EXPECT_LE(worst_rel, 0.0625);
  EXPECT_GT(worst_rel, 0.03) << "suspiciously exact: is the payload really fp8?";
}

TEST(Fp8RoundTrip, DecodedMainRowsReencodeToTheSameValues) {
  const int64_t n = 200, dim = 512;
  const std::vector<float> rows = random_rows(n, dim, 9, -10, 10);
  const ts_kv_layout l = fp8().layout(TS_KV_MAIN, dim, 64, 64);
  std::vector<uint8_t> pool(l.page_bytes * 4, 0);
  const auto slots = iota_slots(n);
  std::vector<float> once(rows.size()), twice(rows.size());
  ASSERT_EQ(fp8().store(l, rows.data(), n, slots.data(), pool.data()).code, TS_OK);
  ASSERT_EQ(fp8().load(l, pool.data(), slots.data(), n, once.data()).code, TS_OK);
  ASSERT_EQ(fp8().store(l, once.data(), n, slots.data(), pool.data()).code, TS_OK);
  ASSERT_EQ(fp8().load(l, pool.data(), slots.data(), n, twice.data()).code, TS_OK);
  for (size_t i = 0; i < once.size(); ++i)
    ASSERT_EQ(bits_of(once[i]), bits_of(twice[i])) << "value " << i;
}

// ------------------------------------------------------------------ non-finite input
TEST(Fp8NonFinite, NanOrInfIsRefusedWithRowAndChannelAndNothingIsWritten) {
  struct Case {
    int32_t stream;
    int32_t dim, rope;
    int64_t row, channel;
    float value;
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (const Case& c : {Case{TS_KV_MAIN, 512, 64, 5, 17, std::nanf("")},
                        Case{TS_KV_MAIN, 512, 64, 0, 500, inf},  // in the bf16 rope part
                        Case{TS_KV_MAIN, 32, 8, 6, 31, -inf},
                        Case{TS_KV_INDEXER, 128, 128, 3, 127, std::nanf("")}}) {
    const int64_t n = 7;
    std::vector<float> rows = random_rows(n, c.dim, 13);
    rows[c.row * c.dim + c.channel] = c.value;
    const ts_kv_layout l = fp8().layout(c.stream, c.dim, c.rope, 4);
    std::vector<uint8_t> pool(l.page_bytes * 3);
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<uint8_t>(i * 31 + 7);
    const std::vector<uint8_t> before = pool;
    const auto slots = iota_slots(n, 1);
    const ts_status s = fp8().store(l, rows.data(), n, slots.data(), pool.data());
    EXPECT_EQ(s.code, TS_ERR_NUMERIC);
    const std::string m = message(s);
    EXPECT_NE(m.find("row " + std::to_string(c.row)), std::string::npos) << m;
    EXPECT_NE(m.find("channel " + std::to_string(c.channel)), std::string::npos) << m;
    EXPECT_TRUE(pool == before) << "the pool changed although store failed: " << m;
  }
}

// ------------------------------------------------------------------ bad arguments
TEST(Fp8Arguments, RefusedBeforeAnythingIsWritten) {
  const ts_kv_layout good = fp8().layout(TS_KV_MAIN, 512, 64, 4);
  std::vector<float> rows = random_rows(2, 512, 1);
  std::vector<uint8_t> pool(good.page_bytes * 2, 0x5A);
  const std::vector<uint8_t> before = pool;
  const int64_t slots[] = {0, 5};
  auto expect = [&](ts_status s, int32_t code, const char* what) {
    EXPECT_EQ(s.code, code) << what << ": " << message(s);
    EXPECT_TRUE(pool == before) << what;
  };
  ts_kv_layout other = good;
  other.page_bytes += 576;  // a layout this plugin did not describe
  expect(fp8().store(other, rows.data(), 2, slots, pool.data()), TS_ERR_INVALID_ARGUMENT,
         "foreign layout");
  ts_kv_layout bf16_like = good;
  bf16_like.bytes_per_entry = 1024;
  expect(fp8().store(bf16_like, rows.data(), 2, slots, pool.data()), TS_ERR_INVALID_ARGUMENT,
         "bf16-sized layout");
  expect(fp8().store(good, rows.data(), 2, slots, pool.data(), kv_test::kCuda), TS_ERR_UNSUPPORTED,
         "cuda device");
  const int64_t negative[] = {0, -1};
  expect(fp8().store(good, rows.data(), 2, negative, pool.data()), TS_ERR_INVALID_ARGUMENT,
         "negative slot");
  expect(fp8().store(good, rows.data(), -1, slots, pool.data()), TS_ERR_INVALID_ARGUMENT,
         "negative count");
  expect(fp8().store(good, nullptr, 2, slots, pool.data()), TS_ERR_INVALID_ARGUMENT, "null rows");
  expect(fp8().store(good, rows.data(), 2, nullptr, pool.data()), TS_ERR_INVALID_ARGUMENT,
         "null slots");
  EXPECT_EQ(fp8().store(good, rows.data(), 2, slots, nullptr).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8()
                .table()
                .store(fp8().self(), nullptr, rows.data(), 2, slots, pool.data(), kv_test::kCpu)
                .code,
            TS_ERR_INVALID_ARGUMENT);
  std::vector<float> out(1024);
  EXPECT_EQ(fp8().load(other, pool.data(), slots, 2, out.data()).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8().load(good, pool.data(), negative, 2, out.data()).code, TS_ERR_INVALID_ARGUMENT);

  ts_kv_layout l{};
  EXPECT_EQ(fp8().describe(TS_KV_MAIN, 0, 0, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8().describe(TS_KV_MAIN, 64, 65, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8().describe(TS_KV_MAIN, 512, 64, 0, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8().describe(7, 512, 64, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fp8().describe(TS_KV_MAIN, 512, 64, 64, nullptr).code, TS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera
