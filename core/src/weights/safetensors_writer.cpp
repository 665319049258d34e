#include "weights/safetensors_writer.hpp"

#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::weights {

uint64_t TensorDeclaration::byte_size() const {
  uint64_t numel = 1;
  for (const int64_t d : shape) numel *= static_cast<uint64_t>(d);
  return (numel * static_cast<uint64_t>(dtype_bits(dtype)) + 7) / 8;
}

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path,
                                     std::vector<TensorDeclaration> tensors)
    : path_(path), tensors_(std::move(tensors)) {
  // nlohmann::ordered_json keeps the entries in declaration (= data) order.
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    TS_CHECK(!header.contains(t.name), "{}: tensor `{}` declared twice", path.string(), t.name);
    const uint64_t end = offset + t.byte_size();
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data section 8-byte aligned
  out_.open(path, std::ios::binary | std::ios::trunc);
  TS_CHECK(out_.good(), "cannot create {}", path.string());
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) out_.put(static_cast<char>((length >> (8 * i)) & 0xFF));
  out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  while (current_ < tensors_.size() && tensors_[current_].byte_size() == 0) ++current_;
}

size_t SafetensorsWriter::append(std::span<const uint8_t> bytes) {
  TS_CHECK(current_ < tensors_.size(), "{}: {} bytes written past the last tensor", path_.string(),
           bytes.size());
  const TensorDeclaration& t = tensors_[current_];
  TS_CHECK(written_in_current_ + bytes.size() <= t.byte_size(),
           "{}: tensor `{}` is {} bytes; {} written, {} more offered", path_.string(), t.name,
           t.byte_size(), written_in_current_, bytes.size());
  out_.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  TS_CHECK(out_.good(), "{}: write failed (disk full?)", path_.string());
  const size_t index = current_;
  written_in_current_ += bytes.size();
  while (current_ < tensors_.size() && written_in_current_ == tensors_[current_].byte_size()) {
    ++current_;
    written_in_current_ = 0;
  }
  return index;
}

void SafetensorsWriter::close() {
  TS_CHECK(current_ == tensors_.size(), "{}: tensor `{}` incomplete ({} bytes written)",
           path_.string(), current_ < tensors_.size() ? tensors_[current_].name : "",
           written_in_current_);
  out_.flush();
  TS_CHECK(out_.good(), "{}: flush failed", path_.string());
  out_.close();
}

}  // namespace tessera::weights
