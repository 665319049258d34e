// Options of the "standard" sampler: the JSON Schema the host validates against, and the parser
// the plugin itself runs in check_support() and create() (it trusts no host to have validated).
#pragma once

#include "tessera/plugin_abi.h"

namespace tessera::sampler {

inline constexpr int kMaxThreads = 256;

// Kept in one line with the parser below: change both together.
inline constexpr const char* kOptionsSchemaJson =
    R"({"type":"object","properties":{"threads":{"type":"integer","minimum":0,"maximum":256,)"
    R"("default":0,"description":"rows of one batch are sampled by this many threads of the )"
    R"(sampler's own, or 0: by the host's compute threads (the ones its GEMMs use); the )"
    R"(tokens do not depend on it"},"draw":{"type":"string","enum":["rejection","inverse_cdf",)"
    R"("race"],)"
    R"("default":"rejection","description":"how a row without top_k draws its token: )"
    R"(rejection (an exp per 16 tokens; top_p and min_p pass over the proposals they drop; )"
    R"(docs/sampler.md) or inverse_cdf (an exp per token, the tokens earlier versions gave for )"
    R"(a seed) or race (Gumbel-max with noise per token: nearly equal logits give the same )"
    R"(token, for A/B comparisons; every row, top_k ones too); all are exact draws from the )"
    R"(same distribution"}},"additionalProperties":false})";

// How a row without top-k draws (rejection_draw.hpp; top-p and min-p keep or drop its proposals,
// kept_set.hpp); top-k rows always use the inverse CDF of their kept weights.
// kRace (race_draw.hpp) draws every row, top-k ones included, from noise per token, so that two
// nearly equal rows get the same token (docs/ab.md "Coupling").
enum class DrawMethod { kRejection, kInverseCdf, kRace };

struct SamplerOptions {
  int threads = 0;  // 0: the host's parallel_for
  DrawMethod draw = DrawMethod::kRejection;
};

// options_json may be NULL or empty (defaults). Unknown keys, wrong types and out-of-range
// values give TS_ERR_INVALID_ARGUMENT naming the key.
[[nodiscard]] ts_status parse_sampler_options(const char* options_json,
                                              SamplerOptions& out) noexcept;

}  // namespace tessera::sampler
