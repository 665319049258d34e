// Which sampling parameters a request gets when it says nothing: the model's own
// generation_config.json where it sets a value, else the TOML [sampler.defaults]. Each value
// remembers where it came from, so start-up can log what is in force and why (DeepSeek models
// need sampling; greedy decoding made the incident behind Tessera).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "config/config.hpp"

namespace tessera::generation {

struct ResolvedDefaults {
  SamplingDefaults values;
  std::map<std::string, std::string>
      source;                              // key -> "generation_config.json" | "[sampler.defaults]"
  bool model_recommends_sampling = false;  // do_sample or temperature > 0 in generation_config
  std::string describe() const;            // one log line
};

// Reads <model_dir>/generation_config.json if present (bad JSON or types: tessera::Error naming
// the file and key).
ResolvedDefaults resolve_sampling_defaults(const SamplingDefaults& toml_defaults,
                                           const std::filesystem::path& model_dir);

// The warning for a greedy request on a model that recommends sampling; empty when not needed.
std::string greedy_warning(const ResolvedDefaults& defaults, double request_temperature);

}  // namespace tessera::generation
