// fp8_gemm_bench [--markdown FILE] [--iterations N]
//
// DeepSeek-V4's FP8 linear layers (W8A8: W e4m3 with a UE8M0 scale per 128x128 block, x
// quantised to e4m3 per 1x128 block) on DeepSeek-V4-Flash's shapes at decode (1 and 64 rows) and
// prefill (4096 rows): our kernel (core/cuda/kernels/linear_fp8.cu, launched as the CUDA module
// launches it) against cuBLASLt's block-scaled FP8 matmul on the same operands
// (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F for W, VEC128_32F for x; cuBLAS 12.9+, Hopper).
// Both are checked against a host W8A8 reference on sampled outputs first. Median time over the
// iterations (CUDA events), TFLOP/s (2 * rows * out * in per product) and ours as a fraction of
// the vendor's. The vendor's x is quantised beforehand (not timed); ours quantises inside the
// kernel. A vendor refusal (an unsupported GPU or library) is a table entry, not a failure.
// Scale layouts for cuBLASLt's 1x128 and 128x128 modes (pytorch/pytorch#166752, cuBLAS docs
// "scaling factors layouts"): x's [rows, in/128] with the rows fastest; W's [out/128, L4] with
// L4 = in/128 rounded up to a multiple of 4.
// Exit 0 pass, 1 a wrong result, 77 no CUDA device.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "number_formats.cuh"
#include "ops_launch.hpp"

namespace {

using namespace tessera::formats;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Shape {
  const char* name;
  int64_t out, in;
};

// DeepSeek-V4-Flash's FP8 projections (hidden 4096, q LoRA 1024, 64 x 512 heads, 8 output groups
// of 1024, shared expert width 2048).
constexpr Shape kShapes[] = {{"wq_a", 1024, 4096},
                             {"wq_b", 32768, 1024},
                             {"wo_b", 4096, 8192},
                             {"shared w1", 2048, 4096},
                             {"shared w2", 4096, 2048}};
constexpr int64_t kRows[] = {1, 64, 4096};

template <typename T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(size_t n) { check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc"); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& v) {
    check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
};

struct Operands {  // one shape at one row count, on the host
  int64_t rows, out, in, kb, ob, l4;
  std::vector<float> x;
  std::vector<uint8_t> w, w_scale;  // e4m3 [out, in]; ue8m0 [ob, kb]
  std::vector<uint8_t> xq;          // e4m3 [rows, in] (vendor)
  std::vector<float> x_scale;       // [kb][rows] (vendor layout)
  std::vector<float> w_scale_f32;   // [ob][l4] (vendor layout)
};

Operands make_operands(const Shape& s, int64_t rows, std::mt19937& rng) {
  Operands o{rows, s.out, s.in, s.in / 128, (s.out + 127) / 128, (s.in / 128 + 3) / 4 * 4};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> code(0, 0x7E), sign(0, 1), exponent(118, 121);
  o.x.resize(static_cast<size_t>(rows * s.in));
  for (float& v : o.x) v = normal(rng);
  o.w.resize(static_cast<size_t>(s.out * s.in));
  for (uint8_t& v : o.w) v = static_cast<uint8_t>(code(rng) | (sign(rng) << 7));
  o.w_scale.resize(static_cast<size_t>(o.ob * o.kb));
  for (uint8_t& v : o.w_scale) v = static_cast<uint8_t>(exponent(rng));
  o.w_scale_f32.assign(static_cast<size_t>(o.ob * o.l4), 1.0f);
  for (int64_t b = 0; b < o.ob; ++b)
    for (int64_t k = 0; k < o.kb; ++k)
      o.w_scale_f32[b * o.l4 + k] = ue8m0_to_float(o.w_scale[b * o.kb + k]);
  o.xq.resize(o.x.size());
  o.x_scale.resize(static_cast<size_t>(o.kb * rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < o.kb; ++k) {
      float amax = 0;
      for (int64_t i = k * 128; i < k * 128 + 128; ++i)
        amax = std::max(amax, std::fabs(o.x[r * s.in + i]));
      const float scale = e4m3_block_scale(amax);
      o.x_scale[k * rows + r] = scale;
      for (int64_t i = k * 128; i < k * 128 + 128; ++i)
        o.xq[r * s.in + i] = float_to_e4m3(o.x[r * s.in + i] / scale);
    }
  return o;
}

// The W8A8 product's entry (r, c) on the host: exact products, double sums per block.
double reference(const Operands& o, int64_t r, int64_t c) {
  double y = 0;
  for (int64_t k = 0; k < o.kb; ++k) {
    double block = 0;
    for (int64_t i = k * 128; i < k * 128 + 128; ++i)
      block += double(e4m3_to_float(o.xq[r * o.in + i])) * e4m3_to_float(o.w[c * o.in + i]);
    y += block * o.x_scale[k * o.rows + r] * ue8m0_to_float(o.w_scale[(c / 128) * o.kb + k]);
  }
  return y;
}

float bf16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

// Largest |got - want| / (1e-2 + |want|) over sampled outputs.
template <typename Get>
double sampled_error(const Operands& o, Get got) {
  double worst = 0;
  for (int i = 0; i < 64; ++i) {
    const int64_t r = (i * 7919) % o.rows, c = (i * 104729) % o.out;
    const double want = reference(o, r, c);
    worst = std::max(worst, std::fabs(got(r, c) - want) / (1e-2 + std::fabs(want)));
  }
  return worst;
}

template <typename Launch>
double median_ms(int iterations, cudaStream_t stream, Launch launch) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  launch();  // warm-up
  std::vector<float> ms;
  for (int i = 0; i < iterations; ++i) {
    check(cudaEventRecord(a, stream), "record");
    launch();
    check(cudaEventRecord(b, stream), "record");
    check(cudaEventSynchronize(b), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// cuBLASLt's D[out, rows] (column-major, i.e. y[rows, out] row-major) = W^T-op x, bf16 out.
struct Vendor {
  cublasLtHandle_t handle = nullptr;
  Vendor() {
    if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) handle = nullptr;
  }
  ~Vendor() {
    if (handle) cublasLtDestroy(handle);
  }
  // Returns "" and times the product, or why cuBLASLt refused it.
  std::string run(const Operands& o, const uint8_t* w, const float* ws, const uint8_t* xq,
                  const float* xs, uint16_t* d, void* workspace, size_t workspace_bytes,
                  cudaStream_t stream, int iterations, double* ms) {
    if (!handle) return "cublasLtCreate failed";
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    std::string why;
    auto ok = [&](cublasStatus_t s, const char* what) {
      if (s != CUBLAS_STATUS_SUCCESS && why.empty())
        why = std::string(what) + ": status " + std::to_string(s);
      return why.empty();
    };
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    const int32_t blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
                  vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const float alpha = 1.0f, beta = 0.0f;
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    if (ok(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t),
           "transa") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n),
           "transb") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blk,
                                          sizeof blk),
           "a scale mode") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec,
                                          sizeof vec),
           "b scale mode") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &ws,
                                          sizeof ws),
           "a scale") &&
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &xs,
                                          sizeof xs),
           "b scale") &&
        ok(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, o.in, o.out, o.in), "layout a") &&
        ok(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, o.in, o.rows, o.in), "layout b") &&
        ok(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, o.out, o.rows, o.out), "layout d") &&
        ok(cublasLtMatmulPreferenceCreate(&pref), "preference") &&
        ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &workspace_bytes, sizeof workspace_bytes),
           "workspace") &&
        ok(cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, pref, 1, &heuristic,
                                          &found),
           "heuristic")) {
      if (found == 0) why = "no algorithm for this shape";
    }
    if (why.empty()) {
      *ms = median_ms(iterations, stream, [&] {
        if (cublasLtMatmul(handle, desc, &alpha, w, la, xq, lb, &beta, d, ld, d, ld,
                           &heuristic.algo, workspace, workspace_bytes,
                           stream) != CUBLAS_STATUS_SUCCESS &&
            why.empty())
          why = "cublasLtMatmul failed";
      });
    }
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
    return why;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string markdown;
  int iterations = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::max(1, std::stoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: fp8_gemm_bench [--markdown FILE] [--iterations N]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  int lt_version = static_cast<int>(cublasLtGetVersion());
  std::string table =
      "FP8 W8A8 GEMM, y[rows, out] = x W^T, on " + std::string(prop.name) + " (cuBLASLt " +
      std::to_string(lt_version) + "), median of " + std::to_string(iterations) +
      "\n\n| shape (out x in) | rows | ours ms | ours TFLOP/s | "
      "cuBLASLt ms | cuBLASLt TFLOP/s | ours / cuBLASLt | max rel err ours, vendor |\n"
      "|---|---|---|---|---|---|---|---|\n";
  bool wrong = false;
  std::mt19937 rng(7);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  const size_t workspace_bytes = 64u << 20;
  DeviceArray<uint8_t> workspace(workspace_bytes);
  Vendor vendor;
  for (const Shape& s : kShapes) {
    for (const int64_t rows : kRows) {
      const Operands o = make_operands(s, rows, rng);
      DeviceArray<float> x(o.x.size()), y(static_cast<size_t>(rows * s.out)), xs(o.x_scale.size()),
          ws(o.w_scale_f32.size());
      DeviceArray<uint8_t> w(o.w.size()), wsc(o.w_scale.size()), xq(o.xq.size());
      DeviceArray<uint16_t> d(static_cast<size_t>(rows * s.out));
      x.upload(o.x), w.upload(o.w), wsc.upload(o.w_scale), xq.upload(o.xq), xs.upload(o.x_scale),
          ws.upload(o.w_scale_f32);
      const double ours_ms = median_ms(iterations, stream, [&] {
        check(tessera::kernels::launch_linear_fp8(x.p, rows, s.in, w.p, wsc.p, s.out, y.p, stream),
              "ours");
      });
      std::vector<float> ours(static_cast<size_t>(rows * s.out));
      check(cudaMemcpy(ours.data(), y.p, ours.size() * 4, cudaMemcpyDeviceToHost), "download");
      const double ours_err =
          sampled_error(o, [&](int64_t r, int64_t c) { return ours[r * s.out + c]; });
      double vendor_ms = 0;
      const std::string why = vendor.run(o, w.p, ws.p, xq.p, xs.p, d.p, workspace.p,
                                         workspace_bytes, stream, iterations, &vendor_ms);
      std::string vendor_err = "-";
      if (why.empty()) {
        std::vector<uint16_t> theirs(static_cast<size_t>(rows * s.out));
        check(cudaMemcpy(theirs.data(), d.p, theirs.size() * 2, cudaMemcpyDeviceToHost),
              "download");
        char e[32];
        std::snprintf(e, sizeof e, "%.2e", sampled_error(o, [&](int64_t r, int64_t c) {
                        return bf16_to_float(theirs[r * s.out + c]);
                      }));
        vendor_err = e;
      }
      wrong = wrong || !(ours_err < 1e-3);
      const double flop = 2.0 * rows * s.out * s.in;
      char row[512];
      if (why.empty())
        std::snprintf(row, sizeof row,
                      "| %s %lldx%lld | %lld | %.4f | %.2f | %.4f | %.2f | %.2f | %.2e, %s |\n",
                      s.name, (long long)s.out, (long long)s.in, (long long)rows, ours_ms,
                      flop / ours_ms / 1e9, vendor_ms, flop / vendor_ms / 1e9, vendor_ms / ours_ms,
                      ours_err, vendor_err.c_str());
      else
        std::snprintf(row, sizeof row,
                      "| %s %lldx%lld | %lld | %.4f | %.2f | refused: %s | - | - | %.2e, - |\n",
                      s.name, (long long)s.out, (long long)s.in, (long long)rows, ours_ms,
                      flop / ours_ms / 1e9, why.c_str(), ours_err);
      table += row;
      std::fputs(row, stdout);
      std::fflush(stdout);
    }
  }
  cudaStreamDestroy(stream);
  if (!markdown.empty()) std::ofstream(markdown) << table;
  std::printf("\n%s", table.c_str());
  return wrong ? 1 : 0;
}
