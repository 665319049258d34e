// The text `tessera bench model` prints: what was sized, the hardware figures with their sources,
// the collectives of a step, and one row per batch size (bench/sizing_model.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/hardware_figures.hpp"
#include "bench/sizing_model.hpp"

namespace tessera::bench {

[[nodiscard]] std::string format_sizing_table(const ModelFootprint& model,
                                              const SizingOptions& options,
                                              const HardwareFigures& hardware,
                                              const std::vector<int64_t>& batches);

}  // namespace tessera::bench
