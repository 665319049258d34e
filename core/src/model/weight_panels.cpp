#include "model/weight_panels.hpp"

#include "ops/gemm_nt.hpp"
#include "ops/linear.hpp"  // gemm_reads_panels

namespace tessera::dsv4 {
namespace {

// `rows` ([out, in]) into `panels`, and rows' storage released.
template <typename T>
void pack(TensorStorage<T>& rows, int64_t out, int64_t in, TensorStorage<T>& panels) {
  panels.resize(static_cast<size_t>(ops::weight_panel_count(out) * in * ops::kWeightPanelWidth));
  ops::pack_weight_panels(rows.data(), out, in, panels.data());
  TensorStorage<T>().swap(rows);
}

}  // namespace

int64_t pack_linear_weights_into_panels(ModelWeights& weights, bool keep_bf16_rows) {
  if (!ops::gemm_reads_panels()) {
    return 0;
  }
  int64_t packed = 0;
  for_each_linear_weight(weights, [&](Tensor& t) {
    if (t.shape.size() != 2 || t.shape[0] == 0 || t.shape[1] == 0) {
      return;
    }
    if (!t.data.empty()) {
      pack(t.data, t.shape[0], t.shape[1], t.panels);
      ++packed;
    } else if (!t.bf16.empty() && !keep_bf16_rows) {
      pack(t.bf16, t.shape[0], t.shape[1], t.bf16_panels);
      ++packed;
    }
  });
  return packed;
}

}  // namespace tessera::dsv4
