#include "tokenizer/tokenizer_json.hpp"

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "tokenizer/json_field.hpp"
#include "util/check.hpp"

namespace tessera::tokenizer {
namespace {

using nlohmann::json;

// Token ids index dense tables; a file may leave holes, but not so many that a tiny hostile file
// could make us allocate gigabytes.
constexpr int64_t kMaxIdSlack = 1 << 16;

SplitBehavior parse_behavior(const JsonField& f) {
  static const std::map<std::string, SplitBehavior, std::less<>> kBehaviors = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  const std::string name = f.string();
  auto it = kBehaviors.find(name);
  if (it == kBehaviors.end()) {
    f.fail(
        fmt::format("unknown value '{}' (Removed, Isolated, MergedWithPrevious, "
                    "MergedWithNext or Contiguous)",
                    name));
  }
  return it->second;
}

std::string parse_split_pattern(const JsonField& f) {
  f.expect_object();
  if (auto regex = f.find("Regex")) {
    return regex->string();
  }
  if (auto literal = f.find("String")) {
    return UnicodeRegex::escape(literal->string());
  }
  f.fail("expected {\"Regex\": ...} or {\"String\": ...}");
}

void parse_pre_tokenizer_step(const JsonField& f, bool is_last, PreTokenizer& out) {
  const std::string type = f.type();
  if (type == "Split") {
    const JsonField pattern_field = f.at("pattern");
    const std::string pattern = parse_split_pattern(pattern_field);
    std::optional<UnicodeRegex> regex;
    try {
      regex.emplace(pattern);
    } catch (const Error& e) {
      pattern_field.fail(e.what());
    }
    out.add_split(std::move(*regex), parse_behavior(f.at("behavior")),
                  f.boolean_or("invert", false));
  } else if (type == "ByteLevel") {
    if (!is_last) {
      f.fail("ByteLevel must be the last pre-tokenizer step");
    }
    out.set_byte_level(f.boolean_or("add_prefix_space", true), f.boolean_or("use_regex", true));
  } else {
    f.at("type").fail(
        fmt::format("unsupported pre-tokenizer '{}' (Split, ByteLevel, Sequence)", type));
  }
}

PreTokenizer parse_pre_tokenizer(const JsonField& root) {
  PreTokenizer out;
  auto f = root.find("pre_tokenizer");
  if (!f || f->is_null()) {
    return out;
  }
  if (f->type() != "Sequence") {
    parse_pre_tokenizer_step(*f, true, out);
    return out;
  }
  const JsonField steps = f->at("pretokenizers");
  steps.expect_array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    parse_pre_tokenizer_step(steps.at(i), i + 1 == steps.size(), out);
  }
  return out;
}

void check_normalizer(const JsonField& root) {
  auto f = root.find("normalizer");
  if (!f || f->is_null()) {
    return;
  }
  if (f->type() == "Sequence") {
    const JsonField list = f->at("normalizers");
    list.expect_array();
    if (list.size() == 0) {
      return;
    }
  }
  f->fail("only a null normalizer is supported (DeepSeek tokenizers have none)");
}

void check_decoder(const JsonField& root) {
  const JsonField f = root.at("decoder");
  if (f.is_null() || f.type() != "ByteLevel") {
    f.fail("only the ByteLevel decoder is supported");
  }
}

std::vector<AddedToken> parse_added_tokens(const JsonField& root) {
  std::vector<AddedToken> tokens;
  auto f = root.find("added_tokens");
  if (!f || f->is_null()) {
    return tokens;
  }
  f->expect_array();
  for (std::size_t i = 0; i < f->size(); ++i) {
    const JsonField t = f->at(i);
    AddedToken token;
    const int64_t id = t.at("id").integer();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      t.at("id").fail("id out of range");
    }
    token.id = static_cast<int32_t>(id);
    token.content = t.at("content").string();
    if (token.content.empty()) {
      t.at("content").fail("an added token cannot be empty");
    }
    token.special = t.boolean_or("special", false);
    token.single_word = t.boolean_or("single_word", false);
    token.lstrip = t.boolean_or("lstrip", false);
    token.rstrip = t.boolean_or("rstrip", false);
    token.normalized = t.boolean_or("normalized", !token.special);  // HF's default
    tokens.push_back(std::move(token));
  }
  return tokens;
}

std::pair<std::string, std::string> parse_merge(const JsonField& m) {
  if (m.raw().is_string()) {
    const std::string line = m.string();
    const auto space = line.find(' ');
    if (space == std::string::npos) {
      m.fail("expected \"left right\" (two tokens and a space)");
    }
    return {line.substr(0, space), line.substr(space + 1)};
  }
  m.expect_array();
  if (m.size() != 2) {
    m.fail("expected a pair [\"left\", \"right\"]");
  }
  return {m.at(std::size_t{0}).string(), m.at(std::size_t{1}).string()};
}

BpeModel parse_model(const JsonField& root, bool byte_level, const std::vector<AddedToken>& added) {
  const JsonField f = root.at("model");
  f.expect_object();
  if (auto type = f.find("type"); type && type->string() != "BPE") {
    type->fail(fmt::format("unsupported model '{}' (only BPE)", type->string()));
  }
  if (auto dropout = f.find("dropout"); dropout && !dropout->is_null()) {
    if (!dropout->raw().is_number() || dropout->raw().get<double>() != 0.0) {
      dropout->fail("BPE dropout is not supported (must be null)");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto v = f.string_or_null(key); v && !v->empty()) {
      f.at(key).fail("not supported (must be null)");
    }
  }

  const JsonField vocab_field = f.at("vocab");
  vocab_field.expect_object();
  const int64_t max_id = static_cast<int64_t>(vocab_field.size() + added.size()) + kMaxIdSlack;
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(vocab_field.size());
  std::unordered_map<int32_t, const std::string*> owner;
  for (const auto& [token, id_json] : vocab_field.raw().items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 ||
        id_json.get<int64_t>() > max_id) {
      vocab_field.fail(fmt::format("token '{}' has id {}, expected an integer in [0, {}]", token,
                                   id_json.dump(), max_id));
    }
    const auto id = static_cast<int32_t>(id_json.get<int64_t>());
    auto [it, inserted] = vocab.emplace(token, id);
    if (!owner.emplace(id, &it->first).second) {
      vocab_field.fail(fmt::format("id {} is given to both '{}' and '{}'", id, *owner[id], token));
    }
  }
  owner.clear();
  for (const AddedToken& t : added) {
    if (t.id > max_id) {
      root.at("added_tokens")
          .fail(fmt::format("id {} of '{}' is far beyond the {} tokens defined", t.id, t.content,
                            vocab.size() + added.size()));
    }
  }

  std::vector<std::pair<std::string, std::string>> merges;
  const JsonField merges_field = f.at("merges");
  merges_field.expect_array();
  merges.reserve(merges_field.size());
  for (std::size_t i = 0; i < merges_field.size(); ++i) {
    merges.push_back(parse_merge(merges_field.at(i)));
  }

  BpeOptions options;
  options.unk_token = f.string_or_null("unk_token");
  options.fuse_unk = f.boolean_or("fuse_unk", false);
  options.byte_fallback = f.boolean_or("byte_fallback", false);
  options.ignore_merges = f.boolean_or("ignore_merges", false);
  options.byte_level = byte_level;
  try {
    return BpeModel(std::move(vocab), merges, std::move(options));
  } catch (const Error& e) {
    f.fail(e.what());
  }
}

PostProcessor parse_post_processor(const JsonField& root) {
  PostProcessor out;
  auto f = root.find("post_processor");
  if (!f || f->is_null()) {
    return out;
  }
  std::vector<JsonField> steps;
  if (f->type() == "Sequence") {
    const JsonField list = f->at("processors");
    list.expect_array();
    for (std::size_t i = 0; i < list.size(); ++i) {
      steps.push_back(list.at(i));
    }
  } else {
    steps.push_back(*f);
  }
  for (const JsonField& step : steps) {
    const std::string type = step.type();
    if (type == "ByteLevel") {
      continue;  // offsets only
    }
    if (type != "TemplateProcessing") {
      step.at("type").fail(fmt::format(
          "unsupported post-processor '{}' (TemplateProcessing, ByteLevel, Sequence)", type));
    }
    const JsonField special = step.at("special_tokens");
    special.expect_object();
    const JsonField single = step.at("single");
    single.expect_array();
    std::vector<PostProcessor::Piece> pieces;
    for (std::size_t i = 0; i < single.size(); ++i) {
      const JsonField piece = single.at(i);
      if (auto seq = piece.find("Sequence")) {
        const std::string which = seq->at("id").string();
        if (which != "A") {
          seq->at("id").fail("a single-sequence template can only use $A");
        }
        pieces.push_back({true, {}});
      } else if (auto tok = piece.find("SpecialToken")) {
        const std::string name = tok->at("id").string();
        auto entry = special.find(name);
        if (!entry) {
          tok->fail(fmt::format("special token '{}' is not in special_tokens", name));
        }
        const JsonField ids = entry->at("ids");
        ids.expect_array();
        PostProcessor::Piece p;
        for (std::size_t k = 0; k < ids.size(); ++k) {
          const int64_t id = ids.at(k).integer();
          if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
            ids.at(k).fail("id out of range");
          }
          p.ids.push_back(static_cast<int32_t>(id));
        }
        pieces.push_back(std::move(p));
      } else {
        piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    out.add_template(std::move(pieces));
  }
  return out;
}

}  // namespace

TokenizerParts parse_tokenizer_json(std::string_view json_text, std::string_view origin) {
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  const JsonField root(document, "", origin);
  if (!document.is_object()) {
    throw Error(
        fmt::format("{}: expected a JSON object at the top, got {}", origin, document.type_name()));
  }
  check_normalizer(root);
  check_decoder(root);
  std::vector<AddedToken> added = parse_added_tokens(root);
  PreTokenizer pre_tokenizer = parse_pre_tokenizer(root);
  BpeModel model = parse_model(root, pre_tokenizer.byte_level(), added);
  PostProcessor post_processor = parse_post_processor(root);
  return TokenizerParts{std::move(added), std::move(pre_tokenizer), std::move(model),
                        std::move(post_processor)};
}

}  // namespace tessera::tokenizer
