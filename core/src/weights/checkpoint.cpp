#include "weights/checkpoint.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "util/check.hpp"

namespace tessera::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

json read_index(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in.good(), "cannot read {}", path.string());
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
}

// Shard names come from a file we do not control: only plain names inside the directory.
void check_shard_name(const std::string& shard, const fs::path& index_path) {
  const fs::path p(shard);
  const bool plain = !shard.empty() && p.is_relative() && p.has_filename() &&
                     std::none_of(p.begin(), p.end(),
                                  [](const fs::path& part) { return part == ".." || part == "."; });
  TS_CHECK(plain, "{}: shard name '{}' is not a plain relative file name", index_path.string(),
           shard);
}

}  // namespace

void Checkpoint::add_file(const fs::path& path) {
  files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path)));
  const SafetensorsFile& file = *files_.back();
  for (const TensorInfo& info : file.tensors()) {
    const auto [it, inserted] = tensors_.try_emplace(info.name, CheckpointTensor{&info, &file});
    TS_CHECK(inserted, "tensor '{}' appears in two files: {} and {}", info.name,
             it->second.file->path().string(), path.string());
  }
}

Checkpoint Checkpoint::open(const fs::path& path) {
  Checkpoint ckpt;
  ckpt.root_ = path;
  if (fs::is_regular_file(path)) {
    ckpt.add_file(path);
    return ckpt;
  }
  TS_CHECK(fs::is_directory(path), "checkpoint path {} is neither a directory nor a file",
           path.string());

  const fs::path index_path = path / kIndexName;
  if (fs::exists(index_path)) {
    const json index = read_index(index_path);
    const auto map_it = index.find("weight_map");
    TS_CHECK(index.is_object() && map_it != index.end() && map_it->is_object(),
             "{}: missing object 'weight_map'", index_path.string());
    std::map<std::string, std::string> weight_map;
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : map_it->items()) {
      TS_CHECK(shard.is_string(), "{}: weight_map['{}'] is not a string", index_path.string(),
               tensor);
      check_shard_name(shard.get<std::string>(), index_path);
      weight_map.emplace(tensor, shard.get<std::string>());
      shards.insert(shard.get<std::string>());
    }
    TS_CHECK(!shards.empty(), "{}: weight_map is empty", index_path.string());
    for (const std::string& shard : shards) {
      TS_CHECK(fs::is_regular_file(path / shard), "{}: shard '{}' does not exist in {}",
               index_path.string(), shard, path.string());
      ckpt.add_file(path / shard);
    }
    for (const auto& [tensor, shard] : weight_map) {
      const CheckpointTensor* found = ckpt.find(tensor);
      TS_CHECK(found != nullptr, "{}: tensor '{}' is listed in shard '{}' but no shard holds it",
               index_path.string(), tensor, shard);
      TS_CHECK(found->file_name() == fs::path(shard).filename().string(),
               "{}: tensor '{}' is listed in shard '{}' but is stored in '{}'", index_path.string(),
               tensor, shard, found->file_name());
    }
    std::size_t unlisted = 0;
    for (const auto& [name, tensor] : ckpt.tensors_) {
      if (!weight_map.contains(name)) {
        if (unlisted++ < 5) {
          spdlog::warn("{}: tensor '{}' in {} is not listed in the index", index_path.string(),
                       name, tensor.file_name());
        }
      }
    }
    if (unlisted > 5) {
      spdlog::warn("{}: {} tensors in total are not listed in the index", index_path.string(),
                   unlisted);
    }
    return ckpt;
  }

  if (fs::exists(path / kSingleName)) {
    ckpt.add_file(path / kSingleName);
    return ckpt;
  }
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
      found.push_back(entry.path());
    }
  }
  TS_CHECK(!found.empty(), "no {} or {} (or any *.safetensors) in {}", kIndexName, kSingleName,
           path.string());
  std::sort(found.begin(), found.end());
  for (const auto& file : found) {
    ckpt.add_file(file);
  }
  return ckpt;
}

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace tessera::weights
