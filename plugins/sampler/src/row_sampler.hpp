// One row end to end: validate -> raw logprobs -> penalties -> greedy argmax, or temperature and
// truncation then a counter-based draw. Pure function of the row (and its seed and counter): the
// workspace is scratch only.
//
// Without top-p (the common case) the weights come from the vectorised exp (exp_weights.hpp) and
// the draw is certified against libm's (certified_draw.hpp), falling back to the scalar path when
// it cannot be: the token is the scalar path's in every case. With top-p the scalar path runs.
#pragma once

#include <cstdint>
#include <vector>

#include "certified_top_p.hpp"
#include "exp_weights.hpp"
#include "penalties.hpp"
#include "row_validation.hpp"
#include "tessera/plugin_abi.h"
#include "truncation.hpp"

namespace tessera::sampler {

// Scratch of one worker thread, reused across rows and calls.
struct RowWorkspace {
  std::vector<float> values;   // [vocab] penalised / top-k'd logits, then scalar-path weights
  std::vector<float> weights;  // [vocab] fast weights
  BlockWeights sums;
  TopPScratch top_p;
  PenaltyScratch penalties;
  TruncationScratch truncation;
};

// Fills result (token, logprob, n_top and the top arrays). On failure result.token = -1,
// result.n_top = 0 and the error says why (without the row index).
// scan (may be null): the host's ts_row_scan of the row; used in place of the row's own scan when
// consistent with it (logits[argmax] == max), so a greedy row reads nothing more.
[[nodiscard]] RowError sample_row(const ts_sampler_row& row, const ts_row_scan* scan, int32_t vocab,
                                  ts_sampler_result& result, RowWorkspace& workspace);

}  // namespace tessera::sampler
