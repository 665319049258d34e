// Runs an A/B comparison: for every prompt and seed both arms generate (free-running, the arm
// that goes first alternates so warm caches favour neither), then every distinct arm-A output is
// scored by both arms teacher-forced. Single-threaded; the arms run one after the other on the
// same cores, so their speeds are comparable.
//
// Path: when both arms have tensor_parallel = 1, each generates with runtime/generator.cpp and
// scores on its Runtime (prompt in one prefill). When either runs tensor-parallel, both generate
// through the serving engine (engine_generation.hpp) and score through executors
// (teacher_forced.hpp), so the arms differ only in their configuration. OpenBLAS's thread count
// is process-wide: before each arm runs it is set to that arm's threads / tensor_parallel, as
// its executor would.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ab/ab_arm.hpp"
#include "ab/ab_report.hpp"
#include "ab/prompt_set.hpp"

namespace tessera::ab {

// Called with a line of progress ("free-running 3/8", ...); may be empty.
using ProgressFn = std::function<void(const std::string&)>;

// `prompts` must be tokenized (tokenize_prompts).
AbReport run_ab(ArmPair& arms, const std::vector<AbPrompt>& prompts, const AbOptions& options,
                const ProgressFn& progress = {});

ArmDescription describe_arm(const Arm& arm);

}  // namespace tessera::ab
