// The bf16-activation product (model.dtype = "bf16") on Intel AMX tiles, used instead of the
// vdpbf16ps kernel (gemm_nt_bf16.cpp) with TESSERA_AMX=1 where the CPU and the kernel allow
// AMX-BF16. Opt-in because it trades batch 1 for batches: on the Xeon the 50m 64-sequence step
// takes 15.3-15.7 ms against 30.9 with vdpbf16ps, the batch-1 step 1.96-2.00 ms against 1.63
// (a decode row: 1 x 16384 x 512 in 737 µs on one core against 577; staging W in tile order,
// row by row or a k block at a time, and prefetching further ahead are each slower; docs/perf.md
// "Engine" and "GEMM on CPU").
//
// Y^T = W . X^T in tiles of 16 x 16 fp32: the A operand of TDPBF16PS is W itself (16 rows of n,
// 32 bf16 of k each, loaded where W lies, ldw apart: no packing of weights), the B operand X^T
// in the VNNI layout the instruction wants (B[k/2][m][k%2], built per call from x: rows x in
// values, small next to W). Per 32 k, 2 W tiles x 2 x tiles feed 4 accumulator tiles (32 n x
// 32 m); the accumulators are then stored, transposed 16 x 16 in registers and written to y.
// Every output is the same sequence of TDPBF16PS over k blocks of 32 wherever it sits (tile,
// thread split, rows in the call), so the kernel is batch-invariant; its sums are not the
// vdpbf16ps kernel's bits (AMX accumulates in its own order: Intel SDM, "TDPBF16PS"), so one
// process uses one of the two for every product.
//
// Intel SDM Vol. 1 ch. 18 (AMX) and Linux's Documentation/arch/x86/xstate.rst: a process asks
// for the tile data state once (arch_prctl ARCH_REQ_XCOMP_PERM); each thread loads its tile
// configuration before its first tile instruction.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "ops/gemm_nt.hpp"
#include "ops/gemm_nt_blocks.hpp"

namespace tessera::ops {
namespace gemm_detail {
namespace {

constexpr int64_t kTile = 16;   // rows of every tile; fp32 columns of an accumulator tile
constexpr int64_t kTileK = 32;  // bf16 per 64-byte tile row
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

// CPUID.(EAX = 7, ECX = 0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE; then the kernel's permission.
bool amx_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
    return false;
  }
  if ((edx & (1u << 22)) == 0 || (edx & (1u << 24)) == 0) {
    return false;
  }
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// Palette 1: every tile 16 rows of 64 bytes (tiles 0-3 accumulators, 4-5 W, 6-7 x).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  std::array<uint8_t, 14> reserved{};
  std::array<uint16_t, 16> colsb{};
  std::array<uint8_t, 16> rows{};
};

TS_AMX void configure_tiles_once() {
  thread_local bool configured = false;
  if (configured) {
    return;
  }
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[static_cast<size_t>(t)] = 64;
    config.rows[static_cast<size_t>(t)] = kTile;
  }
  _tile_loadconfig(&config);
  configured = true;
}

// r[i] (16 lanes of row i) -> r[c] = lane c of every row: the 16 x 16 transpose of 32-bit lanes,
// in four shuffle stages (pairs of rows, pairs of pairs, then 128-bit lanes twice).
TS_AMX inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];
  for (size_t q = 0; q < 4; ++q) {
    const __m512d lo = _mm512_castps_pd(t[4 * q]), lo2 = _mm512_castps_pd(t[4 * q + 2]);
    const __m512d hi = _mm512_castps_pd(t[4 * q + 1]), hi2 = _mm512_castps_pd(t[4 * q + 3]);
    u[4 * q + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, lo2));
    u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, lo2));
    u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi, hi2));
    u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi, hi2));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 v = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    const __m512 w = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 x = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 z = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_f32x4(v, x, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(w, z, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(v, x, 0xDD);
    r[12 + c] = _mm512_shuffle_f32x4(w, z, 0xDD);
  }
}

// x (rows x K bf16, ldx apart) -> xp: per 16-row block b and 32-k block kb one 1 KiB B tile,
// tile row kp = [x[b * 16 + m][kb * 32 + 2 * kp + j] for m < 16, j < 2]: a pair of bf16 is one
// 32-bit lane, so each tile is a 16 x 16 transpose of 32-bit lanes. Zeros past the rows and K.
TS_AMX void pack_x(const uint16_t* x, int64_t rows, int64_t K, int64_t ldx, int64_t kblocks,
                   std::vector<uint16_t>& xp) {
  const int64_t mblocks = (rows + kTile - 1) / kTile;
  xp.resize(static_cast<size_t>(mblocks * kblocks * kTile * kTileK));
  for (int64_t b = 0; b < mblocks; ++b) {
    for (int64_t kb = 0; kb < kblocks; ++kb) {
      const int64_t k0 = kb * kTileK, count = std::min<int64_t>(kTileK, K - k0);
      const auto mask = static_cast<__mmask32>(count >= 32 ? 0xFFFFFFFFu : (1u << count) - 1u);
      __m512 r[16];
      for (int i = 0; i < 16; ++i) {
        const int64_t m = b * kTile + i;
        r[i] = m < rows ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, x + m * ldx + k0))
                        : _mm512_setzero_ps();
      }
      transpose16(r);
      uint16_t* tile = xp.data() + (b * kblocks + kb) * kTile * kTileK;
      for (int kp = 0; kp < 16; ++kp) {
        _mm512_storeu_ps(reinterpret_cast<float*>(tile + kp * kTileK), r[kp]);
      }
    }
  }
}

// acc (16 n x 16 m, fp32, rows of 16) -> y[m][n] for m < mr, n < nr (y at the tile's corner).
TS_AMX void store_transposed(const float* acc, float* y, int64_t ldy, int mr, int nr) {
  const auto mask = static_cast<__mmask16>(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
  if (mr <= 4) {  // a few rows of y (decode): each a strided gather of the tile's column m
    const __m512i column =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(kTile));
    for (int m = 0; m < mr; ++m) {
      _mm512_mask_storeu_ps(y + m * ldy, mask, _mm512_i32gather_ps(column, acc + m, 4));
    }
    return;
  }
  __m512 r[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm512_load_ps(acc + i * kTile);
  }
  transpose16(r);
  for (int m = 0; m < mr; ++m) {
    _mm512_mask_storeu_ps(y + m * ldy, mask, r[m]);
  }
}

}  // namespace
}  // namespace gemm_detail

bool gemm_nt_amx_available() {
  static const bool ok = [] {
    const char* env = std::getenv("TESSERA_AMX");
    if (env == nullptr || std::string_view(env) != "1") {
      return false;  // opt-in: see the header
    }
    return gemm_nt_bf16_available() && gemm_detail::amx_usable();
  }();
  return ok;
}

namespace gemm_detail {
// Columns [n_begin, n_end) of y = x W^T, x and W bf16 (a.x_bf16, a.w_bf16). Requires
// gemm_nt_amx_available().
TS_AMX void gemm_nt_range_amx(const GemmNtArgs& a, int64_t n_begin, int64_t n_end) {
  configure_tiles_once();
  const int64_t K = a.in, M = a.rows;
  const int64_t kblocks = (K + kTileK - 1) / kTileK, mblocks = (M + kTile - 1) / kTile;
  thread_local std::vector<uint16_t> xp;
  pack_x(a.x_bf16, M, K, a.ldx, kblocks, xp);
  // A zero-padded copy of a block's W rows where the tiles cannot read W itself: past K, or past
  // the product's last row. A range's last block that ends inside the product reads the rows
  // after it where they lie, and its stores drop those columns (each output is its own row's).
  thread_local std::vector<uint16_t> wpad;
  alignas(64) float acc[4][kTile * kTile];
  const bool k_whole = K % kTileK == 0;
  for (int64_t n0 = n_begin; n0 < n_end; n0 += 2 * kTile) {
    const int64_t nr = std::min<int64_t>(2 * kTile, n_end - n0);
    const uint16_t* w = a.w_bf16 + n0 * a.ldw;
    int64_t ldw = a.ldw;
    if (n0 + 2 * kTile > a.out || !k_whole) {
      ldw = kblocks * kTileK;
      wpad.assign(static_cast<size_t>(2 * kTile * ldw), 0);
      for (int64_t j = 0; j < nr; ++j) {
        std::memcpy(wpad.data() + j * ldw, a.w_bf16 + (n0 + j) * a.ldw,
                    static_cast<size_t>(K) * sizeof(uint16_t));
      }
      w = wpad.data();
    }
    // W streams from memory (a decode row uses each line once): the tile loads read 16 rows 1
    // KiB apart, which the hardware prefetchers do not follow, so ask for the next block's.
    const int64_t next_rows = std::clamp<int64_t>(n_end - n0 - 2 * kTile, 0, 2 * kTile);
    const uint16_t* next = next_rows > 0 ? a.w_bf16 + (n0 + 2 * kTile) * a.ldw : nullptr;
    for (int64_t mb = 0; mb < mblocks; mb += 2) {
      const bool two_m = mb + 1 < mblocks;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        if (mb == 0 && next_rows > 0) {  // this k block's line of the next 32 W rows
          for (int64_t j = 0; j < next_rows; ++j) {
            _mm_prefetch(reinterpret_cast<const char*>(next + j * a.ldw + kb * kTileK),
                         _MM_HINT_T0);
          }
        }
        const uint16_t* x0 = xp.data() + (mb * kblocks + kb) * kTile * kTileK;
        _tile_loadd(4, w + kb * kTileK, ldw * 2);
        _tile_loadd(5, w + kTile * ldw + kb * kTileK, ldw * 2);
        _tile_loadd(6, x0, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        if (two_m) {
          _tile_loadd(7, x0 + kblocks * kTile * kTileK, 64);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(3, 5, 7);
        }
      }
      _tile_stored(0, acc[0], 64);
      _tile_stored(2, acc[2], 64);
      if (two_m) {
        _tile_stored(1, acc[1], 64);
        _tile_stored(3, acc[3], 64);
      }
      for (int half_n = 0; half_n < 2; ++half_n) {
        const auto n_here = static_cast<int>(std::min<int64_t>(kTile, nr - half_n * kTile));
        if (n_here <= 0) {
          continue;
        }
        for (int half_m = 0; half_m < (two_m ? 2 : 1); ++half_m) {
          const int64_t m0 = (mb + half_m) * kTile;
          const auto m_here = static_cast<int>(std::min<int64_t>(kTile, M - m0));
          store_transposed(acc[half_n * 2 + half_m], a.y + m0 * a.ldy + n0 + half_n * kTile, a.ldy,
                           m_here, n_here);
        }
      }
    }
  }
}

}  // namespace gemm_detail
}  // namespace tessera::ops
