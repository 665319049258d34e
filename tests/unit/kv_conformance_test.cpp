// Conformance suite of the kv-cache kind: the contract of ts_kv_cache_table (plugin_abi.h,
// docs/kvcache.md), run against EVERY kv-cache plugin found in TESSERA_PLUGIN_DIR, or in
// $TESSERA_KV_PLUGIN_DIR when set (a third party's format). It knows no format: it reads each
// layout, derives the byte regions of every entry from it and checks
//   - layout invariants: records don't overlap, fit in page_bytes, bytes_per_entry adds up,
//     the bytes_per_entry shown by `tessera plugins` is the one describe() gives;
//   - store/load round trip within the format's error bound (capabilities "round_trip_error",
//     or derived from the dtypes of an unscaled format);
//   - store writes only the regions of its own slots; overwriting a slot replaces it entirely;
//   - page boundaries (last entry of a page, first of the next);
//   - concurrent sequences (threads storing and loading interleaved slots of different pages, and
//     of the same pages) give the same bytes as one thread;
//   - bad arguments and non-finite input are refused, leaving the pool untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kv_plugin_harness.hpp"

namespace tessera {
namespace {

using kv_test::KvPlugin;
using kv_test::message;

struct Shape {
  int32_t stream, dim, rope_dim;
};
// DeepSeek-V4-Flash (512 / 64, indexer 128) and the tiny test models (32 / 8, 128 / 32, 16).
// The indexer is described with rope_dim = dim, as the runtime does (core/src/kv/kv_format.cpp).
const Shape kShapes[] = {{TS_KV_MAIN, 512, 64},
                         {TS_KV_MAIN, 32, 8},
                         {TS_KV_MAIN, 128, 32},
                         {TS_KV_INDEXER, 128, 128},
                         {TS_KV_INDEXER, 16, 16}};

std::string shape_name(const Shape& s, int32_t entries_per_page) {
  return std::string(s.stream == TS_KV_MAIN ? "main" : "indexer") + " dim " +
         std::to_string(s.dim) + " rope " + std::to_string(s.rope_dim) + " entries/page " +
         std::to_string(entries_per_page);
}

// ------------------------------------------------------------------ byte regions of a layout
int dtype_bits(const std::string& dtype) {
  static const std::map<std::string, int> bits = {{"fp32", 32},    {"bf16", 16},    {"fp16", 16},
                                                  {"fp8_e4m3", 8}, {"fp8_e5m2", 8}, {"int8", 8},
                                                  {"uint8", 8},    {"fp4_e2m1", 4}};
  const auto it = bits.find(dtype);
  return it == bits.end() ? -1 : it->second;
}

struct EntryBytes {
  uint64_t payload = 0, rope = 0, scale = 0;  // scale: bytes_per_entry - payload - rope (+pad)
};

// Fails the test (and returns nullopt) when the layout cannot be read.
std::optional<EntryBytes> entry_bytes(const ts_kv_layout& l) {
  const int64_t payload_values = l.dim - l.rope_dim;
  const int pb = dtype_bits(l.payload_dtype), rb = dtype_bits(l.rope_dtype);
  if ((payload_values > 0 && pb < 0) || (l.rope_dim > 0 && rb < 0)) {
    ADD_FAILURE() << "unknown dtype '" << l.payload_dtype << "' / '" << l.rope_dtype
                  << "': add it to dtype_bits() in kv_conformance_test.cpp";
    return std::nullopt;
  }
  EntryBytes b;
  b.payload = payload_values > 0 ? (static_cast<uint64_t>(payload_values) * pb + 7) / 8 : 0;
  b.rope = l.rope_dim > 0 ? (static_cast<uint64_t>(l.rope_dim) * rb + 7) / 8 : 0;
  if (l.bytes_per_entry < b.payload + b.rope) {
    ADD_FAILURE() << "bytes_per_entry " << l.bytes_per_entry << " < payload " << b.payload
                  << " + rope " << b.rope;
    return std::nullopt;
  }
  b.scale = l.bytes_per_entry - b.payload - b.rope;
  return b;
}

struct Region {
  uint64_t begin, end;  // within a page
  int64_t entry;
  const char* part;
};

std::vector<Region> entry_regions(const ts_kv_layout& l, const EntryBytes& b, int64_t entry) {
  std::vector<Region> r;
  const auto e = static_cast<uint64_t>(entry);
  if (b.payload)
    r.push_back({l.payload_offset + e * l.payload_stride,
                 l.payload_offset + e * l.payload_stride + b.payload, entry, "payload"});
  if (b.rope)
    r.push_back({l.rope_offset + e * l.rope_stride, l.rope_offset + e * l.rope_stride + b.rope,
                 entry, "rope"});
  if (b.scale)
    r.push_back({l.scale_offset + e * l.scale_stride, l.scale_offset + e * l.scale_stride + b.scale,
                 entry, "scale"});
  return r;
}

// ------------------------------------------------------------------ error bound of a format
struct Bound {
  double relative = 0, of_row_amax = 0, absolute = 0;
};

// Declared in capabilities {"round_trip_error": {"main"|"indexer": {...}}}, else derived from
// the dtypes of an unscaled format (round to nearest: half a unit in the last place).
std::optional<Bound> error_bound(const KvPlugin& p, const ts_kv_layout& l) {
  const auto& caps = p.loaded().capabilities;
  const char* stream = l.stream == TS_KV_MAIN ? "main" : "indexer";
  if (caps.contains("round_trip_error") && caps["round_trip_error"].contains(stream)) {
    const auto& j = caps["round_trip_error"][stream];
    return Bound{j.value("relative", 0.0), j.value("of_row_amax", 0.0), j.value("absolute", 0.0)};
  }
  if (l.scale_dtype[0] != '\0') {
    ADD_FAILURE() << p.name() << " quantizes with scales (" << l.scale_dtype
                  << ") but declares no capabilities.round_trip_error." << stream;
    return std::nullopt;
  }
  Bound b;
  for (const std::string dtype : {std::string(l.payload_dtype), std::string(l.rope_dtype)}) {
    if (dtype == "fp32" || dtype.empty()) continue;
    if (dtype == "bf16") {
      b.relative = std::max(b.relative, std::ldexp(1.0, -8));
      b.absolute = std::max(b.absolute, std::ldexp(1.0, -134));  // half the smallest denormal
    } else if (dtype == "fp16") {
      b.relative = std::max(b.relative, std::ldexp(1.0, -11));
      b.absolute = std::max(b.absolute, std::ldexp(1.0, -25));
    } else {
      ADD_FAILURE() << p.name() << ": cannot derive an error bound for dtype " << dtype
                    << "; declare capabilities.round_trip_error";
      return std::nullopt;
    }
  }
  return b;
}

// ------------------------------------------------------------------ data
// Latent-like rows: per-row magnitudes over 7 decades, some rows with groups of very different
// magnitudes, one row of zeros.
std::vector<float> test_rows(int64_t n, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<double> decade(-4, 3);
  std::vector<float> rows(static_cast<size_t>(n * dim));
  for (int64_t r = 0; r < n; ++r) {
    const bool mixed = r % 3 == 1;
    double m = std::pow(10.0, decade(rng));
    for (int64_t c = 0; c < dim; ++c) {
      if (mixed && c % 16 == 0) m = std::pow(10.0, decade(rng));
      rows[r * dim + c] = r == 2 ? 0.0f : normal(rng) * static_cast<float>(m);
    }
  }
  return rows;
}

class KvConformance : public ::testing::TestWithParam<std::string> {
 protected:
  KvPlugin& plugin() {
    if (!plugin_) plugin_.emplace(GetParam());
    return *plugin_;
  }
  std::optional<KvPlugin> plugin_;
};

TEST(KvConformancePlugins, FindsTheInTreeFormats) {
  const auto names = kv_test::kv_plugin_names();
  if (kv_test::plugin_dir_overridden()) {
    EXPECT_FALSE(names.empty()) << "no kv-cache plugin in $TESSERA_KV_PLUGIN_DIR";
    return;
  }
  for (const char* expected : {"bf16", "fp8"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end())
        << expected << " not found in " << TESSERA_PLUGIN_DIR;
}

// ------------------------------------------------------------------ layout invariants
TEST_P(KvConformance, LayoutsAreConsistentAndRecordsDoNotOverlap) {
  for (const Shape& s : kShapes)
    for (const int32_t per_page : {1, 3, 64}) {
      SCOPED_TRACE(shape_name(s, per_page));
      ts_kv_layout l{};
      const ts_status st = plugin().describe(s.stream, s.dim, s.rope_dim, per_page, &l);
      ASSERT_EQ(st.code, TS_OK) << message(st);
      EXPECT_GE(l.struct_size, sizeof(ts_kv_layout));
      EXPECT_EQ(l.stream, s.stream);
      EXPECT_EQ(l.dim, s.dim);
      EXPECT_EQ(l.entries_per_page, per_page);
      EXPECT_TRUE(l.rope_dim >= 0 && l.rope_dim <= l.dim) << l.rope_dim;
      EXPECT_GT(l.bytes_per_entry, 0u);
      EXPECT_GE(l.page_bytes, l.bytes_per_entry * per_page) << "entries do not fit in a page";
      const auto b = entry_bytes(l);
      ASSERT_TRUE(b);
      std::vector<Region> all;
      for (int64_t e = 0; e < per_page; ++e)
        for (const Region& r : entry_regions(l, *b, e)) all.push_back(r);
      std::sort(all.begin(), all.end(), [](auto& x, auto& y) { return x.begin < y.begin; });
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_LE(all[i].end, l.page_bytes)
            << "entry " << all[i].entry << " " << all[i].part << " ends past the page";
        if (i > 0)
          EXPECT_LE(all[i - 1].end, all[i].begin)
              << "entry " << all[i - 1].entry << " " << all[i - 1].part << " overlaps entry "
              << all[i].entry << " " << all[i].part;
      }
      ts_kv_layout again{};
      ASSERT_EQ(plugin().describe(s.stream, s.dim, s.rope_dim, per_page, &again).code, TS_OK);
      EXPECT_EQ(0, std::memcmp(&l, &again, sizeof l)) << "describe() is not deterministic";
    }
}

TEST_P(KvConformance, DeclaredBytesPerEntryIsWhatDescribeGives) {
  const auto& caps = plugin().loaded().capabilities;
  ASSERT_TRUE(caps.contains("devices")) << "capabilities must list devices";
  if (!caps.contains("bytes_per_entry")) GTEST_SKIP() << "no bytes_per_entry declared";
  const auto& declared = caps["bytes_per_entry"];
  if (declared.contains("main_512"))
    EXPECT_EQ(plugin().layout(TS_KV_MAIN, 512, 64, 64).bytes_per_entry,
              declared["main_512"].get<uint64_t>());
  if (declared.contains("indexer_128"))
    EXPECT_EQ(plugin().layout(TS_KV_INDEXER, 128, 128, 64).bytes_per_entry,
              declared["indexer_128"].get<uint64_t>());
}

// ------------------------------------------------------------------ round trip
TEST_P(KvConformance, RoundTripStaysWithinTheFormatsErrorBound) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(shape_name(s, 16));
    const ts_kv_layout l = plugin().layout(s.stream, s.dim, s.rope_dim, 16);
    const auto bound = error_bound(plugin(), l);
    ASSERT_TRUE(bound);
    const int64_t n = 90;
    const std::vector<float> rows = test_rows(n, s.dim, 100 + s.dim);
    std::vector<int64_t> slots(n);
    for (int64_t i = 0; i < n; ++i) slots[i] = (i * 37) % 112;  // scattered over 7 pages
    std::vector<uint8_t> pool(l.page_bytes * 7, 0);
    ASSERT_EQ(plugin().store(l, rows.data(), n, slots.data(), pool.data()).code, TS_OK);
    std::vector<float> back(rows.size());
    ASSERT_EQ(plugin().load(l, pool.data(), slots.data(), n, back.data()).code, TS_OK);
    double worst = 0;  // largest error / bound
    for (int64_t r = 0; r < n; ++r) {
      double amax = 0;
      for (int64_t c = 0; c < s.dim; ++c)
        amax = std::max(amax, std::fabs(double(rows[r * s.dim + c])));
      for (int64_t c = 0; c < s.dim; ++c) {
        const double x = rows[r * s.dim + c], y = back[r * s.dim + c];
        const double allowed =
            (bound->relative * std::fabs(x) + bound->of_row_amax * amax + bound->absolute) *
                (1 + 1e-6) +
            1e-45;
        ASSERT_TRUE(std::isfinite(y)) << "row " << r << " channel " << c;
        ASSERT_LE(std::fabs(x - y), allowed)
            << "row " << r << " channel " << c << ": " << x << " came back as " << y;
        if (allowed > 1e-40) worst = std::max(worst, std::fabs(x - y) / allowed);
      }
    }
    std::printf("[%s] %s: worst error = %.3f of the declared bound\n", GetParam().c_str(),
                shape_name(s, 16).c_str(), worst);
  }
}

TEST_P(KvConformance, StoreWritesOnlyItsSlotsAndOverwritesThemWhole) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(shape_name(s, 8));
    const ts_kv_layout l = plugin().layout(s.stream, s.dim, s.rope_dim, 8);
    const auto b = entry_bytes(l);
    ASSERT_TRUE(b);
    std::vector<uint8_t> pool(l.page_bytes * 3);
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<uint8_t>(i * 131 + 17);
    const std::vector<uint8_t> before = pool;
    const std::vector<int64_t> slots = {3, 8, 23};
    const std::vector<float> rows = test_rows(3, s.dim, 7);
    ASSERT_EQ(plugin().store(l, rows.data(), 3, slots.data(), pool.data()).code, TS_OK);
    std::vector<bool> owned(pool.size(), false);
    for (const int64_t slot : slots)
      for (const Region& r : entry_regions(l, *b, slot % 8))
        for (uint64_t i = r.begin; i < r.end; ++i) owned[(slot / 8) * l.page_bytes + i] = true;
    for (size_t i = 0; i < pool.size(); ++i)
      if (!owned[i]) ASSERT_EQ(pool[i], before[i]) << "byte " << i << " of no stored slot changed";

    // A ring buffer reuses slots: the second store must fully replace the first.
    const std::vector<float> second = test_rows(3, s.dim, 8);
    std::vector<uint8_t> fresh(pool.size(), 0);
    ASSERT_EQ(plugin().store(l, second.data(), 3, slots.data(), pool.data()).code, TS_OK);
    ASSERT_EQ(plugin().store(l, second.data(), 3, slots.data(), fresh.data()).code, TS_OK);
    for (size_t i = 0; i < pool.size(); ++i)
      if (owned[i]) ASSERT_EQ(pool[i], fresh[i]) << "byte " << i << " kept the old entry";
  }
}

TEST_P(KvConformance, PageBoundariesKeepNeighboursApart) {
  for (const Shape& s : kShapes)
    for (const int32_t per_page : {5, 64}) {
      SCOPED_TRACE(shape_name(s, per_page));
      const ts_kv_layout l = plugin().layout(s.stream, s.dim, s.rope_dim, per_page);
      // last of page 0, first of page 1, last of page 1, first of page 2, first of page 3
      const std::vector<int64_t> slots = {per_page - 1, per_page, 2 * per_page - 1, 2 * per_page,
                                          3 * per_page};
      const auto n = static_cast<int64_t>(slots.size());
      const std::vector<float> rows = test_rows(n, s.dim, 55);
      std::vector<uint8_t> together(l.page_bytes * 4, 0);
      ASSERT_EQ(plugin().store(l, rows.data(), n, slots.data(), together.data()).code, TS_OK);
      std::vector<float> batch(rows.size());
      ASSERT_EQ(plugin().load(l, together.data(), slots.data(), n, batch.data()).code, TS_OK);
      for (int64_t i = 0; i < n; ++i) {  // each alone in an empty pool decodes the same
        std::vector<uint8_t> alone(l.page_bytes * 4, 0);
        ASSERT_EQ(plugin().store(l, rows.data() + i * s.dim, 1, &slots[i], alone.data()).code,
                  TS_OK);
        std::vector<float> one(s.dim);
        ASSERT_EQ(plugin().load(l, alone.data(), &slots[i], 1, one.data()).code, TS_OK);
        ASSERT_EQ(0, std::memcmp(one.data(), batch.data() + i * s.dim, s.dim * sizeof(float)))
            << "slot " << slots[i] << " decodes differently next to its neighbours";
      }
    }
}

// ------------------------------------------------------------------ concurrency
// Threads own sequences: either whole pages (interleaved page numbers) or interleaved entries of
// shared pages. Each stores its rows one token at a time and in chunks, and loads them back,
// concurrently with the others. The pool must end up byte-identical to one thread doing it all.
TEST_P(KvConformance, ConcurrentSequencesGiveTheSameBytesAsOneThread) {
  constexpr int kThreads = 4, kPerPage = 16, kPagesPerThread = 3;
  for (const Shape& s : {kShapes[0], kShapes[3]})
    for (const bool share_pages : {false, true}) {
      SCOPED_TRACE(shape_name(s, kPerPage) + (share_pages ? ", shared pages" : ", own pages"));
      const ts_kv_layout l = plugin().layout(s.stream, s.dim, s.rope_dim, kPerPage);
      const int64_t per_thread = kPerPage * kPagesPerThread;
      std::vector<std::vector<int64_t>> slots(kThreads);
      std::vector<std::vector<float>> rows(kThreads);
      for (int t = 0; t < kThreads; ++t) {
        for (int64_t i = 0; i < per_thread; ++i) {
          const int64_t page = i / kPerPage, entry = i % kPerPage;
          slots[t].push_back(share_pages ? i * kThreads + t  // entries t, t+4, ... of all pages
                                         : (page * kThreads + t) * kPerPage + entry);
        }
        std::reverse(slots[t].begin() + per_thread / 2, slots[t].end());
        rows[t] = test_rows(per_thread, s.dim, 1000 + t);
      }
      const size_t pool_bytes = l.page_bytes * kThreads * kPagesPerThread;
      auto run = [&](int t, uint8_t* pool, std::string* error) {
        for (int64_t i = 0; i < per_thread; ++i) {
          const int64_t count = i < per_thread / 2 ? 1 : std::min<int64_t>(5, per_thread - i);
          const ts_status st =
              plugin().store(l, rows[t].data() + i * s.dim, count, &slots[t][i], pool);
          if (st.code != TS_OK) *error = message(st);
          std::vector<float> back(static_cast<size_t>(count * s.dim));
          if (plugin().load(l, pool, &slots[t][i], count, back.data()).code != TS_OK)
            *error = "load failed";
          i += count - 1;
        }
      };
      std::vector<uint8_t> reference(pool_bytes, 0xEE);
      std::string error;
      for (int t = 0; t < kThreads; ++t) run(t, reference.data(), &error);
      ASSERT_EQ(error, "");
      for (int round = 0; round < 3; ++round) {
        std::vector<uint8_t> shared(pool_bytes, 0xEE);
        std::vector<std::string> errors(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) threads.emplace_back(run, t, shared.data(), &errors[t]);
        for (auto& th : threads) th.join();
        for (const auto& e : errors) ASSERT_EQ(e, "");
        ASSERT_TRUE(shared == reference) << "round " << round << ": concurrent stores differ";
      }
    }
}

// ------------------------------------------------------------------ refusals
TEST_P(KvConformance, RejectsBadArgumentsAndNonFiniteInput) {
  ts_kv_layout l{};
  EXPECT_EQ(plugin().describe(TS_KV_MAIN, 0, 0, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plugin().describe(TS_KV_MAIN, 64, 65, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plugin().describe(TS_KV_MAIN, 64, -1, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plugin().describe(TS_KV_MAIN, 512, 64, 0, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plugin().describe(99, 512, 64, 64, &l).code, TS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(plugin().describe(TS_KV_MAIN, 512, 64, 64, nullptr).code, TS_ERR_INVALID_ARGUMENT);

  const bool cuda = plugin()
                        .loaded()
                        .capabilities.value("devices", nlohmann::json::array())
                        .dump()
                        .find("cuda") != std::string::npos;
  for (const Shape& s : {kShapes[0], kShapes[3]}) {
    SCOPED_TRACE(shape_name(s, 4));
    const ts_kv_layout good = plugin().layout(s.stream, s.dim, s.rope_dim, 4);
    std::vector<float> rows = test_rows(3, s.dim, 3);
    std::vector<uint8_t> pool(good.page_bytes * 2, 0x3C);
    const std::vector<uint8_t> before = pool;
    const int64_t slots[] = {0, 4, 7};
    const int64_t negative[] = {0, -4, 7};
    auto expect = [&](ts_status st, int32_t code, const char* what) {
      EXPECT_EQ(st.code, code) << what << ": " << message(st);
      if (code != TS_OK)
        EXPECT_TRUE(st.message != nullptr && *st.message) << what << ": no message";
      EXPECT_TRUE(pool == before) << what << ": the pool changed";
    };
    expect(plugin().table().store(plugin().self(), nullptr, rows.data(), 3, slots, pool.data(),
                                  kv_test::kCpu),
           TS_ERR_INVALID_ARGUMENT, "null layout");
    expect(plugin().store(good, rows.data(), 3, nullptr, pool.data()), TS_ERR_INVALID_ARGUMENT,
           "null slots");
    expect(plugin().store(good, rows.data(), 3, negative, pool.data()), TS_ERR_INVALID_ARGUMENT,
           "negative slot");
    if (!cuda)
      expect(plugin().store(good, rows.data(), 3, slots, pool.data(), kv_test::kCuda),
             TS_ERR_UNSUPPORTED, "a device the plugin does not list");
    for (const float bad : {std::nanf(""), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
      for (const int64_t channel : {int64_t{0}, int64_t{s.dim - 1}}) {
        std::vector<float> poisoned = rows;
        poisoned[2 * s.dim + channel] = bad;
        expect(plugin().store(good, poisoned.data(), 3, slots, pool.data()), TS_ERR_NUMERIC,
               "non-finite value in the last row");
        // The message names where: the row and the channel of the (first) bad value.
        const ts_status st = plugin().store(good, poisoned.data(), 3, slots, pool.data());
        const std::string message = st.message != nullptr ? st.message : "";
        EXPECT_NE(message.find("row 2"), std::string::npos) << message;
        EXPECT_NE(message.find("channel " + std::to_string(channel)), std::string::npos) << message;
      }
    }
    std::vector<float> out(rows.size());
    EXPECT_EQ(plugin()
                  .table()
                  .load(plugin().self(), nullptr, pool.data(), slots, 3, out.data(), kv_test::kCpu)
                  .code,
              TS_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(plugin().load(good, pool.data(), negative, 3, out.data()).code,
              TS_ERR_INVALID_ARGUMENT);
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, KvConformance, ::testing::ValuesIn(kv_test::kv_plugin_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KvConformance);

}  // namespace
}  // namespace tessera
