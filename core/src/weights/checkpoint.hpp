// A Hugging Face checkpoint directory as one set of named tensors: either a single
// model.safetensors, or model.safetensors.index.json ({"weight_map": {tensor: shard}}) plus the
// shards it names. Every shard is memory-mapped and validated (safetensors.hpp); the index must
// agree with the shards (each listed tensor present in its shard, no tensor in two shards, shard
// names plain relative file names).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weights/safetensors.hpp"

namespace tessera::weights {

struct CheckpointTensor {
  const TensorInfo* info = nullptr;  // name, dtype, shape
  const SafetensorsFile* file = nullptr;
  [[nodiscard]] std::span<const std::byte> bytes() const { return file->data(*info); }
  [[nodiscard]] std::string file_name() const { return file->path().filename().string(); }
};

class Checkpoint {
 public:
  // `path` is a directory (index or model.safetensors or, failing both, every *.safetensors in
  // it) or a single .safetensors file. Throws tessera::Error naming the file and the reason.
  [[nodiscard]] static Checkpoint open(const std::filesystem::path& path);

  [[nodiscard]] const CheckpointTensor* find(std::string_view name) const;  // nullptr if absent
  [[nodiscard]] const std::map<std::string, CheckpointTensor, std::less<>>& tensors() const {
    return tensors_;
  }
  [[nodiscard]] std::size_t num_files() const { return files_.size(); }
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

 private:
  void add_file(const std::filesystem::path& path);

  std::filesystem::path root_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // stable addresses for CheckpointTensor
  std::map<std::string, CheckpointTensor, std::less<>> tensors_;
};

}  // namespace tessera::weights
