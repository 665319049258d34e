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
    R"(tokens do not depend on it"}},"additionalProperties":false})";

struct SamplerOptions {
  int threads = 0;  // 0: the host's parallel_for
};

// options_json may be NULL or empty (defaults). Unknown keys, wrong types and out-of-range
// values give TS_ERR_INVALID_ARGUMENT naming the key.
[[nodiscard]] ts_status parse_sampler_options(const char* options_json,
                                              SamplerOptions& out) noexcept;

}  // namespace tessera::sampler
