// The warp- and block-level primitives every Tessera kernel uses (the core's ops in
// core/cuda/kernels, the attention plugins' kernels): PTX on the device and, when
// TESSERA_DEVICE_EMULATION is defined, the SIMT emulator of core/emulator (CPU), so one kernel
// source runs in both (docs/cuda.md, "Single-source kernels"). Fragment layouts: PTX ISA, "Matrix
// fragments for mma.m16n8k16 with floating point type" and "ldmatrix".
#pragma once

#include <cstdint>

#ifdef TESSERA_DEVICE_EMULATION
#include <bit>
#include <cmath>
#include <cstring>

#include "cuda_runtime_emulation.hpp"
#include "simt_emulator.hpp"
#define TS_DEVICE inline
#define TS_KERNEL(threads) void
// Enqueued on the emulated stream (run at its synchronisation; the null stream runs at once):
// the arguments are captured by value, as a real launch copies them.
#define TS_LAUNCH(kernel, grid, block, smem, stream, ...) \
  ::tessera::emu::launch_on(stream, grid, block, smem, [=] { kernel(__VA_ARGS__); })
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#define TS_DEVICE __device__ __forceinline__
#define TS_KERNEL(threads) __global__ void __launch_bounds__(threads)
#define TS_LAUNCH(kernel, grid, block, smem, stream, ...) \
  kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
#endif

namespace tessera::dev {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kNegInf = -__builtin_huge_valf();

#ifdef TESSERA_DEVICE_EMULATION

TS_DEVICE int thread_index() { return static_cast<int>(emu::thread_idx().x); }
TS_DEVICE int block_index() { return static_cast<int>(emu::block_idx().x); }
TS_DEVICE int block_index_y() { return static_cast<int>(emu::block_idx().y); }
TS_DEVICE int grid_blocks() { return static_cast<int>(emu::grid_dim().x); }
TS_DEVICE int block_threads() { return static_cast<int>(emu::block_dim().x); }
TS_DEVICE void sync_block() { emu::block_barrier(); }
TS_DEVICE unsigned char* dynamic_smem() { return emu::shared_memory(); }
TS_DEVICE float shfl_xor(float v, int mask) { return emu::shfl_xor(v, mask); }
TS_DEVICE uint32_t ballot(bool p) { return emu::ballot(p); }
TS_DEVICE int popc(uint32_t v) { return std::popcount(v); }
TS_DEVICE uint32_t float_bits(float v) { return std::bit_cast<uint32_t>(v); }
TS_DEVICE float bits_float(uint32_t v) { return std::bit_cast<float>(v); }
TS_DEVICE float fast_exp2(float v) { return std::exp2(v); }
TS_DEVICE uint32_t atomic_add_shared(uint32_t* p, uint32_t v) {
  const uint32_t old = *p;  // fibers switch only in collectives: this is atomic
  *p = old + v;
  return old;
}
TS_DEVICE void atomic_min_i64(int64_t* p, int64_t v) {  // global memory; atomic as above
  if (v < *p) *p = v;
}
TS_DEVICE uint16_t to_bf16(float v) {  // round to nearest even (finite inputs)
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7F800000u) == 0x7F800000u)
    return static_cast<uint16_t>((bits >> 16) | ((bits & 0xFFFF) ? 0x40 : 0));
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
TS_DEVICE uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<uint32_t>(to_bf16(lo)) | static_cast<uint32_t>(to_bf16(hi)) << 16;
}
TS_DEVICE float bf16x2_sum(uint32_t v) {
  return std::bit_cast<float>(v << 16) + std::bit_cast<float>(v & 0xFFFF0000u);
}
TS_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* p) { emu::ldmatrix_x4(r, p, false); }
TS_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { emu::ldmatrix_x4(r, p, true); }
TS_DEVICE void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  emu::mma_bf16_16816(d, a, b0, b1);
}
TS_DEVICE void cp_async_16(void* shared_dst, const void* global_src) {
  emu::async_copy_16(shared_dst, global_src);
}
TS_DEVICE void cp_async_commit() { emu::async_commit(); }
template <int kPending>
TS_DEVICE void cp_async_wait() {
  emu::async_wait(kPending);
}

#else  // CUDA

TS_DEVICE int thread_index() { return static_cast<int>(threadIdx.x); }
TS_DEVICE int block_index() { return static_cast<int>(blockIdx.x); }
TS_DEVICE int block_index_y() { return static_cast<int>(blockIdx.y); }
TS_DEVICE int grid_blocks() { return static_cast<int>(gridDim.x); }
TS_DEVICE int block_threads() { return static_cast<int>(blockDim.x); }
TS_DEVICE void sync_block() { __syncthreads(); }
TS_DEVICE unsigned char* dynamic_smem() {
  extern __shared__ __align__(16) unsigned char tessera_dynamic_smem[];
  return tessera_dynamic_smem;
}
TS_DEVICE float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xFFFFFFFFu, v, mask); }
TS_DEVICE uint32_t ballot(bool p) { return __ballot_sync(0xFFFFFFFFu, p); }
TS_DEVICE int popc(uint32_t v) { return __popc(v); }
TS_DEVICE uint32_t float_bits(float v) { return __float_as_uint(v); }
TS_DEVICE float bits_float(uint32_t v) { return __uint_as_float(v); }
TS_DEVICE float fast_exp2(float v) { return exp2f(v); }
TS_DEVICE uint32_t atomic_add_shared(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
TS_DEVICE void atomic_min_i64(int64_t* p, int64_t v) {
  atomicMin(reinterpret_cast<long long*>(p), static_cast<long long>(v));
}
TS_DEVICE uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}
TS_DEVICE float bf16x2_sum(uint32_t v) {
  return __uint_as_float(v << 16) + __uint_as_float(v & 0xFFFF0000u);
}
TS_DEVICE uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
TS_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
TS_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
// d += a * b on tensor cores: bf16 inputs, fp32 accumulation.
TS_DEVICE void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
TS_DEVICE void cp_async_16(void* shared_dst, const void* global_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(shared_dst)),
               "l"(global_src));
}
TS_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
TS_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

#endif

// bfloat16 bits to fp32 (exact).
TS_DEVICE float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Order-preserving map of fp32 onto uint32: a < b  <=>  float_key(a) < float_key(b).
TS_DEVICE uint32_t float_key(float v) {
  const uint32_t bits = float_bits(v);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile whose rows hold `chunks_per_row`
// chunks (a power of two). XOR-ing the chunk with row % 8 puts the 8 rows an ldmatrix reads in 8
// different bank groups (rows of 128 B or more would otherwise all start in bank 0); rows of
// fewer than 8 chunks (index_head_dim 32: 4) XOR with row % chunks_per_row, staying in the row.
TS_DEVICE int swizzled_chunk(int row, int chunk, int chunks_per_row) {
  const int mask = chunks_per_row < 8 ? chunks_per_row - 1 : 7;
  return (row * chunks_per_row + (chunk ^ (row & mask))) * 16;
}

}  // namespace tessera::dev
