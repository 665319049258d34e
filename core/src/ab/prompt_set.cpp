#include "ab/prompt_set.hpp"

#include <fmt/format.h>

#include <fstream>

#include "chat/chat_prompt.hpp"
#include "util/check.hpp"

namespace tessera::ab {

std::vector<AbPrompt> load_prompts(const std::filesystem::path& path) {
  std::ifstream in(path);
  TS_CHECK(in.good(), "A/B prompts: cannot read `{}`", path.string());
  std::vector<AbPrompt> prompts;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", path.string(), line_no);
    TS_CHECK(prompts.size() < kMaxPrompts, "{}: more than {} prompts", where, kMaxPrompts);
    AbPrompt p;
    try {
      p.request = chat::Json::parse(line);
    } catch (const chat::Json::exception& e) {
      throw Error(fmt::format("{}: not valid JSON: {}", where, e.what()));
    }
    TS_CHECK(p.request.is_object(), "{}: expected a JSON object", where);
    const int shapes = static_cast<int>(p.request.contains("prompt")) +
                       static_cast<int>(p.request.contains("messages")) +
                       static_cast<int>(p.request.contains("token_ids"));
    TS_CHECK(shapes == 1,
             "{}: a line needs exactly one of \"prompt\" (text), \"messages\" (chat) or "
             "\"token_ids\" (integers)",
             where);
    if (p.request.contains("id")) {
      TS_CHECK(p.request["id"].is_string(), "{}: \"id\" must be a string", where);
      p.id = p.request["id"].get<std::string>();
    } else {
      p.id = fmt::format("line {}", line_no);
    }
    if (p.request.contains("prompt")) {
      TS_CHECK(p.request["prompt"].is_string() && !p.request["prompt"].get<std::string>().empty(),
               "{}: \"prompt\" must be a non-empty string", where);
      p.kind = "prompt";
      p.text = p.request["prompt"].get<std::string>();
    } else if (p.request.contains("messages")) {
      TS_CHECK(p.request["messages"].is_array(), "{}: \"messages\" must be an array", where);
      p.kind = "messages";
    } else {
      const auto& ids = p.request["token_ids"];
      TS_CHECK(ids.is_array() && !ids.empty(), "{}: \"token_ids\" must be a non-empty array",
               where);
      for (const auto& v : ids) {
        TS_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX,
                 "{}: \"token_ids\" holds {}, not a token id", where, v.dump());
        p.token_ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
      }
      p.kind = "token_ids";
    }
    prompts.push_back(std::move(p));
  }
  TS_CHECK(!prompts.empty(), "A/B prompts: `{}` holds no prompt", path.string());
  return prompts;
}

void tokenize_prompts(std::vector<AbPrompt>& prompts, const tokenizer::Tokenizer* tokenizer,
                      int64_t vocab_size) {
  for (AbPrompt& p : prompts) {
    if (p.kind != "token_ids") {
      TS_CHECK(tokenizer != nullptr,
               "A/B prompt `{}` is text but the model has no tokenizer.json; give "
               "{{\"token_ids\": [...]}} instead",
               p.id);
      if (p.kind == "messages") {
        p.text = chat::render_chat_prompt(p.request, chat::ReasoningEffortProfile::kPreview).text;
      }
      p.token_ids = tokenizer->encode(p.text);
      TS_CHECK(!p.token_ids.empty(), "A/B prompt `{}` encodes to no token", p.id);
    }
    for (int32_t id : p.token_ids) {
      TS_CHECK(id < vocab_size, "A/B prompt `{}`: token id {} is outside the vocabulary ({})", p.id,
               id, vocab_size);
    }
  }
}

}  // namespace tessera::ab
