// Writes a safetensors file (format: weights/safetensors.hpp) tensor by tensor, so that a file far
// larger than memory can be produced: every tensor's name, dtype and shape is declared up front
// (the header holds all offsets), then the data is appended in declaration order. close() checks
// that every declared byte was written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "weights/dtype.hpp"

namespace tessera::weights {

struct TensorDeclaration {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  [[nodiscard]] uint64_t byte_size() const;  // numel * bits / 8, rounded up
};

class SafetensorsWriter {
 public:
  // Writes the header at once; throws tessera::Error when the file cannot be created.
  SafetensorsWriter(const std::filesystem::path& path, std::vector<TensorDeclaration> tensors);
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends bytes of the current tensor (moving on to the next one when it is full); a span may
  // not cross a tensor boundary. Returns the index of the tensor the bytes went to.
  size_t append(std::span<const uint8_t> bytes);
  // The tensor the next append() writes to (tensors().size() when all are written).
  [[nodiscard]] size_t current() const noexcept { return current_; }
  [[nodiscard]] const std::vector<TensorDeclaration>& tensors() const noexcept { return tensors_; }
  // Flushes and checks that every tensor is complete.
  void close();

 private:
  std::filesystem::path path_;
  std::vector<TensorDeclaration> tensors_;
  std::ofstream out_;
  size_t current_ = 0;
  uint64_t written_in_current_ = 0;
};

}  // namespace tessera::weights
