// One sampler-plugin call for the host's callers (the engine's BatchSampler, `tessera generate`):
// the rows with the model's row scans through the ABI 1.1 slot sample_scanned when the plugin has
// it and every row's scan is usable, otherwise sample. The one place that knows the slot is
// optional.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/dsv4_model.hpp"
#include "plugins/plugin_instance.hpp"

namespace tessera {

// The row scans of `rows` (logits row indices) from the forward, kept in `store`, when it made
// them (Logits::scans) and every such row is finite; empty otherwise.
std::span<const ts_row_scan> usable_row_scans(const dsv4::Logits& logits,
                                              std::span<const int64_t> rows,
                                              std::vector<ts_row_scan>& store);

// sample_scanned(rows, scans) when scans is non-empty ([rows.size()]) and the plugin's table has
// the slot; sample(rows) otherwise.
ts_status call_sampler(const PluginInstance& sampler, std::span<const ts_sampler_row> rows,
                       std::span<const ts_row_scan> scans, int32_t vocab,
                       ts_sampler_result* results);

}  // namespace tessera
