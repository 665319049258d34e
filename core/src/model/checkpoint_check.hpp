// Checks a checkpoint against the tensors a DeepSeek-V4 config needs (dsv4_weight_plan.hpp)
// before any weight byte is read: every problem is collected, so one run names everything that
// is wrong, and each good tensor becomes a LoadJob saying how its stored bytes decode. Used by
// the CPU loader (dsv4_weights.cpp, which decodes to fp32) and the device upload
// (device_weights.cpp, which keeps the stored formats).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/dsv4_tensor_names.hpp"
#include "model/dsv4_weight_plan.hpp"

namespace tessera::dsv4 {

inline constexpr int64_t kFp8Block = 128;  // weight_block_size [128, 128]
inline constexpr int64_t kFp4Group = 32;   // one UE8M0 scale per 32 inputs

enum class Decode { Convert, Fp8Blocks, Fp4Groups, Table };

struct LoadJob {
  const TensorSpec* spec = nullptr;
  const StoredTensor* weight = nullptr;
  const StoredTensor* scale = nullptr;
  Decode decode = Decode::Convert;
};

struct CheckedCheckpoint {
  std::vector<LoadJob> jobs;  // one per spec, in the specs' order
  std::size_t ignored = 0;    // MTP tensors (mtp.*) skipped on purpose
};

// Throws tessera::Error "checkpoint DIR does not match its config (N problems): ..." listing
// (up to 25 of) them. `catalog` and `specs` must outlive the jobs.
[[nodiscard]] CheckedCheckpoint check_checkpoint(const std::map<std::string, StoredTensor>& catalog,
                                                 const std::vector<TensorSpec>& specs,
                                                 const std::filesystem::path& model_dir);

// A TokenTable tensor (tid2eid, I64 or I32) as int32, each id checked against spec.table_limit;
// throws tessera::Error naming the token and the id.
[[nodiscard]] std::vector<int32_t> decode_token_table(const TensorSpec& spec,
                                                      const StoredTensor& stored);

// The stored bytes of a job (weight and scale).
[[nodiscard]] uint64_t job_bytes(const LoadJob& job);
// "BF16 x12 (3.1 MiB), F8_E4M3 x40 (20.0 MiB), ...": what a load read, by stored type.
[[nodiscard]] std::string dtype_summary(const std::vector<LoadJob>& jobs);

}  // namespace tessera::dsv4
