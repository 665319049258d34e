// `tessera bench gemm`: y = x W^T on the shapes of a 50m decode step (an expert's share of a
// 64-sequence batch, the attention projections, the vocabulary head, one decode row) and two of
// tiny-dsv4's, for our AVX-512 kernel (W in fp32 and in bf16) and OpenBLAS, on 1 and 2 threads,
// with W hot in cache or cold (a fresh copy of W from a 64 MiB ring on every call, as in a real
// step where the weights stream from memory).
#pragma once

#include <string>
#include <vector>

namespace tessera::bench {

struct GemmShape {
  long rows, out, in;
};

struct GemmBenchOptions {
  std::vector<int> threads = {1, 2};
  double seconds_per_cell = 0.2;
};

// Runs every shape x backend x threads x (hot, cold) and returns the markdown table.
std::string run_gemm_bench(const GemmBenchOptions& options);

}  // namespace tessera::bench
