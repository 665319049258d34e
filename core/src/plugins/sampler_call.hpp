// One sampler-plugin call for the host's callers (the engine's BatchSampler, `tessera generate`):
// the rows with what the model's vocabulary head found of them — through the ABI 1.2 slot
// sample_grouped (row scans and column-group maxima) or the 1.1 slot sample_scanned (row scans)
// when the plugin has it and every row's hints are usable, otherwise sample. The one place that
// knows those slots are optional.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/logits.hpp"
#include "util/plugin_instance.hpp"

namespace tessera {

// The forward's findings for the rows to sample, in the ABI's shapes; empty when it made none.
struct RowHints {
  std::vector<ts_row_scan> scans;     // [rows]
  std::vector<ts_row_groups> groups;  // [rows], pointing into the Logits' group_max
};

// Fills `hints` for `rows` (logits row indices) from Logits::scans and ::group_max when the
// forward made them and every such row is finite; clears them otherwise, unless one of the rows
// came back without values (a scan-only row, ABI 1.5): then every row keeps its scan, a
// non-finite one with argmax -1 (the plugin answers TS_ERR_NUMERIC for it; for a row with values
// that scan is ignored and the plugin's own pass names the bad value).
void gather_row_hints(const dsv4::Logits& logits, std::span<const int64_t> rows, RowHints& hints);

// Whether the sampler takes greedy rows without their values (ABI 1.5, capability
// "greedy_from_scan"): then the engine asks the forward for a greedy row's scan only.
bool sampler_takes_greedy_from_scan(const PluginInstance& sampler);

// sample_grouped(rows, groups) when hints.groups is non-empty and the plugin's table has the slot;
// else sample_scanned(rows, scans) when hints.scans is and the table has that slot; else
// sample(rows).
ts_status call_sampler(const PluginInstance& sampler, std::span<const ts_sampler_row> rows,
                       const RowHints& hints, int32_t vocab, ts_sampler_result* results);

}  // namespace tessera
