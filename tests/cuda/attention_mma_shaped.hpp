// The shaped run of the "mma" plugin (ABI 1.7, plugin_abi.h: plan_shape, run_shaped), checked
// against its own run() on the same case: what CUDA graphs of a decode step rely on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention_case.hpp"
#include "plugin_loader.hpp"

namespace tessera::cudatest {

// "" when a shaped run of case c (three padding tokens more, twice the slots and visible
// entries) writes run()'s bits (`eager`, [n_tokens, heads, dim]) and entries_scored for the
// real tokens and zeros for the padding ones, as one call and as DESCRIBE then LAUNCH; and a
// batch larger than the shape, or a call without the host workspace, is refused by name.
// c.layer.attn_sink: the sink on the device.
std::string check_shaped_run(const AttentionInstance& inst, const HostCase& c,
                             const std::vector<float>& eager, int64_t eager_scored);

}  // namespace tessera::cudatest
