#include "plugins/sampler_call.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>

namespace tessera {

void gather_row_hints(const dsv4::Logits& logits, std::span<const int64_t> rows, RowHints& hints) {
  hints.scans.clear();
  hints.groups.clear();
  if (logits.scans.empty()) {
    return;
  }
  bool without_values = false;
  for (const int64_t row : rows) {
    without_values = without_values || logits.row(row) == nullptr;
  }
  bool all_finite = true;
  for (const int64_t row : rows) {
    const ops::RowScan& s = logits.scans[static_cast<size_t>(row)];
    if (!s.finite && !without_values) {
      hints.scans.clear();  // the plugin's own scan names the bad value
      return;
    }
    all_finite = all_finite && s.finite;
    hints.scans.push_back({s.max, s.finite ? s.argmax : -1});
  }
  const int64_t groups = TS_LOGIT_GROUP_COUNT(logits.vocab);
  if (!all_finite || static_cast<int64_t>(logits.group_max.size()) != logits.rows() * groups) {
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    hints.groups.push_back({hints.scans[i], logits.group_max.data() + rows[i] * groups});
  }
}

bool sampler_takes_greedy_from_scan(const PluginInstance& sampler) {
  const ts_plugin_descriptor* d = sampler.descriptor();
  if (d == nullptr || d->abi_minor < 5 || d->capabilities_json == nullptr) {
    return false;
  }
  const nlohmann::json caps = nlohmann::json::parse(d->capabilities_json, nullptr, false);
  const auto it = caps.is_object() ? caps.find("greedy_from_scan") : caps.end();
  return it != caps.end() && it->is_boolean() && it->get<bool>();
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
