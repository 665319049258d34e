// The compressors' device ops (DeviceOps::compress_windows, copy_rows) against the compressor's
// definition, kv/compressor_state.hpp: two sequences fed step by step in chunks of varied sizes
// (one token, several, a chunk closing several windows, a window spanning steps), the step's
// closed windows pooled from the step's rows and each sequence's ring, then each sequence's last
// window rows copied into its ring for the next step. Every entry is compared with the one
// CompressorState::push gives for the same rows:
//   cpu backend      exact (the same softmax_pool over the same rows in the same order);
//   other backends   |d| <= 1e-6 |ref| + 1e-7 (exp in double on both sides: the sums differ only
//                    in exp's last bits), on the tiny shapes and Flash's widths (d = 512 with
//                    m = 4, d = 128 with m = 128, d = 128 for the indexer's m = 4).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "device_backends.hpp"
#include "kv/compressor_state.hpp"

namespace tessera::device {
namespace {

struct Case {
  int64_t ratio, dim;
  std::vector<std::vector<int64_t>> chunks;  // [sequence][step]: tokens of that step
};

// Every step's entries, batch order (sequence 0's closed windows, then sequence 1's).
using StepEntries = std::vector<std::vector<float>>;

// The definition: each sequence's rows pushed into its own CompressorState.
StepEntries by_compressor_state(const Case& c, const std::vector<float>& kv,
                                const std::vector<float>& gate) {
  const int64_t width = c.ratio == 4 ? 2 * c.dim : c.dim;
  std::vector<dsv4::CompressorState> states(c.chunks.size(), {c.ratio, c.dim});
  std::vector<int64_t> position(c.chunks.size(), 0);
  StepEntries out;
  int64_t row = 0;  // into kv, gate: every step's rows, batch order
  for (size_t step = 0; step < c.chunks[0].size(); ++step) {
    std::vector<float> entries;
    for (size_t s = 0; s < c.chunks.size(); ++s) {
      for (int64_t t = 0; t < c.chunks[s][step]; ++t, ++row) {
        auto e = states[s].push(position[s]++, kv.data() + row * width, gate.data() + row * width);
        if (e) {
          entries.insert(entries.end(), e->begin(), e->end());
        }
      }
    }
    out.push_back(entries);
  }
  return out;
}

// The same rows through the ops on `dev`: per step, the rows uploaded, the closed windows
// described and pooled, then each sequence's rows of its last `windows` windows (from this step)
// copied into its ring.
StepEntries by_device_ops(Device& dev, const Case& c, const std::vector<float>& kv,
                          const std::vector<float>& gate) {
  const Stream s = dev.create_stream();
  const int64_t m = c.ratio, d = c.dim, width = m == 4 ? 2 * d : d, windows = m == 4 ? 2 : 1;
  const auto sequences = static_cast<int64_t>(c.chunks.size());
  const std::vector<float> zeros(static_cast<size_t>(sequences * windows * m * width), 0.0f);
  DeviceBuffer ring_kv = upload(dev, s, zeros), ring_gate = upload(dev, s, zeros);
  std::vector<int64_t> position(c.chunks.size(), 0);
  StepEntries out;
  int64_t step_first_row = 0;
  for (size_t step = 0; step < c.chunks[0].size(); ++step) {
    std::vector<int64_t> window, first_position, first_row, ring_row, src_rows, dst_rows;
    int64_t rows = 0;
    for (int64_t q = 0; q < sequences; ++q) {
      const int64_t n = c.chunks[q][step], p0 = position[q], ring = q * windows * m;
      for (int64_t p = p0; p < p0 + n; ++p) {
        if (p % m == m - 1) {
          window.push_back(p / m);
          first_position.push_back(p0);
          first_row.push_back(rows);
          ring_row.push_back(ring);
        }
      }
      if (n > 0) {
        const int64_t keep_from = std::max(p0, ((p0 + n - 1) / m - windows + 1) * m);
        for (int64_t p = keep_from; p < p0 + n; ++p) {
          src_rows.push_back(rows + p - p0);
          dst_rows.push_back(ring + (p / m % windows) * m + p % m);
        }
      }
      position[q] += n;
      rows += n;
    }
    const auto begin = static_cast<size_t>(step_first_row * width);
    const auto end = static_cast<size_t>((step_first_row + rows) * width);
    DeviceBuffer dkv = upload(dev, s, std::vector<float>(kv.begin() + begin, kv.begin() + end));
    DeviceBuffer dgate =
        upload(dev, s, std::vector<float>(gate.begin() + begin, gate.begin() + end));
    step_first_row += rows;
    const auto count = static_cast<int64_t>(window.size());
    std::vector<float> entries;
    if (count > 0) {
      DeviceBuffer dw = upload(dev, s, window), dp = upload(dev, s, first_position);
      DeviceBuffer dr = upload(dev, s, first_row), dring = upload(dev, s, ring_row);
      DeviceBuffer de = dev.allocate(static_cast<size_t>(count * d) * sizeof(float));
      const CompressorWindows w{
          count, m, d, dw.as<int64_t>(), dp.as<int64_t>(), dr.as<int64_t>(), dring.as<int64_t>()};
      dev.ops().compress_windows(s, w, dkv.as<float>(), dgate.as<float>(), ring_kv.as<float>(),
                                 ring_gate.as<float>(), de.as<float>());
      entries = download<float>(dev, s, de, static_cast<size_t>(count * d));
    }
    if (!src_rows.empty()) {
      DeviceBuffer dsrc = upload(dev, s, src_rows), ddst = upload(dev, s, dst_rows);
      const auto n = static_cast<int64_t>(src_rows.size());
      dev.ops().copy_rows(s, dkv.as<float>(), dsrc.as<int64_t>(), n, width, ring_kv.as<float>(),
                          ddst.as<int64_t>());
      dev.ops().copy_rows(s, dgate.as<float>(), dsrc.as<int64_t>(), n, width, ring_gate.as<float>(),
                          ddst.as<int64_t>());
    }
    dev.synchronize(s);  // the step's buffers go out of scope
    out.push_back(entries);
  }
  return out;
}

struct Inputs {
  std::vector<float> kv, gate;
};

Inputs random_inputs(const Case& c, uint32_t seed) {
  int64_t tokens = 0;
  for (const auto& steps : c.chunks) {
    for (const int64_t n : steps) {
      tokens += n;
    }
  }
  const int64_t width = c.ratio == 4 ? 2 * c.dim : c.dim;
  return {random_floats(static_cast<size_t>(tokens * width), seed),
          random_floats(static_cast<size_t>(tokens * width), seed + 1, 2.0f)};
}

int64_t closed_windows(const StepEntries& steps, int64_t dim) {
  int64_t n = 0;
  for (const auto& e : steps) {
    n += static_cast<int64_t>(e.size()) / dim;
  }
  return n;
}

// m = 4: one-token steps, a window spanning three steps, a 13-token chunk closing three windows
// (so a window's previous one is in the same step, or in the ring from an earlier step).
const Case kOverlapping{4, 8, {{5, 1, 1, 13, 2, 1, 7, 0}, {1, 3, 0, 2, 9, 1, 1, 6}}};
// m = 128: a window closed by a one-token step, one inside a long chunk, one spanning steps.
const Case kSingle{128, 8, {{100, 27, 1, 150, 1, 100}, {127, 1, 3, 40, 90, 128}}};

TEST(CompressorOps, CpuPoolsAsTheCompressorState) {
  for (const Case& c : {kOverlapping, kSingle}) {
    const Inputs in = random_inputs(c, 7);
    const StepEntries want = by_compressor_state(c, in.kv, in.gate);
    ASSERT_GE(closed_windows(want, c.dim), 4) << "ratio " << c.ratio;
    EXPECT_EQ(by_device_ops(cpu(), c, in.kv, in.gate), want) << "ratio " << c.ratio;
  }
}

class CompressorBackendOps : public ::testing::TestWithParam<size_t> {
 protected:
  Device& dev() { return *backends().at(GetParam()).device; }
};

void check_backend(Device& dev, Case c, int64_t dim, uint32_t seed) {
  c.dim = dim;
  const Inputs in = random_inputs(c, seed);
  const StepEntries want = by_compressor_state(c, in.kv, in.gate);
  const StepEntries got = by_device_ops(dev, c, in.kv, in.gate);
  ASSERT_EQ(got.size(), want.size());
  for (size_t step = 0; step < want.size(); ++step) {
    expect_close("compress_windows ratio " + std::to_string(c.ratio) + " dim " +
                     std::to_string(dim) + " step " + std::to_string(step),
                 got[step], want[step],
                 [&](size_t i) { return 1e-6 * std::fabs(want[step][i]) + 1e-7; });
  }
}

TEST_P(CompressorBackendOps, PoolsAsTheCompressorState) {
  check_backend(dev(), kOverlapping, 8, 11);
  check_backend(dev(), kSingle, 8, 12);
  check_backend(dev(), kOverlapping, 512, 13);  // Flash's main compressor on CSA layers
  check_backend(dev(), kOverlapping, 128, 14);  // Flash's indexer compressor
  check_backend(dev(), kSingle, 128, 15);
}

TEST_P(CompressorBackendOps, CopyRowsPlacesEachRow) {
  const Stream s = dev().create_stream();
  const int64_t width = 300;
  const std::vector<float> src = random_floats(5 * width, 3);
  const std::vector<int64_t> src_rows = {4, 0, 2}, dst_rows = {1, 6, 3};
  std::vector<float> want(7 * width, -1.0f);
  DeviceBuffer dsrc = upload(dev(), s, src), ddst = upload(dev(), s, want);
  DeviceBuffer dsr = upload(dev(), s, src_rows), ddr = upload(dev(), s, dst_rows);
  dev().ops().copy_rows(s, dsrc.as<float>(), dsr.as<int64_t>(), 3, width, ddst.as<float>(),
                        ddr.as<int64_t>());
  for (size_t r = 0; r < src_rows.size(); ++r) {
    std::copy_n(src.begin() + src_rows[r] * width, width, want.begin() + dst_rows[r] * width);
  }
  EXPECT_EQ(download<float>(dev(), s, ddst, want.size()), want);
}

// A graph bucket's padding: a window -1 leaves its entry as it was and the real windows' entries
// are those of the same op without the padding; a dst row -1 is not written.
TEST_P(CompressorBackendOps, PaddingWindowsAndRowsAreSkipped) {
  const Stream s = dev().create_stream();
  const int64_t m = 4, d = 8, width = 2 * d;
  const std::vector<float> kv = random_floats(8 * width, 5), gate = random_floats(8 * width, 6);
  const std::vector<float> ring(4 * width, 0.0f);
  // Windows 0 and 1 of one sequence whose rows 0..7 are all in the step, padding between them.
  const std::vector<int64_t> padded_window = {0, -1, 1}, real_window = {0, 1};
  const std::vector<int64_t> zeros = {0, 0, 0};
  DeviceBuffer dkv = upload(dev(), s, kv), dgate = upload(dev(), s, gate);
  DeviceBuffer rkv = upload(dev(), s, ring), rgate = upload(dev(), s, ring);
  DeviceBuffer dzero = upload(dev(), s, zeros);
  const auto pool = [&](const std::vector<int64_t>& window) {
    DeviceBuffer dw = upload(dev(), s, window);
    const auto n = static_cast<int64_t>(window.size());
    DeviceBuffer entries = upload(dev(), s, std::vector<float>(static_cast<size_t>(n * d), 7.0f));
    const CompressorWindows w{
        n, m, d, dw.as<int64_t>(), dzero.as<int64_t>(), dzero.as<int64_t>(), dzero.as<int64_t>()};
    dev().ops().compress_windows(s, w, dkv.as<float>(), dgate.as<float>(), rkv.as<float>(),
                                 rgate.as<float>(), entries.as<float>());
    return download<float>(dev(), s, entries, static_cast<size_t>(n * d));
  };
  const std::vector<float> padded = pool(padded_window), real = pool(real_window);
  EXPECT_TRUE(std::equal(real.begin(), real.begin() + d, padded.begin()));
  EXPECT_TRUE(
      std::all_of(padded.begin() + d, padded.begin() + 2 * d, [](float v) { return v == 7.0f; }));
  EXPECT_TRUE(std::equal(real.begin() + d, real.end(), padded.begin() + 2 * d));

  const std::vector<int64_t> src_rows = {1, 2}, dst_rows = {-1, 0};
  std::vector<float> want(2 * width, -1.0f);
  DeviceBuffer ddst = upload(dev(), s, want);
  DeviceBuffer dsr = upload(dev(), s, src_rows), ddr = upload(dev(), s, dst_rows);
  dev().ops().copy_rows(s, dkv.as<float>(), dsr.as<int64_t>(), 2, width, ddst.as<float>(),
                        ddr.as<int64_t>());
  std::copy_n(kv.begin() + 2 * width, width, want.begin());
  EXPECT_EQ(download<float>(dev(), s, ddst, want.size()), want);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompressorBackendOps,
                         ::testing::Range<size_t>(0, backends().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return backends().at(info.param).name;
                         });

TEST(GpuBackend, OpensWhereRequiredForCompressorOps) { expect_gpu_backend_where_required(); }

}  // namespace
}  // namespace tessera::device
