// Linear weights packed into panels for the outer-product GEMM (ops/gemm_nt_panels.cpp): 1.3-1.7x
// the dot-product kernel's batched throughput on the Xeon (tessera bench gemm, the "panels" rows
// of docs/perf.md "GEMM on CPU"), each output still one FMA chain whatever the batch
// (batch-invariant). fp32 and bf16 weights alike, so bf16 storage keeps giving fp32 storage's
// bits. The panels replace the rows (OpenBLAS and tensor-parallel slicing unpack them), so pack
// the final weights: after bf16 storage and sharding, before placement (which moves the panels
// into the arena).
#pragma once

#include <cstdint>

#include "model/dsv4_weights.hpp"

namespace tessera::dsv4 {

// Packs every 2-D linear weight (for_each_linear_weight) into Tensor::panels (fp32) or
// Tensor::bf16_panels, where our kernels run (ops::gemm_reads_panels(): AVX-512 or AVX2); bf16
// weights stay rows when keep_bf16_rows (the bf16-activation kernels, model.dtype = "bf16", read
// rows). Returns the number of tensors packed.
int64_t pack_linear_weights_into_panels(ModelWeights& weights, bool keep_bf16_rows);

}  // namespace tessera::dsv4
