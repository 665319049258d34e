// One row end to end: validate -> raw logprobs -> penalties -> greedy argmax, or temperature and
// truncation then a counter-based draw. Pure function of the row (and its seed and counter): the
// workspace is scratch only.
//
// A row without top-k draws by rejection (rejection_draw.hpp; top-p and min-p keep or drop its
// proposals, kept_set.hpp) unless the option draw = "inverse_cdf" asks for the inverse CDF. The
// inverse-CDF draw (top-k rows, or that option) takes its weights from the vectorised exp
// (exp_weights.hpp) and certifies the draw against libm's (certified_draw.hpp,
// certified_top_p.hpp), falling back to the scalar path when it cannot be: its token is the scalar
// path's in every case.
#pragma once

#include <cstdint>
#include <vector>

#include "certified_top_p.hpp"
#include "exp_weights.hpp"
#include "kept_set.hpp"
#include "penalties.hpp"
#include "rejection_draw.hpp"
#include "row_validation.hpp"
#include "sampler_options.hpp"
#include "tessera/plugin_abi.h"
#include "truncation.hpp"

namespace tessera::sampler {

// Scratch of one worker thread, reused across rows and calls.
struct RowWorkspace {
  std::vector<float> values;        // [vocab] penalised / top-k'd logits, then scalar-path weights
  std::vector<float> weights;       // [vocab] fast weights
  std::vector<float> group_max;     // [logit_group_count(vocab)] when the row finds its own
  std::vector<double> race_bounds;  // [logit_group_count(vocab)] the coupled draw's group bounds
  RejectionEnvelope rejection;
  KeptSetScratch kept;
  BlockWeights sums;
  TopPScratch top_p;
  PenaltyScratch penalties;
  TruncationScratch truncation;
};

// What the host already found of the row (both may be null): its ts_row_scan, and its group
// maxima (ABI 1.2, with a scan). Used in place of the row's own scan when consistent with it
// (logits[argmax] == max, and that column's group max == max), so a greedy row reads nothing
// more and a rejection draw only the groups it proposes.
struct RowHints {
  const ts_row_scan* scan = nullptr;
  const float* group_max = nullptr;
};

// A row's rejection envelope built before its turn (prepare_row).
struct PreparedRow {
  const ts_sampler_row* row = nullptr;  // the row it was built for (null: none)
  RejectionEnvelope envelope;
};

// Builds the envelope sample_row would build for a row drawn by rejection from the host's group
// maxima without penalties, and asks for its first proposals' logits, so that they arrive
// while the thread does other work before sample_row(row, ..., &prepared). Sets prepared.row to
// &row, or to null for any other row (or when the scratch cannot grow: sample_row then builds the
// envelope itself). Reads only what sample_row would; never throws.
void prepare_row(const ts_sampler_row& row, const RowHints& hints, int32_t vocab, DrawMethod draw,
                 PreparedRow& prepared) noexcept;

// Fills result (token, logprob, n_top and the top arrays). On failure result.token = -1,
// result.n_top = 0 and the error says why (without the row index). prepared: used only when
// prepare_row built it for this row (prepared->row == &row) since the row was last changed.
[[nodiscard]] RowError sample_row(const ts_sampler_row& row, const RowHints& hints, int32_t vocab,
                                  DrawMethod draw, ts_sampler_result& result,
                                  RowWorkspace& workspace, const PreparedRow* prepared = nullptr);

// Asks for the cache lines sample_row reads first in a row drawn by rejection from the host's
// group maxima (its maxima and the 1 KiB block holding its max): the vocabulary head wrote them,
// often on the other core, so a thread that knows a later row asks while it samples this one.
// Does nothing for other rows; reads nothing, so a bad row is left to sample_row.
void prefetch_row_start(const ts_sampler_row& row, const RowHints& hints, int32_t vocab,
                        DrawMethod draw);

}  // namespace tessera::sampler
