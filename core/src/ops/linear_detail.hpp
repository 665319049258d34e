// What linear.cpp and linear_group.cpp share: the backend choice, the preparation of a product's
// x (rows copied together, or rounded to bf16) and how its columns are cut into work items.
// Internal to ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ops/gemm_nt.hpp"

namespace tessera::ops::linear_detail {

// Work is shared in items of at least this many multiply-adds (a few microseconds: an item costs
// one atomic increment, a helper's hand-off about a microsecond).
inline constexpr int64_t kMinMaddsPerItem = int64_t{64} * 1024;

// The AVX-512 kernel is ours for this CPU and backend (else the AVX2 one, or none).
bool avx512_kernel();
// One of our kernels (not OpenBLAS) computes the products.
bool use_own_kernel();
// Our kernel computes this product: the AVX2 ones do not read bf16 x.
bool own_kernel_takes(const GemmNtArgs& a);
// Columns [n_begin, n_end) of a product our kernel takes, on whichever is ours.
void gemm_nt_columns(const GemmNtArgs& a, int64_t n_begin, int64_t n_end);
// x rows a multiple of 4 KiB apart, copied together (see linear_own_kernel); `store` owns the copy.
void pack_rows(GemmNtArgs& a, std::vector<float>& store);
// bf16 activations (Bf16ActivationScope) apply to this product: its weight is held in bf16.
bool takes_bf16_x(const GemmNtArgs& a);
// x rounded to bf16 into `store` (dense rows), for a product that takes_bf16_x.
void round_x_to_bf16(GemmNtArgs& a, std::vector<uint16_t>& store);
// The first product before g that reads the same x and already has it rounded; g if none.
size_t rounded_twin(std::span<const GemmNtArgs> gemms, std::span<const GemmNtArgs> args, size_t g);
// y = 0 (a product over no inputs).
void zero_output(const GemmNtArgs& a);
// Items of a product split its columns at multiples of this: the kernel's 4-column blocks, or
// whole panels of W.
int64_t item_columns(const GemmNtArgs& a);
// a, asking (while it computes its last chunk) for the first panels of columns [begin, end) of
// `next`: the item the thread is expected to take next (items are taken from a shared counter, so
// the thread's next one is about `threads` on). Without it each item's first chunk of W comes
// from memory on demand: in a 64-sequence step on a Zen 3, 16-row experts run at ~145 GFLOP/s
// without it, ~154 with it (docs/perf.md "The panel walk's prefetch").
GemmNtArgs ask_for_next_item(GemmNtArgs a, const GemmNtArgs& next, int64_t begin, int64_t end);
// One product, whole, on our kernel over the compute threads or on OpenBLAS.
void linear_args(const GemmNtArgs& args);

}  // namespace tessera::ops::linear_detail
