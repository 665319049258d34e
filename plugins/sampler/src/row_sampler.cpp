#include "row_sampler.hpp"

#include <algorithm>
#include <optional>
#include <span>

#include "certified_draw.hpp"
#include "certified_top_p.hpp"
#include "counter_rng.hpp"
#include "group_scan.hpp"
#include "kept_set.hpp"
#include "logprobs.hpp"
#include "race_draw.hpp"
#include "rejection_draw.hpp"
#include "row_scan.hpp"

namespace tessera::sampler {
namespace {

std::span<float> sized(std::vector<float>& buffer, int32_t vocab) {
  if (buffer.size() < static_cast<size_t>(vocab)) {
    buffer.resize(static_cast<size_t>(vocab));
  }
  return {buffer.data(), static_cast<size_t>(vocab)};
}

// Greedy decoding: the largest value, the lowest id among equals (std::max_element's choice).
int32_t argmax_lowest_id(std::span<const float> values, float max) {
  return first_index_of(values, max);
}

// The scalar path: libm exp per token, then truncation and the inverse-CDF draw in token order.
// values: [vocab] penalised (and possibly top-k'd) logits, overwritten with the weights.
int32_t scalar_draw(std::span<float> values, const ts_sampling_params& params, double u,
                    TruncationScratch& scratch) {
  logits_to_sampling_weights(values, params, scratch);
  return draw_from_weights(values, u);
}

// Top-p, min-p and the draw on `weights` (within `bound` of libm's), each certified to decide as
// the scalar path would; -1 when one cannot be.
int32_t certified_decisions(std::span<const float> logits, float l_max,
                            const ts_sampling_params& params, double u, const WeightBound& bound,
                            std::span<float> weights, RowWorkspace& ws) {
  if (params.top_p < 1.0f && !certified_top_p(weights, ws.sums, params.top_p, bound, ws.top_p)) {
    return -1;
  }
  if (params.min_p > 0.0f) {
    certified_min_p(logits, l_max, params.temperature, params.min_p, weights, ws.sums, bound);
  }
  return certified_draw(weights, ws.sums, u, bound);
}

// Whether the row draws by rejection: a temperature row without top-k (top-p and min-p keep or
// drop its proposals: kept_set.hpp).
bool rejection_row(const ts_sampling_params& params, int32_t vocab, DrawMethod draw) {
  return draw == DrawMethod::kRejection && params.temperature > 0.0f &&
         (params.top_k <= 0 || params.top_k >= vocab);
}

// Whether the row races on its raw logits (no top-k; penalties checked by the caller), so that
// its group maxima spare the race a pass.
bool race_on_raw_row(const ts_sampling_params& params, int32_t vocab, DrawMethod draw) {
  return draw == DrawMethod::kRace && params.temperature > 0.0f &&
         (params.top_k <= 0 || params.top_k >= vocab);
}

bool truncated(const ts_sampling_params& params) {
  return params.top_p < 1.0f || params.min_p > 0.0f;
}

// The host's scan when consistent with the row (one load checks it), else null.
const ts_row_scan* consistent_scan(std::span<const float> raw, const RowHints& hints) {
  const ts_row_scan* scan = hints.scan;
  const auto vocab = static_cast<int64_t>(raw.size());
  return scan != nullptr && scan->argmax >= 0 && scan->argmax < vocab &&
                 raw[static_cast<size_t>(scan->argmax)] == scan->max
             ? scan
             : nullptr;
}

// The host's group maxima when consistent with its consistent scan (the argmax's group max is
// the max), else empty.
std::span<const float> consistent_groups(const ts_row_scan* scan, const RowHints& hints,
                                         int32_t vocab) {
  if (scan == nullptr || hints.group_max == nullptr ||
      hints.group_max[logit_group_of(scan->argmax)] != scan->max) {
    return {};
  }
  return {hints.group_max, static_cast<size_t>(logit_group_count(vocab))};
}

// Top-p and min-p on the vectorised weights, certified to keep the scalar path's set (the
// positive weights), retried on libm's weights; false when neither can be certified.
bool certified_kept_set(std::span<const float> logits, float l_max,
                        const ts_sampling_params& params, std::span<float> weights,
                        RowWorkspace& ws) {
  fast_exp_weights(logits, l_max, params.temperature, weights, ws.sums);
  const WeightBound* bound = &kFastWeights;
  if (params.top_p < 1.0f &&
      !certified_top_p(weights, ws.sums, params.top_p, kFastWeights, ws.top_p)) {
    libm_exp_weights(logits, l_max, params.temperature, weights, ws.sums);
    bound = &kLibmWeights;
    if (!certified_top_p(weights, ws.sums, params.top_p, kLibmWeights, ws.top_p)) {
      return false;
    }
  }
  if (params.min_p > 0.0f) {
    certified_min_p(logits, l_max, params.temperature, params.min_p, weights, ws.sums, *bound);
  }
  return true;
}

// The coupled draw (race_draw.hpp) over the row's kept set: every token, the top-k survivors
// (removed ones are -inf), or for top-p and min-p the tokens the scalar path's weights keep
// (certified_kept_set, else the scalar path itself).
// raw_groups: the raw row's group maxima when known (used when the race runs on the raw row).
int32_t race_row(const ts_sampler_row& row, std::span<const float> raw, float raw_max,
                 std::span<const float> raw_groups, RowWorkspace& ws) {
  const ts_sampling_params& params = row.params;
  const int32_t vocab = static_cast<int32_t>(raw.size());
  const bool penalised = penalties_active(params);
  const bool top_k = params.top_k > 0 && params.top_k < vocab;
  std::span<const float> logits = raw;
  float l_max = raw_max;
  std::span<const float> groups = raw_groups;
  if (penalised || top_k) {
    groups = {};
    const std::span<float> values = sized(ws.values, vocab);
    std::copy(raw.begin(), raw.end(), values.begin());
    apply_penalties(row, values, ws.penalties);
    apply_top_k(values, params.top_k, ws.truncation.selection);
    l_max = scan_row(values).max;  // top-k keeps the max, so this is the penalised row's max
    logits = values;
  }
  std::span<const float> kept;
  if (truncated(params)) {
    const std::span<float> weights = sized(ws.weights, vocab);
    if (!certified_kept_set(logits, l_max, params, weights, ws)) {
      std::copy(logits.begin(), logits.end(), weights.begin());
      ts_sampling_params already_cut = params;
      already_cut.top_k = 0;  // logits already hold the top-k cut
      logits_to_sampling_weights(weights, already_cut, ws.truncation);
    }
    kept = weights;
  }
  ws.race_bounds.resize(static_cast<size_t>(logit_group_count(vocab)));
  return race_draw(logits, l_max, params.temperature, params.seed, row.rng_counter, groups, kept,
                   ws.race_bounds);
}

// raw_groups: the raw row's group maxima (empty when not found: the row's own pass finds them).
// prepared: the row's envelope when prepare_row built it (from raw, raw_groups and raw_max).
int32_t temperature_draw(const ts_sampler_row& row, std::span<const float> raw, float raw_max,
                         std::span<const float> raw_groups, DrawMethod draw, RowWorkspace& ws,
                         const PreparedRow* prepared) {
  const ts_sampling_params& params = row.params;
  if (draw == DrawMethod::kRace) {
    return race_row(row, raw, raw_max, raw_groups, ws);
  }
  const double u = counter_uniform(params.seed, row.rng_counter);
  const int32_t vocab = static_cast<int32_t>(raw.size());
  const bool penalised = penalties_active(params);
  const bool top_k = params.top_k > 0 && params.top_k < vocab;
  std::span<float> values;  // a copy of the logits only when something changes them
  if (penalised || top_k) {
    values = sized(ws.values, vocab);
    std::copy(raw.begin(), raw.end(), values.begin());
    apply_penalties(row, values, ws.penalties);
  }
  if (rejection_row(params, vocab, draw)) {
    std::span<const float> logits = raw;
    std::span<const float> groups = raw_groups;
    float l_max = raw_max;
    if (penalised || groups.empty()) {
      logits = values.empty() ? raw : values;
      ws.group_max.resize(static_cast<size_t>(logit_group_count(vocab)));
      l_max = scan_row_groups(logits, ws.group_max).max;
      groups = ws.group_max;
    }
    const bool ready = prepared != nullptr && prepared->row == &row;
    std::optional<KeptSet> kept;  // only a truncated row's proposals are filtered
    if (truncated(params)) {
      const RejectionEnvelope& envelope = ready ? prepared->envelope : ws.rejection;
      kept.emplace(logits, groups, l_max, params.temperature, params.top_p, params.min_p,
                   envelope.block_prefix, ws.kept);
    }
    KeptSet* const filter = kept ? &*kept : nullptr;
    const int32_t token = ready
                              ? draw_proposals(raw, raw_max, params.temperature, params.seed,
                                               row.rng_counter, prepared->envelope, filter)
                              : rejection_draw(logits, groups, l_max, params.temperature,
                                               params.seed, row.rng_counter, ws.rejection, filter);
    if (token >= 0) {
      return token;
    }
    // Every proposal rejected (probability < 1e-28): the inverse-CDF draw below.
  }
  apply_top_k(values, params.top_k, ws.truncation.selection);  // no-op on an empty span
  const std::span<const float> logits = values.empty() ? raw : values;
  // Removed tokens are -inf, so the max of the survivors is the max of everything.
  const float l_max = values.empty() ? raw_max : scan_row(values).max;
  const std::span<float> weights = sized(ws.weights, vocab);
  fast_exp_weights(logits, l_max, params.temperature, weights, ws.sums);
  int32_t token = certified_decisions(logits, l_max, params, u, kFastWeights, weights, ws);
  if (token >= 0) {
    return token;
  }
  // Too close to call within the fast weights' error: decide on libm's weights themselves.
  libm_exp_weights(logits, l_max, params.temperature, weights, ws.sums);
  token = certified_decisions(logits, l_max, params, u, kLibmWeights, weights, ws);
  if (token >= 0) {
    return token;
  }

  if (values.empty()) {
    values = sized(ws.values, vocab);
    std::copy(raw.begin(), raw.end(), values.begin());
  }
  ts_sampling_params already_cut = params;
  already_cut.top_k = 0;  // values already hold the top-k cut; repeating it would change nothing
  return scalar_draw(values, already_cut, u, ws.truncation);
}

}  // namespace

void prepare_row(const ts_sampler_row& row, const RowHints& hints, int32_t vocab, DrawMethod draw,
                 PreparedRow& prepared) noexcept {
  prepared.row = nullptr;
  if (row.logits == nullptr || vocab <= 0 || !rejection_row(row.params, vocab, draw) ||
      penalties_active(row.params)) {
    return;
  }
  const std::span<const float> raw(row.logits, static_cast<size_t>(vocab));
  const ts_row_scan* scan = consistent_scan(raw, hints);
  const std::span<const float> groups = consistent_groups(scan, hints, vocab);
  if (groups.empty()) {
    return;
  }
  try {
    build_envelope(raw, groups, scan->max, row.params.temperature, row.params.seed, row.rng_counter,
                   prepared.envelope);
    prepared.row = &row;
  } catch (...) {  // bad_alloc growing the envelope: sample_row builds it (and says why)
  }
}

RowError sample_row(const ts_sampler_row& row, const RowHints& hints, int32_t vocab,
                    DrawMethod draw, ts_sampler_result& result, RowWorkspace& workspace,
                    const PreparedRow* prepared) {
  result.token = -1;
  result.n_top = 0;
  if (RowError e = validate_row_arguments(row, vocab, result, hints.scan); e.failed()) {
    return e;
  }
  if (row.logits == nullptr) {  // ABI 1.5: a greedy row the host sent without its values
    if (hints.scan->argmax < 0) {
      return RowError{TS_ERR_NUMERIC,
                      "the host's scan found a NaN or infinity in the logits (logits must be "
                      "finite)"};
    }
    result.token = hints.scan->argmax;
    result.logprob = 0.0f;
    return {};
  }
  const std::span<const float> raw(row.logits, static_cast<size_t>(vocab));
  // The host's scan (ABI 1.1) saves this pass over the row; one load checks it is consistent.
  const ts_row_scan* host_scan = consistent_scan(raw, hints);
  const bool scanned = host_scan != nullptr;
  // The raw row's group maxima, when known.
  std::span<const float> groups = consistent_groups(host_scan, hints, vocab);
  RowMaxFinite scan;
  if (scanned) {
    scan = RowMaxFinite{host_scan->max, true};
  } else if ((rejection_row(row.params, vocab, draw) || race_on_raw_row(row.params, vocab, draw)) &&
             !penalties_active(row.params)) {
    workspace.group_max.resize(static_cast<size_t>(logit_group_count(vocab)));
    scan = scan_row_groups(raw, workspace.group_max);  // one pass: the scan and the groups
    groups = workspace.group_max;
  } else {
    scan = scan_row(raw);
  }
  if (!scan.all_finite) {
    return validate_row_logits(row.logits, vocab);  // names the first bad value
  }
  const ts_sampling_params& params = row.params;

  int32_t token = 0;
  if (params.temperature == 0.0f) {
    if (penalties_active(params)) {
      const std::span<float> values = sized(workspace.values, vocab);
      std::copy(raw.begin(), raw.end(), values.begin());
      apply_penalties(row, values, workspace.penalties);
      token = argmax_lowest_id(values, scan_row(values).max);
    } else {
      token = scanned ? host_scan->argmax : argmax_lowest_id(raw, scan.max);
    }
  } else {
    token = temperature_draw(row, raw, scan.max, groups, draw, workspace, prepared);
  }

  if (params.logprobs > 0 || params.top_logprobs > 0) {
    const RawLogSoftmax log_softmax = raw_log_softmax(row.logits, vocab);
    result.logprob = log_softmax.of(row.logits[token]);
    if (params.top_logprobs > 0) {
      fill_top_logprobs(row.logits, vocab, log_softmax, params.top_logprobs, result);
    }
  } else {
    result.logprob = 0.0f;
  }
  result.token = token;
  return {};
}

void prefetch_row_start(const ts_sampler_row& row, const RowHints& hints, int32_t vocab,
                        DrawMethod draw) {
  if (row.logits == nullptr || hints.group_max == nullptr || hints.scan == nullptr ||
      !rejection_row(row.params, vocab, draw) || penalties_active(row.params)) {
    return;
  }
  prefetch_floats<2>(hints.group_max, logit_group_count(vocab));
  const int64_t argmax = hints.scan->argmax;
  if (argmax >= 0 && argmax < vocab) {
    prefetch_logit_block({row.logits, static_cast<size_t>(vocab)}, argmax / TS_LOGIT_GROUP_BLOCK);
  }
}

}  // namespace tessera::sampler
