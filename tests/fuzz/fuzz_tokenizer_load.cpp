// Fuzzes the tokenizer.json loader with arbitrary text. Beyond "no crash, no UB, no huge
// allocation", it checks that
//  - a refused file is refused with tessera::Error whose message names the origin;
//  - an accepted tokenizer encodes and decodes a fixed probe text without crashing (an encode
//    error may only be tessera::Error, e.g. a regex that exhausts PCRE2's match limit), and its
//    ids are in range.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.hpp"
#include "util/check.hpp"

namespace {

using tessera::tokenizer::Tokenizer;

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_tokenizer_load invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

constexpr std::string_view kOrigin = "fuzz.json";
constexpr std::string_view kProbe =
    "Hello, world! 12345 中文かな <｜User｜>x<think> \t\n  ab'sc\xC3\xA9 😀 a-b";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<Tokenizer> tok;
  try {
    tok.emplace(Tokenizer::from_json(text, kOrigin));
  } catch (const tessera::Error& e) {
    require(std::string_view(e.what()).rfind(kOrigin, 0) == 0, "error does not name the file",
            e.what());
    return 0;
  }
  try {
    const std::vector<int32_t> ids = tok->encode(kProbe, true);
    for (int32_t id : ids) require(id >= 0 && id < tok->vocab_size(), "id out of range");
    (void)tok->decode(ids);
    (void)tok->decode(ids, true);
  } catch (const tessera::Error&) {
  }
  return 0;
}
