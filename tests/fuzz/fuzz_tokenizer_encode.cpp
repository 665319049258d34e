// Fuzzes Tokenizer::encode with arbitrary bytes, using the fixture tokenizer.json (the structure of
// DeepSeek-V4's: three Split regexes, ByteLevel, 80 added tokens). Beyond "no crash, no UB, no
// stray exception type", it checks what the tokenizer promises:
//  - input that is not UTF-8 is refused with tessera::Error, and nothing else is;
//  - every id is a real token;
//  - decode(encode(text)) == text (byte-level BPE loses nothing; the fixture has all 256 bytes);
//  - the incremental detokenizer, fed the ids in input-chosen chunks, reproduces decode.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"
#include "util/check.hpp"

namespace {

using tessera::tokenizer::Tokenizer;

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_tokenizer_encode invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// The fixture of tests/data (TESSERA_TEST_DATA_DIR, set by the build); TESSERA_TOKENIZER_JSON
// overrides it, e.g. to fuzz with DeepSeek's real tokenizer.json.
const Tokenizer& fixture() {
  static const Tokenizer tokenizer = [] {
    const char* path = std::getenv("TESSERA_TOKENIZER_JSON");
    return Tokenizer::from_file(path ? std::filesystem::path(path)
                                     : std::filesystem::path(TESSERA_TEST_DATA_DIR) /
                                           "tokenizer/tokenizer.json");
  }();
  return tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Tokenizer& tok = fixture();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string text(input);
  if (!tessera::tokenizer::is_valid_utf8(input)) {
    bool refused = false;
    try {
      (void)tok.encode(input);
    } catch (const tessera::Error&) {
      refused = true;
    }
    require(refused, "invalid UTF-8 was encoded");
    text = tessera::tokenizer::utf8_lossy(input);
  }
  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids)
    require(id >= 0 && id < tok.vocab_size() && tok.id_to_token(id).has_value(), "bad id",
            std::to_string(id));
  const std::string decoded = tok.decode(ids);
  require(decoded == text, "decode(encode(text)) != text");

  tessera::tokenizer::IncrementalDetokenizer detok(tok);
  std::string streamed;
  std::size_t i = 0, k = 0;
  while (i < ids.size()) {
    const std::size_t n =
        std::min<std::size_t>(ids.size() - i, 1 + (size ? data[k++ % size] % 5 : 0));
    const std::string piece = detok.push(std::span<const int32_t>(ids.data() + i, n));
    require(tessera::tokenizer::is_valid_utf8(piece), "detokenizer emitted invalid UTF-8");
    streamed += piece;
    i += n;
  }
  streamed += detok.finish();
  require(streamed == decoded, "incremental detokenization != decode");
  return 0;
}
