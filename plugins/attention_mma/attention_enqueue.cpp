#include "attention_enqueue.hpp"

namespace tessera::mma {

std::string enqueue_attention(const WorkPlan& plan, const ts_attention_layer& layer,
                              const ts_attention_inputs& in, const ts_attention_outputs& out,
                              uint8_t* workspace, cudaStream_t stream, Stages stages) {
  const WorkspaceLayout& w = plan.workspace;
  const bool csa = layer.compress_ratio == 4;
  const auto* counts = reinterpret_cast<const WorkCounts*>(workspace + w.counts);
  const auto* tasks = reinterpret_cast<const TokenTask*>(workspace + w.tasks);
  auto* scores = reinterpret_cast<float*>(workspace + w.scores);
  auto* selected = reinterpret_cast<int32_t*>(workspace + w.selected);
  auto* partial_o = reinterpret_cast<float*>(workspace + w.partial_o);
  auto* partial_ml = reinterpret_cast<float*>(workspace + w.partial_ml);
  auto failed = [](const char* kernel, cudaError_t e) {
    return e == cudaSuccess ? std::string()
                            : std::string("launching ") + kernel + ": " + cudaGetErrorString(e);
  };

  if (csa && stages != Stages::kAttention) {
    const IndexerParams ip{&counts->indexer_items,
                           tasks,
                           reinterpret_cast<const IndexerItem*>(workspace + w.indexer_items),
                           reinterpret_cast<const int64_t*>(workspace + w.index_offsets),
                           in.index_pool,
                           in.index_q,
                           in.index_w,
                           scores,
                           layer.index_n_heads,
                           plan.key_format};
    std::string why =
        failed("lightning_indexer",
               launch_lightning_indexer(ip, plan.grids.indexer_items, layer.index_head_dim,
                                        plan.indexer_smem, stream));
    if (!why.empty()) {
      return why;
    }
    const TopkParams tp{&counts->tasks, tasks, scores, selected, out.selected, layer.index_topk};
    why = failed("topk_select", launch_topk_select(tp, plan.grids.tasks, plan.topk_smem, stream));
    if (!why.empty()) {
      return why;
    }
  }
  if (stages == Stages::kSelection) {
    return "";
  }
  const AttentionParams ap{&counts->attention_items,
                           tasks,
                           reinterpret_cast<const AttentionItem*>(workspace + w.attention_items),
                           reinterpret_cast<const int64_t*>(workspace + w.window_offsets),
                           reinterpret_cast<const int64_t*>(workspace + w.comp_offsets),
                           csa ? selected : nullptr,
                           in.kv_pool,
                           in.q,
                           layer.attn_sink,
                           out.out,
                           partial_o,
                           partial_ml,
                           layer.index_topk,
                           layer.n_heads,
                           layer.softmax_scale * 1.4426950408889634f,  // * log2(e)
                           plan.kv_format};
  std::string why =
      failed("sparse_attention",
             launch_sparse_attention(ap, plan.grids.attention_items, layer.head_dim,
                                     plan.heads_per_block, plan.attention_smem, stream));
  if (!why.empty()) {
    return why;
  }
  const CombineParams cp{&counts->combine_items,
                         tasks,
                         reinterpret_cast<const CombineItem*>(workspace + w.combine_items),
                         layer.attn_sink,
                         partial_o,
                         partial_ml,
                         out.out,
                         layer.n_heads,
                         plan.heads_per_block,
                         layer.head_dim};
  return failed("attention_combine",
                launch_attention_combine(cp, plan.grids.combine_items, stream));
}

}  // namespace tessera::mma
