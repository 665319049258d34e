// One side of an A/B comparison: a configuration file turned into a Runtime, the sampling
// parameters and repetition guard it runs with, and a tokenizer. load_arm_pair() builds both arms
// and lets B share A's weights (one copy in memory) when both name the same model directory —
// the usual case, where only plugins or options differ.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "generation/repetition_guard.hpp"
#include "runtime/runtime.hpp"
#include "tessera/plugin_abi.h"
#include "tokenizer/tokenizer.hpp"

namespace tessera::ab {

struct Arm {
  std::string name;  // "A" | "B"
  std::filesystem::path config_path;
  Config config;
  std::unique_ptr<Runtime> runtime;
  // Sampling when a request says nothing: keys written in the arm's [sampler.defaults] win, then
  // the model's generation_config.json, then the documented defaults (docs/ab.md explains why
  // the file an A/B names outranks the model here, unlike in serving).
  SamplingDefaults sampling;
  std::map<std::string, std::string> sampling_source;  // key -> where its value came from
  std::string repetition_mode = "stop";
  generation::RepetitionGuardOptions repetition;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  bool tokenizer_is_synthetic = false;  // no tokenizer.json: one token per id (docs/ab.md)

  // The sampler parameters of one run with `seed`.
  ts_sampling_params sampling_params(uint64_t seed) const;
};

struct ArmPair {
  Arm a, b;
  bool shared_weights = false;
};

// Loads both configuration files and builds the runtimes. Throws tessera::Error (ConfigError for
// bad files) when a configuration cannot run here (a device other than cpu) or when the two
// models' vocabularies differ. extra_plugin_dirs are searched first.
ArmPair load_arm_pair(const std::filesystem::path& config_a, const std::filesystem::path& config_b,
                      const std::vector<std::filesystem::path>& extra_plugin_dirs = {});

// The same from configurations already in memory (tests).
ArmPair make_arm_pair(Config config_a, Config config_b,
                      const std::vector<std::filesystem::path>& extra_plugin_dirs = {});

// Keys whose values differ between the two configurations, as "section.key" -> (A, B), in a fixed
// order; plugin option tables compare as JSON text.
std::vector<std::array<std::string, 3>> config_differences(const Arm& a, const Arm& b);

}  // namespace tessera::ab
