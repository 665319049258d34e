// Teacher-forced scoring: both arms read the same token sequence (a prompt and a continuation —
// in `tessera ab`, arm A's own output) and every position's next-token distributions are
// compared (divergence.hpp). Each arm runs the serving path: the prompt in one prefill (logits
// for every prompt token), then the continuation one decode step at a time, so cache formats and
// attention kernels are exercised exactly as during generation.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ab/divergence.hpp"
#include "executor/executor.hpp"
#include "runtime/runtime.hpp"

namespace tessera::ab {

using ArmShapes = std::array<SamplingShape, 2>;  // arm A's, arm B's

// Row r of the result compares the logits after tokens [0, r] of prompt ++ continuation, which
// predict token r + 1; the last row predicts what follows the continuation (chosen = -1).
// Size: prompt.size() + continuation.size(). Both runtimes need the same vocabulary. shapes: how
// arm A and arm B sample (PositionDivergence::tv).
std::vector<PositionDivergence> score_teacher_forced(Runtime& a, Runtime& b,
                                                     std::span<const int32_t> prompt,
                                                     std::span<const int32_t> continuation,
                                                     const ArmShapes& shapes = {});

// The same through tensor-parallel executors (arms with tensor_parallel > 1; both arms then take
// this path so that they differ only in their configuration). The executor keeps logits for the
// last token of a chunk only, so every token — prompt included — is fed as its own step: the
// prompt rows come from decode steps here, from one prefill in the overload above.
std::vector<PositionDivergence> score_teacher_forced(Executor& a, Executor& b,
                                                     std::span<const int32_t> prompt,
                                                     std::span<const int32_t> continuation,
                                                     const ArmShapes& shapes = {});

}  // namespace tessera::ab
