// The host side of serving (core/src/serve): request JSON -> engine requests (validation, limits,
// vLLM's context-length wording, chat rendering), the chat output splitter (reasoning / content /
// tool calls, held-back text released at the end, reasoning-token count), and the Prometheus
// text (format, vLLM names, model_name on every sample).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "serve/chat_output.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/serve_request.hpp"
#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/model_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

using tessera::serve::ChatOutputSplitter;
using tessera::serve::context_length_message;
using tessera::serve::InvalidRequest;
using tessera::serve::parse_serve_request;
using tessera::serve::ServeLimits;
namespace chat = tessera::chat;

const tessera::tokenizer::Tokenizer& tokenizer() {
  static const auto tok = tessera::tokenizer::Tokenizer::from_file(
      std::string(TESSERA_SOURCE_DIR) + "/models/tiny-dsv4/tokenizer.json");
  return tok;
}

ServeLimits limits(int64_t max_context = 64) {
  ServeLimits l;
  l.max_context = max_context;
  l.max_tokens = 64;
  l.max_n = 4;
  l.max_logprobs = 5;
  return l;
}

InvalidRequest::Kind refusal(const std::string& json, std::string* message = nullptr) {
  try {
    (void)parse_serve_request(json, tokenizer(), limits());
  } catch (const InvalidRequest& e) {
    if (message != nullptr) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "accepted: " << json;
  return InvalidRequest::Kind::kInvalid;
}

TEST(HttpServing, TextPromptBecomesTokenizedEngineRequest) {
  const auto r = parse_serve_request(
      R"({"prompt": "Hello world", "n": 2, "max_tokens": 5, "temperature": 0, "seed": 7,
          "stop": ["x"], "stop_token_ids": [1], "logprobs": true, "top_logprobs": 3,
          "cache_salt": "s", "ignore_eos": true})",
      tokenizer(), limits());
  EXPECT_FALSE(r.chat);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.base.prompt, tokenizer().encode("Hello world"));
  EXPECT_EQ(r.base.max_tokens.value_or(0), 5);
  EXPECT_EQ(r.base.sampling.temperature.value_or(-1), 0.0);
  EXPECT_EQ(r.base.sampling.seed.value_or(0), 7u);
  EXPECT_FALSE(r.base.sampling.top_p.has_value());  // absent -> [sampler.defaults]
  EXPECT_EQ(r.base.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.base.stop_token_ids, std::vector<int32_t>{1});
  EXPECT_TRUE(r.base.logprobs);
  EXPECT_EQ(r.base.top_logprobs, 3);
  EXPECT_EQ(r.base.cache_salt, "s");
  EXPECT_TRUE(r.base.ignore_eos);
}

TEST(HttpServing, ChatMessagesAreRenderedWithTheTemplate) {
  const auto r =
      parse_serve_request(R"({"messages": [{"role": "user", "content": "Hi"}], "thinking": true})",
                          tokenizer(), limits());
  EXPECT_TRUE(r.chat);
  EXPECT_EQ(r.thinking, chat::ThinkingMode::kThinking);
  chat::EncodeOptions o;
  o.thinking_mode = chat::ThinkingMode::kThinking;
  const std::string prompt =
      chat::encode_messages(chat::Json::array({{{"role", "system"}, {"content", ""}},
                                               {{"role", "user"}, {"content", "Hi"}}}),
                            o);
  EXPECT_EQ(r.base.prompt, tokenizer().encode(prompt));
  // reasoning_effort alone turns thinking on; an explicit false wins.
  EXPECT_EQ(parse_serve_request(R"({"messages": [{"role": "user", "content": "Hi"}],
                                    "reasoning_effort": "max"})",
                                tokenizer(), limits(4096))
                .thinking,
            chat::ThinkingMode::kThinking);
  EXPECT_EQ(parse_serve_request(R"({"messages": [{"role": "user", "content": "Hi"}],
                                    "reasoning_effort": "max", "thinking": false})",
                                tokenizer(), limits(4096))
                .thinking,
            chat::ThinkingMode::kChat);
}

TEST(HttpServing, Refusals) {
  using K = InvalidRequest::Kind;
  EXPECT_EQ(refusal("not json"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"max_tokens": 3})"), K::kInvalid);  // no prompt
  EXPECT_EQ(refusal(R"({"prompt": "a", "prompt_token_ids": [1]})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": ""})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": "a", "n": 5})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": "a", "top_logprobs": 6})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": "a", "temperature": "hot"})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt_token_ids": [1, 99999]})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": "a", "min_tokens": 3})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"prompt": "a", "stop": [""]})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"messages": []})"), K::kInvalid);
  EXPECT_EQ(refusal(R"({"messages": [{"role": "wizard", "content": "x"}]})"), K::kInvalid);
  std::string message;
  EXPECT_EQ(refusal(R"({"messages": [{"role": "user", "content": "x"}],
                        "reasoning_effort": "medium"})",
                    &message),
            K::kInvalid);
  EXPECT_NE(message.find("\"high\" or \"max\""), std::string::npos) << message;
}

// A model without tokenizer.json (the id stand-in, tokenizer/model_tokenizer.hpp): text and chat
// prompts are refused naming the field, token ids pass and decode to "<id>" text.
TEST(HttpServing, IdsOnlyModelTakesTokenIdsAndRefusesText) {
  const auto ids = tessera::tokenizer::make_id_tokenizer(32);
  ServeLimits l = limits();
  l.token_ids_only = true;
  for (const auto& [json, field] :
       {std::pair<std::string, std::string>{R"({"prompt": "<1><2>"})", "'prompt'"},
        {R"({"messages": [{"role": "user", "content": "x"}]})", "'messages'"}}) {
    try {
      (void)parse_serve_request(json, ids, l);
      ADD_FAILURE() << "accepted: " << json;
    } catch (const InvalidRequest& e) {
      EXPECT_EQ(e.kind(), InvalidRequest::Kind::kInvalid);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
    }
  }
  const auto r = parse_serve_request(R"({"prompt_token_ids": [3, 31, 0]})", ids, l);
  EXPECT_EQ(r.base.prompt, (std::vector<int32_t>{3, 31, 0}));
  EXPECT_EQ(ids.decode(r.base.prompt), "<3><31><0>");
  EXPECT_THROW((void)parse_serve_request(R"({"prompt_token_ids": [32]})", ids, l), InvalidRequest);
}

TEST(HttpServing, ContextLengthInVllmWords) {
  std::string message;
  const std::string long_prompt(400, 'a');
  EXPECT_EQ(
      refusal(R"({"prompt": ")" + std::string(100, 'x') + " " + long_prompt + R"("})", &message),
      InvalidRequest::Kind::kTooLong);
  EXPECT_NE(message.find("This model's maximum context length is 64 tokens. However, your "
                         "request has "),
            std::string::npos)
      << message;
  const auto ids = R"({"prompt_token_ids": [)" + std::string("1,2,3,4,5,6,7,8,9,10") + R"(],
                       "max_tokens": 60})";
  EXPECT_EQ(refusal(ids, &message), InvalidRequest::Kind::kTooLong);
  EXPECT_EQ(message,
            "This model's maximum context length is 64 tokens. However, you requested 70 tokens "
            "(10 in the messages, 60 in the completion). Please reduce the length of the messages "
            "or completion.");
  EXPECT_EQ(context_length_message(8, 8, std::nullopt),
            "This model's maximum context length is 8 tokens. However, your request has 8 input "
            "tokens. Please reduce the length of the input messages.");
  // Exactly filling the context is fine.
  EXPECT_NO_THROW((void)parse_serve_request(R"({"prompt_token_ids": [1,2,3,4], "max_tokens": 60})",
                                            tokenizer(), limits()));
}

// Feeds text token by token (as the engine would) and gathers what the splitter emits.
struct Split {
  std::string reasoning, content;
  std::vector<chat::ToolCall> calls;
  int64_t reasoning_tokens = 0;
};

Split split(const std::string& text, chat::ThinkingMode mode, bool by_bytes) {
  const auto& tok = tokenizer();
  ChatOutputSplitter s(mode, tok.token_to_id(chat::kThinkEnd));
  Split out;
  const auto add = [&](const ChatOutputSplitter::Piece& p) {
    out.reasoning += p.reasoning;
    out.content += p.content;
    out.calls.insert(out.calls.end(), p.tool_calls.begin(), p.tool_calls.end());
  };
  const auto ids = tok.encode(text);
  if (by_bytes) {  // text in 1-byte pieces, tokens all at once: holding back is exercised hard
    for (std::size_t i = 0; i < text.size(); ++i) {
      const std::span<const int32_t> none;
      add(s.push(text.substr(i, 1), i == 0 ? std::span<const int32_t>(ids) : none));
    }
  } else {
    tessera::tokenizer::IncrementalDetokenizer detokenizer(tok);
    for (const int32_t id : ids) add(s.push(detokenizer.push(id), {&id, 1}));
  }
  add(s.finish());
  out.reasoning_tokens = s.reasoning_tokens();
  return out;
}

TEST(HttpServing, SplitterSeparatesReasoningContentAndToolCalls) {
  for (const bool by_bytes : {false, true}) {
    const Split a =
        split("Let me think.</think>The answer.", chat::ThinkingMode::kThinking, by_bytes);
    EXPECT_EQ(a.reasoning, "Let me think.");
    EXPECT_EQ(a.content, "The answer.");
    EXPECT_EQ(a.reasoning_tokens, static_cast<int64_t>(tokenizer().encode("Let me think.").size()));

    const Split b = split(
        "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
        "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
        chat::ThinkingMode::kChat, by_bytes);
    EXPECT_EQ(b.content, "Checking.");
    ASSERT_EQ(b.calls.size(), 1u);
    EXPECT_EQ(b.calls[0].name, "get_weather");
    EXPECT_EQ(b.calls[0].arguments_json, R"({"city": "Paris"})");
    EXPECT_EQ(b.reasoning_tokens, 0);
  }
}

TEST(HttpServing, SplitterReleasesHeldBackTextAtTheEnd) {
  // Text that ends like the start of a marker is held back while streaming and must not be lost
  // when the choice ends (max_tokens) without the marker.
  for (const bool by_bytes : {false, true}) {
    EXPECT_EQ(split("a < b </thi", chat::ThinkingMode::kThinking, by_bytes).reasoning,
              "a < b </thi");
    EXPECT_EQ(split("x\n\n<｜DSML", chat::ThinkingMode::kChat, by_bytes).content, "x\n\n<｜DSML");
    const Split cut = split("thinking without end", chat::ThinkingMode::kThinking, by_bytes);
    EXPECT_EQ(cut.reasoning, "thinking without end");
    EXPECT_EQ(cut.content, "");
    EXPECT_EQ(cut.reasoning_tokens,
              static_cast<int64_t>(tokenizer().encode("thinking without end").size()));
  }
}

TEST(HttpServing, PrometheusTextIsWellFormed) {
  tessera::serve::ServeMetrics m(1024);
  m.request_started();
  m.first_token(0.003);
  m.inter_token(0.02);
  m.tokens_generated(5);
  m.request_finished(tessera::serve::Finish::kLength, 7, 5, 0.5, 16, 1);
  tessera::serve::EngineSnapshot engine;
  engine.running = 2;
  engine.kv_cache_usage = 0.25;
  const std::string text = m.exposition("my \"model\"", engine);
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$)");
  std::istringstream lines(text);
  std::string line;
  std::set<std::string> typed;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, sample)) << line;
    std::string base = match[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (!typed.count(base) && base.size() > std::strlen(suffix) &&
          base.compare(base.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
        base.resize(base.size() - std::strlen(suffix));
      }
    }
    EXPECT_TRUE(typed.count(base)) << "sample before its TYPE: " << line;
    EXPECT_NE(match[2].str().find(R"(model_name="my \"model\"")"), std::string::npos) << line;
    ++samples;
  }
  EXPECT_GT(samples, 40);
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"my \\\"model\\\"\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"my \\\"model\\\"\"} 0.25\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:request_success_total{model_name=\"my \\\"model\\\"\",finished_reason="
                      "\"length\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"my \\\"model\\\"\","
                      "le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"my \\\"model\\\"\","
                      "le=\"0.001\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:e2e_request_latency_seconds histogram"), std::string::npos);
}

}  // namespace
