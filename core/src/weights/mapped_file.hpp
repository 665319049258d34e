// A read-only memory map of a whole file (RAII, move-only). Weights are read straight from the
// page cache, so opening a 150 GB checkpoint costs no copy and no allocation.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace tessera::weights {

class MappedFile {
 public:
  // Throws tessera::Error naming the path and the OS reason.
  [[nodiscard]] static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tessera::weights
