#include "tokenizer/tokenizer_json.hpp"

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "util/check.hpp"

namespace tessera::tokenizer {
namespace {

using nlohmann::json;

// A JSON value and where it sits in the file, so every error names the field.
class Field {
 public:
  Field(const json& value, std::string path, std::string_view origin)
      : value_(&value), path_(std::move(path)), origin_(origin) {}

  [[noreturn]] void fail(std::string_view what) const {
    if (path_.empty()) {
      throw Error(fmt::format("{}: {}", origin_, what));
    }
    throw Error(fmt::format("{}: {}: {}", origin_, path_, what));
  }
  const json& raw() const { return *value_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_->is_null(); }

  std::optional<Field> find(std::string_view key) const {
    expect_object();
    auto it = value_->find(std::string(key));
    if (it == value_->end()) {
      return std::nullopt;
    }
    return Field(*it, child_path(key), origin_);
  }
  Field at(std::string_view key) const {
    auto f = find(key);
    if (!f) {
      fail(fmt::format("missing key \"{}\"", key));
    }
    return *f;
  }
  Field at(std::size_t index) const {
    return Field((*value_)[index], fmt::format("{}[{}]", path_, index), origin_);
  }
  std::size_t size() const { return value_->size(); }

  void expect_object() const {
    if (!value_->is_object()) {
      fail(fmt::format("expected an object, got {}", value_->type_name()));
    }
  }
  void expect_array() const {
    if (!value_->is_array()) {
      fail(fmt::format("expected an array, got {}", value_->type_name()));
    }
  }
  std::string string() const {
    if (!value_->is_string()) {
      fail(fmt::format("expected a string, got {}", value_->type_name()));
    }
    return value_->get<std::string>();
  }
  bool boolean() const {
    if (!value_->is_boolean()) {
      fail(fmt::format("expected true/false, got {}", value_->type_name()));
    }
    return value_->get<bool>();
  }
  int64_t integer() const {
    if (!value_->is_number_integer()) {
      fail(fmt::format("expected an integer, got {}", value_->type_name()));
    }
    return value_->get<int64_t>();
  }
  // Optional members: absent and null read as the default.
  bool boolean_or(std::string_view key, bool fallback) const {
    auto f = find(key);
    return f && !f->is_null() ? f->boolean() : fallback;
  }
  std::optional<std::string> string_or_null(std::string_view key) const {
    auto f = find(key);
    if (!f || f->is_null()) {
      return std::nullopt;
    }
    return f->string();
  }
  std::string type() const { return at("type").string(); }

 private:
  std::string child_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }
  const json* value_;
  std::string path_;
  std::string_view origin_;
};

// Token ids index dense tables; a file may leave holes, but not so many that a tiny hostile file
// could make us allocate gigabytes.
constexpr int64_t kMaxIdSlack = 1 << 16;

SplitBehavior parse_behavior(const Field& f) {
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

std::string parse_split_pattern(const Field& f) {
  f.expect_object();
  if (auto regex = f.find("Regex")) {
    return regex->string();
  }
  if (auto literal = f.find("String")) {
    return UnicodeRegex::escape(literal->string());
  }
  f.fail("expected {\"Regex\": ...} or {\"String\": ...}");
}

void parse_pre_tokenizer_step(const Field& f, bool is_last, PreTokenizer& out) {
  const std::string type = f.type();
  if (type == "Split") {
    const Field pattern_field = f.at("pattern");
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

PreTokenizer parse_pre_tokenizer(const Field& root) {
  PreTokenizer out;
  auto f = root.find("pre_tokenizer");
  if (!f || f->is_null()) {
    return out;
  }
  if (f->type() != "Sequence") {
    parse_pre_tokenizer_step(*f, true, out);
    return out;
  }
  const Field steps = f->at("pretokenizers");
  steps.expect_array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    parse_pre_tokenizer_step(steps.at(i), i + 1 == steps.size(), out);
  }
  return out;
}

void check_normalizer(const Field& root) {
  auto f = root.find("normalizer");
  if (!f || f->is_null()) {
    return;
  }
  if (f->type() == "Sequence") {
    const Field list = f->at("normalizers");
    list.expect_array();
    if (list.size() == 0) {
      return;
    }
  }
  f->fail("only a null normalizer is supported (DeepSeek tokenizers have none)");
}

void check_decoder(const Field& root) {
  const Field f = root.at("decoder");
  if (f.is_null() || f.type() != "ByteLevel") {
    f.fail("only the ByteLevel decoder is supported");
  }
}

std::vector<AddedToken> parse_added_tokens(const Field& root) {
  std::vector<AddedToken> tokens;
  auto f = root.find("added_tokens");
  if (!f || f->is_null()) {
    return tokens;
  }
  f->expect_array();
  for (std::size_t i = 0; i < f->size(); ++i) {
    const Field t = f->at(i);
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

std::pair<std::string, std::string> parse_merge(const Field& m) {
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

BpeModel parse_model(const Field& root, bool byte_level, const std::vector<AddedToken>& added) {
  const Field f = root.at("model");
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

  const Field vocab_field = f.at("vocab");
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
  const Field merges_field = f.at("merges");
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

PostProcessor parse_post_processor(const Field& root) {
  PostProcessor out;
  auto f = root.find("post_processor");
  if (!f || f->is_null()) {
    return out;
  }
  std::vector<Field> steps;
  if (f->type() == "Sequence") {
    const Field list = f->at("processors");
    list.expect_array();
    for (std::size_t i = 0; i < list.size(); ++i) {
      steps.push_back(list.at(i));
    }
  } else {
    steps.push_back(*f);
  }
  for (const Field& step : steps) {
    const std::string type = step.type();
    if (type == "ByteLevel") {
      continue;  // offsets only
    }
    if (type != "TemplateProcessing") {
      step.at("type").fail(fmt::format(
          "unsupported post-processor '{}' (TemplateProcessing, ByteLevel, Sequence)", type));
    }
    const Field special = step.at("special_tokens");
    special.expect_object();
    const Field single = step.at("single");
    single.expect_array();
    std::vector<PostProcessor::Piece> pieces;
    for (std::size_t i = 0; i < single.size(); ++i) {
      const Field piece = single.at(i);
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
        const Field ids = entry->at("ids");
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
  const Field root(document, "", origin);
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
