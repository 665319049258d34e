// Checks one sampler row against the ABI contract before anything is computed from it: the
// parameters (ranges follow vLLM's SamplingParams), the token lists, the result arrays and the
// logits (every value must be finite). Messages name the field and the offending value; the
// caller prefixes the row index.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/plugin_abi.h"

namespace tessera::sampler {

struct RowError {
  ts_status_code code = TS_OK;
  std::string message;
  [[nodiscard]] bool failed() const noexcept { return code != TS_OK; }
};

// Parameters, token lists and result arrays: TS_ERR_INVALID_ARGUMENT. The lists' ids are checked
// only when a penalty reads them (penalties_active); otherwise only their counts and pointers.
// Logits may be NULL only for a greedy row given its scan (ABI 1.5), whose argmax is a token or -1.
[[nodiscard]] RowError validate_row_arguments(const ts_sampler_row& row, int32_t vocab,
                                              const ts_sampler_result& result,
                                              const ts_row_scan* scan);

// Logits: TS_ERR_NUMERIC at the first NaN or infinity.
[[nodiscard]] RowError validate_row_logits(const float* logits, int32_t vocab);

}  // namespace tessera::sampler
