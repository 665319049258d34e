#include "plugins/sampler_call.hpp"

#include <cstddef>

namespace tessera {

std::span<const ts_row_scan> usable_row_scans(const dsv4::Logits& logits,
                                              std::span<const int64_t> rows,
                                              std::vector<ts_row_scan>& store) {
  if (logits.scans.empty()) {
    return {};
  }
  store.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const ops::RowScan& s = logits.scans[static_cast<size_t>(rows[i])];
    if (!s.finite) {
      return {};  // the plugin's own scan names the bad value
    }
    store[i] = {s.max, s.argmax};
  }
  return store;
}

ts_status call_sampler(const PluginInstance& sampler, std::span<const ts_sampler_row> rows,
                       std::span<const ts_row_scan> scans, int32_t vocab,
                       ts_sampler_result* results) {
  const auto& table = sampler.table<ts_sampler_table>();
  // sample_scanned is ABI 1.1: a 1.0 plugin's table ends before it.
  const bool has_slot = table.struct_size >= offsetof(ts_sampler_table, sample_scanned) +
                                                 sizeof(table.sample_scanned) &&
                        table.sample_scanned != nullptr;
  const auto n = static_cast<int32_t>(rows.size());
  if (has_slot && !scans.empty()) {
    return table.sample_scanned(sampler.get(), rows.data(), scans.data(), n, vocab, results);
  }
  return table.sample(sampler.get(), rows.data(), n, vocab, results);
}

}  // namespace tessera
