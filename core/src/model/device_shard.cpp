#include "model/device_shard.hpp"

#include <algorithm>
#include <cstring>
#include <regex>

#include "util/check.hpp"

namespace tessera::dsv4 {

SplitAxis split_axis(std::string_view name) {
  static const std::regex rows(
      R"((^|\.)attn\.(wq_b\.weight|attn_sink|wo_a\.weight)$|)"
      R"(\.ffn\.(shared_experts|experts\.\d+)\.(w1|w3)\.weight$|^head\.weight$)");
  static const std::regex columns(
      R"((^|\.)attn\.wo_b\.weight$|\.ffn\.(shared_experts|experts\.\d+)\.w2\.weight$)");
  const std::string n(name);
  if (std::regex_search(n, rows)) {
    return SplitAxis::kRows;
  }
  if (std::regex_search(n, columns)) {
    return SplitAxis::kColumns;
  }
  return SplitAxis::kWhole;
}

SplitAxis split_axis(std::string_view name, RankShare share) {
  if (share.expert_parallel && routed_expert_of(name) >= 0) {
    return SplitAxis::kWhole;
  }
  return split_axis(name);
}

int64_t routed_expert_of(std::string_view name) {
  static const std::regex expert(R"((^|\.)ffn\.experts\.(\d+)\.)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(name.begin(), name.end(), m, expert)) {
    return -1;
  }
  return std::stoll(m[2].str());
}

ExpertRange local_experts(RankShare share, int64_t experts) {
  if (!share.expert_parallel || share.ranks == 1) {
    return {0, experts};
  }
  TS_CHECK(experts % share.ranks == 0,
           "moe_split = \"ep\": tensor_parallel = {} does not divide the {} routed experts; "
           "choose a tensor_parallel that does, or moe_split = \"tp\"",
           share.ranks, experts);
  const int64_t count = experts / share.ranks;
  return {share.rank * count, count};
}

TensorShare share_of(const StoredTensor& t, const std::string& name, SplitAxis axis,
                     RankShare share, int64_t block) {
  TensorShare out;
  out.shape = t.shape;
  out.bytes = t.bytes;
  if (axis == SplitAxis::kWhole || share.ranks == 1) {
    return out;
  }
  const int n = share.ranks;
  const size_t dim = axis == SplitAxis::kRows ? 0 : 1;
  TS_CHECK(t.shape.size() > dim, "'{}': {} dimension(s), no {} to split", name, t.shape.size(),
           axis == SplitAxis::kRows ? "rows" : "columns");
  const int64_t extent = t.shape[dim];
  TS_CHECK(extent % n == 0, "tensor_parallel = {} does not divide the {} {} of '{}'", n, extent,
           axis == SplitAxis::kRows ? "rows" : "columns", name);
  const int64_t part = extent / n;
  TS_CHECK(part % block == 0,
           "tensor_parallel = {}: '{}' splits into shares of {} {}, which cut its {}-wide scale "
           "blocks; choose a tensor_parallel whose shares hold whole blocks",
           n, name, part, axis == SplitAxis::kRows ? "rows" : "columns", block);
  out.shape[dim] = part;
  const size_t row_bytes = t.bytes.size() / static_cast<size_t>(t.shape[0]);
  if (axis == SplitAxis::kRows) {
    const size_t first = static_cast<size_t>(share.rank * part) * row_bytes;
    out.bytes = t.bytes.subspan(first, static_cast<size_t>(part) * row_bytes);
    return out;
  }
  TS_CHECK(row_bytes % static_cast<size_t>(n) == 0,
           "tensor_parallel = {}: a row of '{}' ({} bytes) does not split into whole bytes", n,
           name, row_bytes);
  const size_t part_bytes = row_bytes / static_cast<size_t>(n);
  out.gathered.resize(part_bytes * static_cast<size_t>(t.shape[0]));
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    std::memcpy(out.gathered.data() + static_cast<size_t>(r) * part_bytes,
                t.bytes.data() + static_cast<size_t>(r) * row_bytes +
                    static_cast<size_t>(share.rank) * part_bytes,
                part_bytes);
  }
  out.bytes = out.gathered;
  return out;
}

}  // namespace tessera::dsv4
