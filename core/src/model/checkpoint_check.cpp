#include "model/checkpoint_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <set>

#include "util/check.hpp"
#include "util/edit_distance.hpp"
#include "weights/numeric_formats.hpp"

namespace tessera::dsv4 {
namespace {

using weights::DType;

constexpr std::size_t kMaxListedProblems = 25;

bool is_float(DType d) { return d == DType::F32 || d == DType::BF16 || d == DType::F16; }

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Checks each spec against the catalog; collects problems instead of stopping at the first so
// one run names everything that is wrong with a checkpoint.
class Validator {
 public:
  explicit Validator(const std::map<std::string, StoredTensor>& catalog) : catalog_(catalog) {}

  void check(const TensorSpec& spec) {
    const auto it = catalog_.find(spec.name);
    if (it == catalog_.end()) {
      problems_.push_back(
          fmt::format("missing tensor '{}' {} = {}", spec.name, spec.dims, shape_str(spec.shape)));
      return;
    }
    used_.insert(spec.name);
    const StoredTensor& w = it->second;
    LoadJob job{&spec, &w, nullptr, Decode::Convert};
    const auto bad = [&](const std::string& why) {
      problems_.push_back(fmt::format("tensor '{}' (stored as {}): {}", spec.name, w.where(), why));
    };
    const auto expect_shape = [&](const std::vector<int64_t>& shape, const std::string& note) {
      if (w.shape == shape) {
        return true;
      }
      bad(fmt::format("shape {}, but the config implies {}{} = {}", shape_str(w.shape), note,
                      spec.dims, shape_str(shape)));
      return false;
    };
    const auto dtype = weights::dtype_name(w.dtype);
    switch (spec.kind) {
      case StorageKind::TokenTable:
        if (w.dtype != DType::I64 && w.dtype != DType::I32) {
          return bad(fmt::format("dtype {}, expected I64 or I32", dtype));
        }
        job.decode = Decode::Table;
        if (!expect_shape(spec.shape, "")) {
          return;
        }
        break;
      case StorageKind::Dense:
        if (!is_float(w.dtype)) {
          return bad(fmt::format("dtype {}, expected F32, BF16 or F16", dtype));
        }
        if (!expect_shape(spec.shape, "")) {
          return;
        }
        break;
      case StorageKind::Linear:
      case StorageKind::RoutedExpert: {
        const int64_t out = spec.shape[0], in = spec.shape[1];
        if (is_float(w.dtype)) {
          if (!expect_shape(spec.shape, "")) {
            return;
          }
        } else if (w.dtype == DType::F8_E4M3) {
          if (!expect_shape(spec.shape, "")) {
            return;
          }
          job.decode = Decode::Fp8Blocks;
          job.scale = find_scale(spec, w, {ceil_div(out, kFp8Block), ceil_div(in, kFp8Block)},
                                 "one per 128x128 block", true);
          if (job.scale == nullptr) {
            return;
          }
        } else if (spec.kind == StorageKind::RoutedExpert &&
                   (w.dtype == DType::I8 || w.dtype == DType::F4)) {
          if (in % 2 != 0) {
            return bad(fmt::format("FP4 needs an even input width, got {}", in));
          }
          // I8 counts packed bytes (two e2m1 per byte); F4 counts the 4-bit elements.
          const std::vector<int64_t> stored = {out, w.dtype == DType::I8 ? in / 2 : in};
          if (!expect_shape(stored, w.dtype == DType::I8 ? "FP4 packed two per byte: " : "")) {
            return;
          }
          job.decode = Decode::Fp4Groups;
          job.scale =
              find_scale(spec, w, {out, ceil_div(in, kFp4Group)}, "one per 32 inputs", false);
          if (job.scale == nullptr) {
            return;
          }
        } else {
          return bad(fmt::format(
              "dtype {} is not allowed here (expected F32, BF16, F16, F8_E4M3 + scale{})", dtype,
              spec.kind == StorageKind::RoutedExpert ? ", or FP4 as I8/F4 + scale" : ""));
        }
        break;
      }
    }
    jobs_.push_back(job);
  }

  // Stored tensors no spec asked for: errors, except the ones we deliberately skip (MTP).
  void check_extras(const std::vector<TensorSpec>& specs) {
    std::size_t listed = 0;
    for (const auto& [name, tensor] : catalog_) {
      if (used_.contains(name)) {
        continue;
      }
      if (is_ignored_tensor(name)) {
        ++ignored_;
        continue;
      }
      std::string hint;
      if (listed++ < 10) {
        const std::string near = nearest_expected(name, specs);
        if (!near.empty()) {
          hint = fmt::format(" (did you mean '{}'?)", near);
        }
      }
      problems_.push_back(
          fmt::format("unexpected tensor '{}' (stored as {}){}: not part of a "
                      "DeepSeek-V4 model with this config",
                      name, tensor.where(), hint));
    }
  }

  const std::vector<std::string>& problems() const { return problems_; }
  std::vector<LoadJob>& jobs() { return jobs_; }
  std::size_t ignored() const { return ignored_; }

 private:
  const StoredTensor* find_scale(const TensorSpec& spec, const StoredTensor& w,
                                 const std::vector<int64_t>& shape, const char* layout,
                                 bool allow_f32) {
    const std::string base = spec.name.substr(0, spec.name.rfind(".weight"));
    const std::string scale_name = base + ".scale";
    const auto it = catalog_.find(scale_name);
    if (it == catalog_.end()) {
      problems_.push_back(
          fmt::format("tensor '{}' (stored as {}) is {} but its scale '{}' is "
                      "missing",
                      spec.name, w.where(), weights::dtype_name(w.dtype), scale_name));
      return nullptr;
    }
    used_.insert(scale_name);
    const StoredTensor& s = it->second;
    if (s.dtype != DType::F8_E8M0 && !(allow_f32 && s.dtype == DType::F32)) {
      problems_.push_back(fmt::format("scale '{}' (stored as {}): dtype {}, expected F8_E8M0{}",
                                      scale_name, s.where(), weights::dtype_name(s.dtype),
                                      allow_f32 ? " or F32" : ""));
      return nullptr;
    }
    if (s.shape != shape) {
      problems_.push_back(
          fmt::format("scale '{}' (stored as {}): shape {}, expected {} ({} of "
                      "the {} weight {})",
                      scale_name, s.where(), shape_str(s.shape), shape_str(shape), layout,
                      weights::dtype_name(w.dtype), shape_str(spec.shape)));
      return nullptr;
    }
    return &s;
  }

  static std::string nearest_expected(const std::string& name,
                                      const std::vector<TensorSpec>& specs) {
    // Compare within the same block ("layers.3.") to keep this cheap on 69k-tensor checkpoints.
    const std::size_t first = name.find('.');
    const std::size_t second = first == std::string::npos ? first : name.find('.', first + 1);
    const std::string prefix = name.starts_with("layers.") && second != std::string::npos
                                   ? name.substr(0, second + 1)
                                   : "";
    std::vector<std::string> candidates;
    for (const auto& spec : specs) {
      if (spec.name.starts_with(prefix) && (!prefix.empty() || !spec.name.starts_with("layers."))) {
        candidates.push_back(spec.name);
      }
    }
    return util::nearest(name, candidates);
  }

  const std::map<std::string, StoredTensor>& catalog_;
  std::set<std::string> used_;
  std::vector<std::string> problems_;
  std::vector<LoadJob> jobs_;
  std::size_t ignored_ = 0;
};

}  // namespace

CheckedCheckpoint check_checkpoint(const std::map<std::string, StoredTensor>& catalog,
                                   const std::vector<TensorSpec>& specs,
                                   const std::filesystem::path& model_dir) {
  Validator validator(catalog);
  for (const auto& spec : specs) {
    validator.check(spec);
  }
  validator.check_extras(specs);
  if (const auto& problems = validator.problems(); !problems.empty()) {
    std::string list;
    for (std::size_t i = 0; i < problems.size() && i < kMaxListedProblems; ++i) {
      list += fmt::format("\n  - {}", problems[i]);
    }
    if (problems.size() > kMaxListedProblems) {
      list += fmt::format("\n  ... and {} more", problems.size() - kMaxListedProblems);
    }
    throw Error(fmt::format("checkpoint {} does not match its config ({} problem{}):{}",
                            model_dir.string(), problems.size(), problems.size() == 1 ? "" : "s",
                            list));
  }
  return {std::move(validator.jobs()), validator.ignored()};
}

std::vector<int32_t> decode_token_table(const TensorSpec& spec, const StoredTensor& w) {
  const auto n = static_cast<std::size_t>(spec.shape[0] * spec.shape[1]);
  const std::size_t width = w.dtype == DType::I64 ? 8 : 4;
  std::vector<int32_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    int64_t id = 0;
    if (width == 8) {
      std::memcpy(&id, w.bytes.data() + 8 * i, 8);
    } else {
      int32_t id32 = 0;
      std::memcpy(&id32, w.bytes.data() + 4 * i, 4);
      id = id32;
    }
    TS_CHECK(id >= 0 && id < spec.table_limit,
             "tensor '{}' (stored as {}): token {} maps to expert id {}, outside [0, {})",
             spec.name, w.where(), i / static_cast<std::size_t>(spec.shape[1]), id,
             spec.table_limit);
    out[i] = static_cast<int32_t>(id);
  }
  return out;
}

uint64_t job_bytes(const LoadJob& job) {
  return job.weight->bytes.size() + (job.scale != nullptr ? job.scale->bytes.size() : 0);
}

std::string dtype_summary(const std::vector<LoadJob>& jobs) {
  std::map<std::string_view, std::pair<std::size_t, uint64_t>> by_dtype;  // count, bytes
  for (const auto& job : jobs) {
    for (const StoredTensor* t : {job.weight, job.scale}) {
      if (t != nullptr) {
        auto& [count, bytes] = by_dtype[weights::dtype_name(t->dtype)];
        ++count;
        bytes += t->bytes.size();
      }
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, stat] : by_dtype) {
    parts.push_back(fmt::format("{} x{} ({:.1f} MiB)", name, stat.first,
                                static_cast<double>(stat.second) / (1 << 20)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace tessera::dsv4
