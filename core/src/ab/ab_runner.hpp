// Runs an A/B comparison: for every prompt and seed both arms generate (free-running, the arm
// that goes first alternates so warm caches favour neither), then every distinct arm-A output is
// scored by both arms teacher-forced. Single-threaded; the arms run one after the other on the
// same cores, so their speeds are comparable.
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
