// The step plan rank 0 broadcasts to the other ranks (executor/step_plan.hpp): every field comes
// back as written, scan-only chunks included; truncated, trailing or malformed bytes are refused
// with an error naming what was wrong.
#include "executor/step_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/check.hpp"

namespace tessera {
namespace {

StepPlan sample_plan() {
  StepPlan plan;
  plan.ops = {{CacheOpKind::kCreate, 7, 0},
              {CacheOpKind::kRestore, 8, 3},
              {CacheOpKind::kDropSnapshot, 0, 3}};
  PlannedChunk a;
  a.sequence = 7;
  a.tokens = {1, 2, 3};
  a.snapshots = {{128, 9}};
  PlannedChunk b;
  b.sequence = 8;
  b.tokens = {42};
  b.scan_only = true;
  plan.chunks = {a, b};
  return plan;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    (void)deserialize_plan(bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StepPlan, EveryFieldRoundTrips) {
  const StepPlan plan = sample_plan();
  const StepPlan back = deserialize_plan(serialize_plan(plan));
  EXPECT_FALSE(back.shutdown);
  ASSERT_EQ(back.ops.size(), plan.ops.size());
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    EXPECT_EQ(back.ops[i].kind, plan.ops[i].kind);
    EXPECT_EQ(back.ops[i].sequence, plan.ops[i].sequence);
    EXPECT_EQ(back.ops[i].snapshot, plan.ops[i].snapshot);
  }
  ASSERT_EQ(back.chunks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.chunks[i].sequence, plan.chunks[i].sequence);
    EXPECT_EQ(back.chunks[i].tokens, plan.chunks[i].tokens);
    EXPECT_EQ(back.chunks[i].scan_only, plan.chunks[i].scan_only);
    ASSERT_EQ(back.chunks[i].snapshots.size(), plan.chunks[i].snapshots.size());
  }
  EXPECT_EQ(back.chunks[0].snapshots[0].length, 128);
  EXPECT_EQ(back.chunks[0].snapshots[0].snapshot, 9u);
  StepPlan stop;
  stop.shutdown = true;
  EXPECT_TRUE(deserialize_plan(serialize_plan(stop)).shutdown);
}

TEST(StepPlan, BadBytesAreRefused) {
  const std::vector<uint8_t> bytes = serialize_plan(sample_plan());
  for (size_t n = 0; n < bytes.size(); ++n) {  // every truncation
    EXPECT_NE(error_of({bytes.begin(), bytes.begin() + static_cast<long>(n)}), "") << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(error_of(longer).find("trailing bytes"), std::string::npos) << error_of(longer);
  std::vector<uint8_t> flag = bytes;
  flag.back() = 2;  // the last chunk's scan_only byte
  EXPECT_NE(error_of(flag).find("scan_only byte 2"), std::string::npos) << error_of(flag);
  std::vector<uint8_t> op = bytes;
  op[9] = 9;  // the first cache op's kind
  EXPECT_NE(error_of(op).find("unknown cache op 9"), std::string::npos) << error_of(op);
}

}  // namespace
}  // namespace tessera
