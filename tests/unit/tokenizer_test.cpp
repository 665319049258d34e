// Tokenizer parity with Hugging Face `tokenizers` 0.23.3 on the fixtures of tests/data/tokenizer
// (README.md there): ids of every corpus line, decode of every id list, the invalid-UTF-8 policy,
// the regex classes of the pre-tokenizer, streaming detokenization and loader errors.
#include "tokenizer/tokenizer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/unicode_regex.hpp"
#include "tokenizer/utf8.hpp"
#include "util/check.hpp"

namespace tessera::tokenizer {
namespace {

using nlohmann::json;

const std::string kDataDir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/tokenizer/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// JSONL split on '\n' only (texts may hold U+2028 etc., always escaped).
std::vector<json> read_jsonl(const std::string& name) {
  std::vector<json> rows;
  std::istringstream in(read_file(kDataDir + name));
  std::string line;
  while (std::getline(in, line, '\n'))
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

const Tokenizer& fixture_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_file(kDataDir + "tokenizer.json");
  return tokenizer;
}

std::string token_label(const Tokenizer& tok, const std::vector<int32_t>& ids, std::size_t i) {
  if (i >= ids.size()) return "<end>";
  return fmt::format("{} {}", ids[i], json(tok.id_to_token(ids[i]).value_or("?")).dump());
}

// A readable report of the first position where two id lists differ.
std::string first_difference(const Tokenizer& tok, const std::string& text,
                             const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const std::vector<int32_t> before(want.begin(), want.begin() + static_cast<long>(i));
  const std::string decoded_before = tok.decode(before);
  const std::string context =
      decoded_before.substr(decoded_before.size() > 40 ? decoded_before.size() - 40 : 0);
  return fmt::format(
      "first difference at id #{} (text byte ~{} of {}): got [{}], HF [{}]; text before: {}; "
      "text: {}",
      i, decoded_before.size(), text.size(), token_label(tok, got, i), token_label(tok, want, i),
      json(context).dump(), json(text.substr(0, 200)).dump());
}

TEST(Tokenizer, CorpusIdsMatchHuggingFace) {
  const Tokenizer& tok = fixture_tokenizer();
  const auto rows = read_jsonl("corpus.jsonl");
  ASSERT_GT(rows.size(), 3000u);
  std::size_t failures = 0, bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const json& row : rows) {
    const std::string text = row.at("text");
    const auto want = row.at("ids").get<std::vector<int32_t>>();
    const auto got = tok.encode(text);
    bytes += text.size();
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << "[" << row.at("tag").get<std::string>() << "] "
                    << first_difference(tok, text, got, want);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(failures, 0u) << "of " << rows.size() << " corpus lines";
  std::printf("[info] encoded %zu lines, %.2f MB in %.3f s (%.1f MB/s, cache warming included)\n",
              rows.size(), bytes / 1e6, seconds, bytes / 1e6 / seconds);
}

TEST(Tokenizer, AddSpecialTokensUsesThePostProcessor) {
  // The fixture's post-processor is ByteLevel (ids unchanged), like DeepSeek's real file.
  const Tokenizer& tok = fixture_tokenizer();
  EXPECT_EQ(tok.encode("Hello world", true), tok.encode("Hello world", false));
}

TEST(Tokenizer, DecodeMatchesHuggingFace) {
  const Tokenizer& tok = fixture_tokenizer();
  const auto rows = read_jsonl("decode.jsonl");
  ASSERT_GT(rows.size(), 6000u);
  std::size_t failures = 0;
  for (const json& row : rows) {
    const auto ids = row.at("ids").get<std::vector<int32_t>>();
    const std::string want = row.at("text"), want_skip = row.at("text_skip_special");
    const std::string got = tok.decode(ids), got_skip = tok.decode(ids, true);
    if ((got != want || got_skip != want_skip) && ++failures <= 10)
      ADD_FAILURE() << "[" << row.at("tag").get<std::string>() << "] ids " << json(ids).dump()
                    << "\n got  " << json(got).dump() << " / skip " << json(got_skip).dump()
                    << "\n want " << json(want).dump() << " / skip " << json(want_skip).dump();
  }
  EXPECT_EQ(failures, 0u) << "of " << rows.size() << " decode lines";
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(Tokenizer, InvalidUtf8IsRejectedAndItsLossyFormMatchesHuggingFace) {
  const Tokenizer& tok = fixture_tokenizer();
  const auto rows = read_jsonl("invalid_utf8.jsonl");
  ASSERT_GE(rows.size(), 30u);
  for (const json& row : rows) {
    const std::string bytes = from_hex(row.at("bytes_hex"));
    const std::string lossy = row.at("lossy_text");
    SCOPED_TRACE(row.at("tag").get<std::string>());
    EXPECT_FALSE(is_valid_utf8(bytes));
    EXPECT_THROW((void)tok.encode(bytes), Error);
    EXPECT_EQ(utf8_lossy(bytes), lossy);
    EXPECT_EQ(tok.encode(utf8_lossy(bytes)), row.at("ids").get<std::vector<int32_t>>());
  }
}

// Features DeepSeek's file does not use, on the fuzz seeds of tests/fuzz/corpus/tokenizer_load:
// flags.json (added token with single_word + lstrip + rstrip, non-byte-level BPE with a fused
// unk_token, byte_fallback without <0x..> tokens, ignore_merges, an inverted MergedWithNext
// String split) and gpt2_template.json (ByteLevel with add_prefix_space + use_regex, a
// TemplateProcessing BOS). Expected values from HF tokenizers 0.23.3: encode(text,
// add_special_tokens).ids and decode(ids, skip_special_tokens=True).
TEST(Tokenizer, OtherHuggingFaceFeaturesMatch) {
  struct Case {
    const char* file;
    std::string text;
    bool add_special_tokens;
    std::vector<int32_t> ids;
    std::string decoded_skip_special;
  };
  const std::vector<Case> cases = {
      {"flags",
       "<s>x <s> y<s>z  <s>  w",
       false,
       {29, 84, 31, 89, 0, 90, 29, 84, 31, 91, 0, 88},
       "<s>xy<s>zw"},
      {"flags",
       "<s>x <s> y<s>z  <s>  w",
       true,
       {29, 84, 31, 89, 0, 90, 29, 84, 31, 91, 0, 88},
       "<s>xy<s>zw"},
      {"flags",
       "a-b--c -d- in the  er\n\n  ther",
       false,
       {66, 14, 67, 14, 14, 68, 0, 14, 69, 14, 0, 261, 0, 85, 259, 0, 263, 0, 85, 259, 83},
       "a-b--c-d-intheerther"},
      {"flags",
       "a-b--c -d- in the  er\n\n  ther",
       true,
       {66, 14, 67, 14, 14, 68, 0, 14, 69, 14, 0, 261, 0, 85, 259, 0, 263, 0, 85, 259, 83},
       "a-b--c-d-intheerther"},
      {"flags",
       "中文 123456 x</s>y ab'sc é 😀  　\t",
       false,
       {0, 18, 19, 20, 21, 22, 23, 0, 89, 1, 90, 0, 66, 67, 8, 84, 68, 0, 167, 0},
       "123456x</s>yab'sc�"},
      {"flags",
       "中文 123456 x</s>y ab'sc é 😀  　\t",
       true,
       {0, 18, 19, 20, 21, 22, 23, 0, 89, 1, 90, 0, 66, 67, 8, 84, 68, 0, 167, 0},
       "123456x</s>yab'sc�"},
      {"gpt2_template",
       "<s>x <s> y<s>z  <s>  w",
       false,
       {0, 222, 89, 222, 0, 222, 90, 0, 222, 91, 222, 222, 0, 222, 222, 88},
       " x  y z    w"},
      {"gpt2_template",
       "<s>x <s> y<s>z  <s>  w",
       true,
       {0, 0, 222, 89, 222, 0, 222, 90, 0, 222, 91, 222, 222, 0, 222, 222, 88},
       " x  y z    w"},
      {"gpt2_template",
       "a-b--c -d- in the  er\n\n  ther",
       false,
       {262, 14,  67,  14,  14,  68,  222, 14,  69,  14, 222,
        261, 260, 222, 222, 263, 200, 200, 222, 260, 83},
       " a-b--c -d- in the  er\n\n  ther"},
      {"gpt2_template",
       "a-b--c -d- in the  er\n\n  ther",
       true,
       {0,   262, 14,  67,  14,  14,  68,  222, 14,  69,  14,
        222, 261, 260, 222, 222, 263, 200, 200, 222, 260, 83},
       " a-b--c -d- in the  er\n\n  ther"},
      {"gpt2_template",
       "中文 123456 x</s>y ab'sc é 😀  　\t",
       false,
       {222, 162, 118, 257, 164, 246, 231, 222, 18,  19,  20,  21,  22,
        23,  222, 89,  1,   222, 90,  262, 67,  8,   84,  68,  222, 129,
        104, 222, 174, 255, 248, 224, 222, 128, 256, 161, 224, 224, 199},
       " 中文 123456 x</s> y ab'sc é 😀  　\t"},
      {"gpt2_template",
       "中文 123456 x</s>y ab'sc é 😀  　\t",
       true,
       {0,   222, 162, 118, 257, 164, 246, 231, 222, 18,  19,  20,  21,  22,
        23,  222, 89,  1,   222, 90,  262, 67,  8,   84,  68,  222, 129, 104,
        222, 174, 255, 248, 224, 222, 128, 256, 161, 224, 224, 199},
       " 中文 123456 x</s> y ab'sc é 😀  　\t"},
  };
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/fuzz/corpus/tokenizer_load/";
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " + json(c.text).dump());
    const Tokenizer tok = Tokenizer::from_file(dir + c.file + ".json");
    const auto ids = tok.encode(c.text, c.add_special_tokens);
    EXPECT_EQ(ids, c.ids);
    EXPECT_EQ(tok.decode(ids, true), c.decoded_skip_special);
  }
}

// Every code point's membership in the regex classes, against the sets HF's Oniguruma matches.
TEST(Tokenizer, RegexClassesMatchOniguruma) {
  const json classes = json::parse(read_file(kDataDir + "unicode_classes.json"));
  const std::vector<std::pair<std::string, std::string>> patterns = {
      {"L", R"(\p{L})"},
      {"M", R"(\p{M})"},
      {"N", R"(\p{N})"},
      {"P", R"(\p{P})"},
      {"S", R"(\p{S})"},
      {"s", R"(\s)"},
      {"cjk", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]"}};
  for (const auto& [name, pattern] : patterns) {
    ASSERT_TRUE(classes.contains(name)) << name;
    std::vector<bool> expected(0x110000, false);
    for (const auto& range : classes.at(name))
      for (uint32_t c = range[0]; c <= range[1].get<uint32_t>(); ++c) expected[c] = true;
    const UnicodeRegex regex(pattern);
    std::size_t mismatches = 0;
    std::string examples, text;
    for (char32_t c = 0; c < 0x110000; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      text.clear();
      append_utf8(text, c);
      if (regex.matches_at(text, 0) != expected[c] && ++mismatches <= 8)
        examples += fmt::format(" U+{:04X}({})", static_cast<uint32_t>(c),
                                expected[c] ? "HF yes" : "HF no");
    }
    EXPECT_EQ(mismatches, 0u) << "class " << name << ":" << examples;
  }
}

// Splits the ids of every corpus line into random chunks and streams them.
TEST(IncrementalDetokenizer, RandomChunkingConcatenatesToFullDecode) {
  const Tokenizer& tok = fixture_tokenizer();
  std::mt19937 rng(1234);
  std::size_t checked = 0;
  auto check = [&](const std::vector<int32_t>& ids, bool skip, const std::string& tag) {
    IncrementalDetokenizer detok(tok, skip);
    std::string streamed;
    std::size_t i = 0;
    while (i < ids.size()) {
      const std::size_t n = std::min<std::size_t>(ids.size() - i, 1 + rng() % 4);
      const std::string piece =
          n == 1 ? detok.push(ids[i]) : detok.push(std::span<const int32_t>(ids.data() + i, n));
      ASSERT_TRUE(is_valid_utf8(piece)) << tag;
      streamed += piece;
      i += n;
    }
    streamed += detok.finish();
    ASSERT_EQ(streamed, tok.decode(ids, skip)) << tag << " ids " << json(ids).dump();
    ++checked;
  };
  for (const json& row : read_jsonl("corpus.jsonl"))
    check(row.at("ids").get<std::vector<int32_t>>(), false, row.at("tag"));
  for (const json& row : read_jsonl("decode.jsonl")) {
    const auto ids = row.at("ids").get<std::vector<int32_t>>();
    check(ids, false, row.at("tag"));
    check(ids, true, row.at("tag"));
  }
  EXPECT_GT(checked, 10000u);
}

TEST(IncrementalDetokenizer, HoldsBackAnIncompleteCharacterAndFlushesItAsReplacement) {
  const Tokenizer& tok = fixture_tokenizer();
  const auto ids = tok.encode("中");  // 3 bytes; find single-byte tokens for them
  std::vector<int32_t> byte_ids;
  for (unsigned char b : std::string("中")) {
    for (int32_t id = 0; id < tok.vocab_size(); ++id)
      if (!tok.is_added(id) && tok.token_bytes(id) == std::string(1, static_cast<char>(b))) {
        byte_ids.push_back(id);
        break;
      }
  }
  ASSERT_EQ(byte_ids.size(), 3u);
  IncrementalDetokenizer detok(tok);
  EXPECT_EQ(detok.push(byte_ids[0]), "");
  EXPECT_EQ(detok.push(byte_ids[1]), "");
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.push(byte_ids[2]), "中");
  EXPECT_EQ(detok.push(byte_ids[0]), "");
  EXPECT_EQ(detok.finish(), std::string(kReplacementCharacter));
  // An added token ends the run: the pending bytes become U+FFFD before it.
  EXPECT_EQ(detok.push(byte_ids[0]), "");
  const int32_t user = tok.token_to_id("<｜User｜>").value();
  EXPECT_EQ(detok.push(user), std::string(kReplacementCharacter) + "<｜User｜>");
  EXPECT_FALSE(ids.empty());
}

// ---- loader errors name the field -------------------------------------------------------------

std::string load_error(const json& document) {
  try {
    (void)Tokenizer::from_json(document.dump(), "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded without error)";
}

json fixture_json() {
  static const json document = json::parse(read_file(kDataDir + "tokenizer.json"));
  return document;
}

TEST(TokenizerLoader, ErrorsNameTheField) {
  auto expect_error = [](json document, const std::string& needle) {
    const std::string message = load_error(document);
    EXPECT_NE(message.find(needle), std::string::npos) << "message: " << message;
  };
  {
    json d = fixture_json();
    d["model"].erase("vocab");
    expect_error(d, "t.json: model: missing key \"vocab\"");
  }
  {
    json d = fixture_json();
    d["pre_tokenizer"]["pretokenizers"][1]["behavior"] = "Isolate";
    expect_error(d, "pre_tokenizer.pretokenizers[1].behavior: unknown value 'Isolate'");
  }
  {
    json d = fixture_json();
    d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
    expect_error(d, "pre_tokenizer.pretokenizers[0].pattern: regex /(unclosed/ does not compile");
  }
  {
    json d = fixture_json();
    d["model"]["merges"][3] = "nosuchtoken x";
    expect_error(d, "model.merges[3]");
  }
  {
    json d = fixture_json();
    d["model"]["merges"][5] = "nospace";
    expect_error(d, "model.merges[5]: expected \"left right\"");
  }
  {
    json d = fixture_json();
    d["added_tokens"][2]["id"] = "two";
    expect_error(d, "added_tokens[2].id: expected an integer, got string");
  }
  {
    json d = fixture_json();
    d["model"]["type"] = "WordPiece";
    expect_error(d, "model.type: unsupported model 'WordPiece'");
  }
  {
    json d = fixture_json();
    d["decoder"] = nullptr;
    expect_error(d, "decoder: only the ByteLevel decoder is supported");
  }
  {
    json d = fixture_json();
    d["model"]["vocab"]["zzz-new"] = 999999999;
    expect_error(d, "model.vocab: token 'zzz-new' has id 999999999");
  }
  {
    json d = fixture_json();
    d["model"]["vocab"]["zzz-dup"] = 5;
    expect_error(d, "model.vocab: id 5 is given to both");
  }
  EXPECT_NE(load_error(json::array()).find("expected a JSON object"), std::string::npos);
  try {
    (void)Tokenizer::from_json("{\"model\": ", "t.json");
    ADD_FAILURE() << "truncated JSON accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(TokenizerLoader, MergesAsPairsAndSplitBehaviors) {
  // Merges given as ["a","b"] pairs load to the same ids as "a b" strings.
  json d = fixture_json();
  for (auto& m : d["model"]["merges"]) {
    const std::string s = m;
    const auto space = s.find(' ');
    m = json::array({s.substr(0, space), s.substr(space + 1)});
  }
  const Tokenizer pairs = Tokenizer::from_json(d.dump());
  const std::string text = "Hello, world! 12345 中文 <｜User｜>ok";
  EXPECT_EQ(pairs.encode(text), fixture_tokenizer().encode(text));

  // Split behaviors on a tiny vocabulary: every single byte is a token, no merges.
  auto words_of = [](const std::string& behavior, bool invert) {
    json t = {{"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "Sequence"},
                {"pretokenizers", json::array({{{"type", "Split"},
                                                {"pattern", {{"String", "-"}}},
                                                {"behavior", behavior},
                                                {"invert", invert}}})}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", json::object()}, {"merges", json::array()}}}};
    // Vocabulary: a, b, -, ab, a-, -b (merges turn each piece into one token when possible).
    t["model"]["vocab"] = {{"a", 0}, {"b", 1}, {"-", 2}, {"a-", 3}, {"-b", 4}};
    t["model"]["merges"] = json::array({"a -", "- b"});
    return Tokenizer::from_json(t.dump()).encode("a-b");
  };
  EXPECT_EQ(words_of("Isolated", false), (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(words_of("Removed", false), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(words_of("MergedWithPrevious", false), (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(words_of("MergedWithNext", false), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(words_of("Contiguous", false), (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(words_of("Removed", true), (std::vector<int32_t>{2}));  // invert: "a","b" delimit
}

}  // namespace
}  // namespace tessera::tokenizer
