// Free-running generation of one arm through the serving engine (engine/engine.hpp) instead of
// runtime/generator.cpp: the path for arms that run tensor-parallel (the engine's executor holds
// the ranks). Requests go one at a time, so speeds compare with the single-sequence path; the
// prefix cache is off, so every prompt is really prefilled (TTFT); the arm's repetition guard
// watches the event stream and, in "stop" mode, aborts the request at the token where it fires
// (later tokens of that step are dropped), as generate() stops there.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ab/ab_arm.hpp"
#include "ab/ab_report.hpp"
#include "engine/engine.hpp"

namespace tessera::ab {

class EngineGeneration {
 public:
  explicit EngineGeneration(Arm& arm);
  ~EngineGeneration();
  EngineGeneration(const EngineGeneration&) = delete;
  EngineGeneration& operator=(const EngineGeneration&) = delete;

  ArmRun run(const std::vector<int32_t>& prompt, uint64_t seed, int64_t max_tokens);

 private:
  Arm& arm_;
  std::unique_ptr<engine::Engine> engine_;
};

}  // namespace tessera::ab
