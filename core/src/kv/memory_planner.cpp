#include "kv/memory_planner.hpp"

#include <algorithm>
#include <cmath>

#include "util/check.hpp"

namespace tessera {

KvPlan plan_kv_memory(const dsv4::ModelConfig& config, const ts_kv_layout& main,
                      const ts_kv_layout& indexer, uint64_t budget_bytes, int64_t max_context) {
  const double page = main.entries_per_page;
  double main_entries = 0, index_entries = 0, per_token_bytes = 0;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const int64_t m = config.compress_ratio(l);
    // window pages: the window plus one page of slack on each side
    main_entries += static_cast<double>(config.window) + 2 * page;
    if (m > 0) {
      main_entries += std::ceil(static_cast<double>(max_context) / m) + page;
      per_token_bytes += static_cast<double>(main.bytes_per_entry) / m;
    }
    if (m == 4) {
      index_entries += std::ceil(static_cast<double>(max_context) / m) + page;
      per_token_bytes += static_cast<double>(indexer.bytes_per_entry) / m;
    }
  }
  const double main_bytes = main_entries * static_cast<double>(main.bytes_per_entry);
  const double index_bytes = index_entries * static_cast<double>(indexer.bytes_per_entry);
  const double main_share = main_bytes / std::max(1.0, main_bytes + index_bytes);
  KvPlan plan;
  plan.main_pages = static_cast<int64_t>(std::floor(budget_bytes * main_share / main.page_bytes));
  plan.indexer_pages =
      index_entries > 0 && indexer.page_bytes > 0
          ? static_cast<int64_t>(std::floor(budget_bytes * (1 - main_share) / indexer.page_bytes))
          : 1;
  plan.indexer_pages = std::max<int64_t>(plan.indexer_pages, 1);
  TS_CHECK(plan.main_pages >= 1,
           "kv_cache.memory_gib is too small: {} bytes cannot hold one {}-byte page", budget_bytes,
           main.page_bytes);
  plan.bytes = plan.main_pages * main.page_bytes + plan.indexer_pages * indexer.page_bytes;
  plan.bytes_per_token = per_token_bytes;
  plan.token_capacity =
      per_token_bytes > 0
          ? static_cast<int64_t>(static_cast<double>(budget_bytes) / per_token_bytes)
          : 0;
  return plan;
}

}  // namespace tessera
