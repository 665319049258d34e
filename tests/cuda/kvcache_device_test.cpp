// kvcache_{bf16,fp8}_{emulated,device}_test PLUGIN.so [PLUGIN.so]  (ctest adds the bf16 plugin
// as a second argument, unused here)
//
// A kv-cache plugin with a CUDA module ("bf16" or "fp8") on a CUDA device (the emulated build of
// its module, or the GPU's in the native build) against its own CPU path, through the plugin's
// C table:
//   - store: the same random rows stored by the CPU path into host pages and by the device path
//     into device pages give byte-identical pools (round-to-nearest-even ties, all-zero and tiny
//     scale groups, scattered slots over pages, more rows than one launch takes, the untouched
//     bytes kept), every storage option of the plugin, main and indexer shapes of Flash, of the
//     tiny model and one whose last scale group is partial;
//   - load: decoding those pages on the device gives the CPU path's rows bit for bit;
//   - store_async (ABI 1.4): rows with a NaN and an infinity beyond the first launch's 256 are
//     left unwritten, the others written as the CPU path writes them, the lowest bad row's index
//     in the device word; on the emulated device the call returns before the stream ran (no
//     wait);
//   - store_device_slots (ABI 1.6): the same with the slots in device memory, one row in 7 a
//     padding row (slot -1) that is neither written nor checked (one holds a NaN), in one launch;
//     on a CPU device the rows with a slot as the CPU store writes them; slots in host memory
//     refused on the CUDA device;
//   - refusals: a non-finite value (the CPU path's status and message, nothing written), rows in
//     host memory, and a plugin whose CUDA module is not installed (the message names the path
//     looked for).
// Exit status: 0 pass, 1 failure, 77 no CUDA device (native build only).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "runtime_device.hpp"

namespace {

using namespace tessera::cudatest;

constexpr int kSkip = 77;
constexpr ts_device kCpu{TS_DEVICE_CPU, 0, nullptr};

int g_failures = 0;

void expect(bool good, const std::string& what) {
  std::printf("  %-4s %s\n", good ? "ok" : "FAIL", what.c_str());
  g_failures += !good;
}

std::string message(const ts_status& s) { return s.message ? s.message : ""; }

class KvInstance {
 public:
  KvInstance(const LoadedPlugin& plugin, const char* options, ts_device device)
      : plugin_(plugin), host_(test_host_api()) {
    const ts_status s = plugin.descriptor().create(&host_, options, device, &instance_);
    if (s.code != TS_OK) throw std::runtime_error("create: " + message(s));
  }
  KvInstance(const KvInstance&) = delete;
  KvInstance& operator=(const KvInstance&) = delete;
  ~KvInstance() { plugin_.descriptor().destroy(instance_); }
  ts_instance* get() const { return instance_; }
  const ts_kv_cache_table& table() const { return plugin_.functions<ts_kv_cache_table>(); }
  ts_kv_layout describe(int32_t stream, int32_t dim, int32_t rope, int32_t per_page) const {
    ts_kv_layout l{};
    if (table().describe(instance_, stream, dim, rope, per_page, &l).code != TS_OK)
      throw std::runtime_error("describe failed");
    return l;
  }

 private:
  const LoadedPlugin& plugin_;
  ts_host_api host_;
  ts_instance* instance_ = nullptr;
};

struct Shape {
  const char* name;
  int32_t stream, dim, rope, per_page;
  int64_t rows;
};

// Latent-like values over 7 decades, values whose dropped 16 bits are exactly half way (0x8000:
// round-to-nearest-even must pick the even neighbour), runs of zeros (a scale group whose amax
// is 0) and of values near 1e-30 (the smallest scales), and negative zeros.
std::vector<float> random_rows(int64_t n, int32_t dim, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> decade(-4, 2);
  std::vector<float> rows(static_cast<size_t>(n * dim));
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = mantissa(rng) * std::pow(10.0f, static_cast<float>(decade(rng)));
    if (i / 50 % 13 == 4) rows[i] = 0.0f;
    if (i / 50 % 13 == 9) rows[i] *= 1e-30f;
    if (i % 101 == 17) rows[i] = -0.0f;
    if (i % 7 == 3) {
      uint32_t bits;
      std::memcpy(&bits, &rows[i], 4);
      bits = (bits & 0xFFFF0000u) | 0x8000u;
      std::memcpy(&rows[i], &bits, 4);
    }
  }
  return rows;
}

void check_shape(const LoadedPlugin& plugin, const char* options, const Shape& shape,
                 const TestStream& stream, std::mt19937_64& rng) {
  KvInstance kv(plugin, options, stream.device());
  const ts_kv_layout layout = kv.describe(shape.stream, shape.dim, shape.rope, shape.per_page);
  const int64_t n = shape.rows, capacity = n + n / 2 + 5;
  const int64_t pages = (capacity + shape.per_page - 1) / shape.per_page;
  std::vector<int64_t> order(static_cast<size_t>(capacity));
  for (int64_t i = 0; i < capacity; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const std::vector<int64_t> slots(order.begin(), order.begin() + n);
  std::vector<uint8_t> pool(static_cast<size_t>(pages * layout.page_bytes));
  for (uint8_t& b : pool) b = static_cast<uint8_t>(rng());
  const std::vector<float> rows = random_rows(n, shape.dim, rng);
  const std::string name = std::string(shape.name) + " (" + options + ", " + std::to_string(n) +
                           " rows, " + std::to_string(shape.per_page) + " per page)";

  std::vector<uint8_t> cpu_pool = pool;
  if (kv.table()
          .store(kv.get(), &layout, rows.data(), n, slots.data(), cpu_pool.data(), kCpu)
          .code != TS_OK)
    throw std::runtime_error("CPU store failed");
  DeviceVector<uint8_t> device_pool(pool, stream);
  DeviceVector<float> device_rows(rows, stream);
  ts_status s = kv.table().store(kv.get(), &layout, device_rows.get(), n, slots.data(),
                                 device_pool.get(), stream.device());
  expect(s.code == TS_OK && device_pool.download(stream) == cpu_pool,
         name + ": device store writes the CPU path's bytes " + message(s));

  std::vector<float> cpu_rows(rows.size()), none(rows.size(), std::nanf(""));
  if (kv.table()
          .load(kv.get(), &layout, cpu_pool.data(), slots.data(), n, cpu_rows.data(), kCpu)
          .code != TS_OK)
    throw std::runtime_error("CPU load failed");
  DeviceVector<float> loaded(none, stream);
  s = kv.table().load(kv.get(), &layout, device_pool.get(), slots.data(), n, loaded.get(),
                      stream.device());
  const std::vector<float> back = loaded.download(stream);
  expect(s.code == TS_OK && std::memcmp(back.data(), cpu_rows.data(), back.size() * 4) == 0,
         name + ": device load gives the CPU path's rows bit for bit " + message(s));
}

// store_async, or with device_slots store_device_slots (padding rows among the rows).
void check_store_async(const LoadedPlugin& plugin, const Shape& shape, const TestStream& stream,
                       std::mt19937_64& rng, bool device_slots = false) {
  KvInstance kv(plugin, "{}", stream.device());
  const ts_kv_cache_table& t = kv.table();
  const size_t entry = device_slots ? offsetof(ts_kv_cache_table, store_device_slots)
                                    : offsetof(ts_kv_cache_table, store_async);
  if (t.struct_size < entry + sizeof(void*) ||
      (device_slots ? t.store_device_slots == nullptr : t.store_async == nullptr)) {
    expect(false, std::string(shape.name) + ": the format has no " +
                      (device_slots ? "store_device_slots" : "store_async"));
    return;
  }
  const ts_kv_layout layout = kv.describe(shape.stream, shape.dim, shape.rope, shape.per_page);
  const int64_t n = shape.rows;
  const int64_t pages = (n + shape.per_page - 1) / shape.per_page;
  std::vector<int64_t> slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = n - 1 - i;
  std::vector<float> rows = random_rows(n, shape.dim, rng);
  const int64_t bad_a = n - 30, bad_b = n - 20;  // both in the second launch (n > 256)
  rows[static_cast<size_t>(bad_b * shape.dim + 1)] = std::numeric_limits<float>::quiet_NaN();
  rows[static_cast<size_t>(bad_a * shape.dim + shape.dim - 1)] =
      -std::numeric_limits<float>::infinity();
  if (device_slots) {  // padding rows: slot -1, one of them below bad_a holding a NaN
    for (int64_t i = 3; i < n; i += 7) {
      if (i != bad_a && i != bad_b) slots[static_cast<size_t>(i)] = -1;
    }
    rows[static_cast<size_t>(10 * shape.dim)] = std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<uint8_t> pool(static_cast<size_t>(pages * layout.page_bytes));
  for (uint8_t& b : pool) b = static_cast<uint8_t>(rng());
  // What the CPU path writes for the finite rows alone.
  std::vector<float> finite_rows;
  std::vector<int64_t> finite_slots;
  for (int64_t i = 0; i < n; ++i) {
    if (i == bad_a || i == bad_b || slots[static_cast<size_t>(i)] < 0) continue;
    finite_rows.insert(finite_rows.end(), rows.begin() + i * shape.dim,
                       rows.begin() + (i + 1) * shape.dim);
    finite_slots.push_back(slots[static_cast<size_t>(i)]);
  }
  std::vector<uint8_t> want = pool;
  if (t.store(kv.get(), &layout, finite_rows.data(), static_cast<int64_t>(finite_slots.size()),
              finite_slots.data(), want.data(), kCpu)
          .code != TS_OK)
    throw std::runtime_error("CPU store failed");
  DeviceVector<uint8_t> device_pool(pool, stream);
  DeviceVector<float> device_rows(rows, stream);
  DeviceVector<int64_t> first_bad(std::vector<int64_t>{n}, stream);
  DeviceVector<int64_t> slots_on_device(slots, stream);
  const ts_status s =
      device_slots
          ? t.store_device_slots(kv.get(), &layout, device_rows.get(), n, slots_on_device.get(),
                                 device_pool.get(), stream.device(), first_bad.get())
          : t.store_async(kv.get(), &layout, device_rows.get(), n, slots.data(), device_pool.get(),
                          stream.device(), first_bad.get());
  const std::string name =
      std::string(shape.name) + (device_slots ? " store_device_slots" : " store_async");
#ifdef TESSERA_DEVICE_EMULATION  // device memory is the host's: untouched until the stream runs
  expect(std::memcmp(device_pool.get(), pool.data(), pool.size()) == 0,
         name + ": returns before the stream ran (no wait)");
#endif
  expect(s.code == TS_OK && device_pool.download(stream) == want,
         name + ": the finite rows as the CPU path writes them, the bad rows' slots untouched " +
             message(s));
  const std::vector<int64_t> got = first_bad.download(stream);
  expect(got.size() == 1 && got[0] == bad_a, name + ": the lowest non-finite row's index (" +
                                                 std::to_string(got.at(0)) + ", want " +
                                                 std::to_string(bad_a) + ")");
  if (!device_slots) return;

  // The slots in host memory: refused on the CUDA device, nothing written.
  const ts_status host_slots =
      t.store_device_slots(kv.get(), &layout, device_rows.get(), n, slots.data(), device_pool.get(),
                           stream.device(), first_bad.get());
  expect(host_slots.code == TS_ERR_INVALID_ARGUMENT &&
             message(host_slots).find("slots is host memory") != std::string::npos,
         name + ": slots in host memory are refused (" + message(host_slots) + ")");
  // A CPU device: the finite rows with a slot as store writes them (a non-finite one throws).
  std::vector<float> finite = rows;
  for (int64_t i = 0; i < n; ++i) {
    if (i == bad_a || i == bad_b) slots[static_cast<size_t>(i)] = -1;  // padding: unchecked
  }
  std::vector<uint8_t> cpu_pool = pool;
  const ts_status cpu = t.store_device_slots(kv.get(), &layout, finite.data(), n, slots.data(),
                                             cpu_pool.data(), kCpu, nullptr);
  expect(cpu.code == TS_OK && cpu_pool == want,
         name + " on the CPU: the rows with a slot as store writes them " + message(cpu));
}

void check_refusals(const LoadedPlugin& plugin, const std::string& plugin_path,
                    const TestStream& stream) {
  KvInstance kv(plugin, "{}", stream.device());
  const ts_kv_layout layout = kv.describe(TS_KV_MAIN, 64, 16, 4);
  std::mt19937_64 rng(7);
  std::vector<float> rows = random_rows(6, 64, rng);
  rows[5 * 64 + 3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int64_t> slots = {0, 3, 4, 9, 10, 2};
  std::vector<uint8_t> pool(3 * layout.page_bytes, 0x5A);
  std::vector<uint8_t> cpu_pool = pool;
  const ts_status cpu =
      kv.table().store(kv.get(), &layout, rows.data(), 6, slots.data(), cpu_pool.data(), kCpu);
  const std::string cpu_message = message(cpu);  // valid until the next call only
  DeviceVector<uint8_t> device_pool(pool, stream);
  DeviceVector<float> device_rows(rows, stream);
  const ts_status dev = kv.table().store(kv.get(), &layout, device_rows.get(), 6, slots.data(),
                                         device_pool.get(), stream.device());
  expect(cpu.code == TS_ERR_NUMERIC && dev.code == TS_ERR_NUMERIC && message(dev) == cpu_message &&
             device_pool.download(stream) == pool,
         "NaN in row 5: TS_ERR_NUMERIC, the CPU path's message, nothing written (" + message(dev) +
             ")");

  const ts_status host = kv.table().store(kv.get(), &layout, rows.data(), 6, slots.data(),
                                          device_pool.get(), stream.device());
  expect(host.code == TS_ERR_INVALID_ARGUMENT &&
             message(host).find("host memory") != std::string::npos,
         "rows in host memory: " + message(host));

  // The plugin alone, without its cuda/ folder: create() on a CUDA device names what it sought.
  const std::filesystem::path lonely = std::filesystem::temp_directory_path() /
                                       ("kvcache_device_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(lonely);
  const std::filesystem::path copy = lonely / std::filesystem::path(plugin_path).filename();
  std::filesystem::copy_file(plugin_path, copy, std::filesystem::copy_options::overwrite_existing);
  {
    LoadedPlugin alone(copy.string(), TS_KIND_KV_CACHE);
    ts_host_api host_api = test_host_api();
    ts_instance* instance = nullptr;
    const ts_status s = alone.descriptor().create(&host_api, "{}", stream.device(), &instance);
    const std::string wanted = (lonely / "cuda").string();
    expect(s.code == TS_ERR_UNSUPPORTED &&
               message(s).find("looked for " + wanted) != std::string::npos,
           "no CUDA module beside the plugin: " + message(s));
    if (instance != nullptr) alone.descriptor().destroy(instance);
    const ts_status support = alone.descriptor().check_support("{}", stream.device());
    expect(support.code == TS_ERR_UNSUPPORTED && message(support).find(wanted) != std::string::npos,
           "check_support without the CUDA module: " + message(support));
  }
  std::filesystem::remove_all(lonely);
}

int main_impl(int argc, char** argv) {
  if (argc < 2) throw std::runtime_error("usage: kvcache_device_test PLUGIN.so");
  LoadedPlugin plugin(argv[1], TS_KIND_KV_CACHE);
  if (const std::string why = device_unavailable(); !why.empty()) {
    std::printf("no CUDA device: skipped (%s)\n", why.c_str());
    return kSkip;
  }
  const ts_status support =
      plugin.descriptor().check_support("{}", ts_device{TS_DEVICE_CUDA, 0, nullptr});
  expect(support.code == TS_OK, "check_support on CUDA device 0 " + message(support));
  TestStream stream;
  std::mt19937_64 rng(20260401);
  const Shape shapes[] = {{"flash main 512/64", TS_KV_MAIN, 512, 64, 64, 70},
                          {"flash indexer 128", TS_KV_INDEXER, 128, 128, 64, 600},
                          {"tiny main 64/16", TS_KV_MAIN, 64, 16, 5, 41},
                          {"tiny indexer 32", TS_KV_INDEXER, 32, 32, 3, 17},
                          {"partial group 150/10", TS_KV_MAIN, 150, 10, 7, 300}};
  const std::string format = plugin.descriptor().name;
  std::vector<const char*> options = {"{}"};
  if (format == "bf16") options.push_back(R"({"storage":"fp32"})");
  for (const char* option : options)
    for (const Shape& shape : shapes) check_shape(plugin, option, shape, stream, rng);
  check_store_async(plugin, shapes[1], stream, rng);  // a warp per row (indexer) in fp8
  check_store_async(plugin, shapes[4], stream, rng);  // a block per row
  check_store_async(plugin, shapes[1], stream, rng, true);
  check_store_async(plugin, shapes[4], stream, rng, true);
  check_refusals(plugin, argv[1], stream);
  std::printf("kvcache_device_test (%s): %d failure(s)\n", format.c_str(), g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
