#include "plugins/sampler_call.hpp"

#include <cstddef>

namespace tessera {

void gather_row_hints(const dsv4::Logits& logits, std::span<const int64_t> rows, RowHints& hints) {
  hints.scans.clear();
  hints.groups.clear();
  if (logits.scans.empty()) {
    return;
  }
  for (const int64_t row : rows) {
    const ops::RowScan& s = logits.scans[static_cast<size_t>(row)];
    if (!s.finite) {
      hints.scans.clear();  // the plugin's own scan names the bad value
      return;
    }
    hints.scans.push_back({s.max, s.argmax});
  }
  const int64_t groups = TS_LOGIT_GROUP_COUNT(logits.vocab);
  const auto n_rows = static_cast<int64_t>(logits.values.size()) / logits.vocab;
  if (static_cast<int64_t>(logits.group_max.size()) != n_rows * groups) {
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    hints.groups.push_back({hints.scans[i], logits.group_max.data() + rows[i] * groups});
  }
}

ts_status call_sampler(const PluginInstance& sampler, std::span<const ts_sampler_row> rows,
                       const RowHints& hints, int32_t vocab, ts_sampler_result* results) {
  const auto& table = sampler.table<ts_sampler_table>();
  const auto n = static_cast<int32_t>(rows.size());
  // sample_scanned is ABI 1.1 and sample_grouped 1.2: older plugins' tables end before them.
  // A slot is read only once struct_size shows the plugin's table has it.
  const auto reaches = [&](size_t offset) { return table.struct_size >= offset + sizeof(void*); };
  if (!hints.groups.empty() && reaches(offsetof(ts_sampler_table, sample_grouped)) &&
      table.sample_grouped != nullptr) {
    return table.sample_grouped(sampler.get(), rows.data(), hints.groups.data(), n, vocab, results);
  }
  if (!hints.scans.empty() && reaches(offsetof(ts_sampler_table, sample_scanned)) &&
      table.sample_scanned != nullptr) {
    return table.sample_scanned(sampler.get(), rows.data(), hints.scans.data(), n, vocab, results);
  }
  return table.sample(sampler.get(), rows.data(), n, vocab, results);
}

}  // namespace tessera
