// Fuzzes the safetensors header parser (the first thing that touches an untrusted checkpoint).
// Beyond "no crash, no UB, no stray exception type, no huge allocation", it checks what the
// parser promises for every header it accepts:
//  - the data section is exactly the bytes after the header;
//  - each tensor's span lies inside it and has numel * bits / 8 bytes;
//  - tensors come sorted by offset and no two non-empty spans overlap.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "util/check.hpp"
#include "weights/safetensors.hpp"

namespace {

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_safetensors invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tessera::weights;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  SafetensorsHeader header;
  try {
    header = parse_safetensors_header(file, "fuzz.safetensors");
  } catch (const tessera::Error& e) {
    require(std::string(e.what()).rfind("fuzz.safetensors: ", 0) == 0, "error without source",
            e.what());
    return 0;
  }
  require(header.data_offset >= 8 && header.data_offset <= size, "data offset outside the file");
  require(header.data_offset + header.data_size == size, "data section is not the file's rest");
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : header.tensors) {
    require(t.begin <= t.end && t.end <= header.data_size, "span outside the data section", t.name);
    unsigned __int128 bits = static_cast<unsigned>(dtype_bits(t.dtype));
    for (int64_t d : t.shape) {
      require(d >= 0, "negative dimension", t.name);
      bits *= static_cast<uint64_t>(d);
    }
    require(bits % 8 == 0 && bits / 8 == t.byte_size(), "size does not match shape", t.name);
    if (previous != nullptr) require(previous->begin <= t.begin, "tensors not sorted", t.name);
    if (t.byte_size() > 0) {
      if (previous != nullptr) require(t.begin >= previous->end, "overlapping tensors", t.name);
      previous = &t;
    }
  }
  return 0;
}
