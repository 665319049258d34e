// A small SIMT emulator that runs Tessera's CUDA kernels on the CPU (the core's ops and the
// attention plugins'), so that their index arithmetic (fragment layouts, swizzles, pipelines,
// splits) is checked on machines without a GPU. It is one shared library per process
// (libtessera_emulator.so): the emulated device module and every emulated plugin share its
// allocations, streams and events.
//
// Model: blocks run one after another; the threads of a block are fibers on the caller's thread
// that switch only inside a collective (block barrier, warp exchange). Warp collectives follow the
// PTX ISA definitions of ldmatrix.m8n8.x4(.trans).b16, mma.m16n8k16.row.col.f32.bf16.bf16.f32,
// shfl.bfly and vote.ballot, with all 32 lanes active. cp.async copies are queued per thread and
// land only at cp.async.wait_group, so a missing wait reads stale shared memory.
// Strictness: a barrier that some threads never reach (divergence, early exit), lanes of one
// warp in different collectives, shared-memory accesses past the block's dynamic allocation
// (guard page) and async copies from outside registered device memory raise an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "cuda_runtime_emulation.hpp"

namespace tessera::emu {

// Runs body once per thread of every block. Errors are reported through cudaGetLastError()
// (take_last_error), like a failed launch.
void launch(dim3 grid, dim3 block, size_t dynamic_smem_bytes, const std::function<void()>& body);
// The same launch enqueued on `stream` (emulated_streams.hpp): it runs when the stream is
// synchronised or waited on; the null stream runs it at once.
void launch_on(cudaStream_t stream, dim3 grid, dim3 block, size_t dynamic_smem_bytes,
               std::function<void()> body);

const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
unsigned char* shared_memory();

void block_barrier();

// Warp collectives (all 32 lanes).
float shfl_xor(float value, int lane_mask);
uint32_t ballot(bool predicate);
void ldmatrix_x4(uint32_t (&r)[4], const void* shared_row, bool transpose);
void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

// cp.async.cg 16 bytes, commit_group, wait_group.
void async_copy_16(void* shared_dst, const void* global_src);
void async_commit();
void async_wait(int pending_groups);

// Emulated device memory: page-aligned host memory followed by an inaccessible guard page.
void* device_alloc(size_t bytes);
void device_free(void* p);

// Throws std::runtime_error (inside a kernel: fails the launch).
[[noreturn]] void fail(const char* what);

}  // namespace tessera::emu
