// frontends/http request validation: OpenAI / vLLM bodies -> engine request JSON, and every
// refusal as an OpenAI error (status, param, code) — the bad-input table at the unit level.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "openai_request.hpp"

namespace {

using tessera::http::ApiKind;
using tessera::http::GenerationPlan;
using tessera::http::Json;
using tessera::http::parse_chat_request;
using tessera::http::parse_completion_request;
using tessera::http::RequestError;
using tessera::http::RequestLimits;

constexpr const char* kModel = "tiny";

RequestLimits limits() {
  RequestLimits l;
  l.max_tokens = 1000;
  l.max_n = 4;
  l.max_logprobs = 20;
  l.max_stop = 3;
  l.max_stop_bytes = 16;
  l.max_prompts = 4;
  l.vocab_size = 100;
  return l;
}

struct Refusal {
  unsigned status = 0;
  std::string param, code, message;
};

template <class F>
Refusal refusal(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return {e.error().status, e.error().param, e.error().code, e.error().message};
  }
  ADD_FAILURE() << "expected a refusal";
  return {};
}

Refusal chat_refusal(const std::string& body) {
  return refusal([&] { (void)parse_chat_request(body, limits(), kModel); });
}
Refusal completion_refusal(const std::string& body) {
  return refusal([&] { (void)parse_completion_request(body, limits(), kModel); });
}

const std::string kMessages = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(HttpChatRequest, MinimalRequestBecomesOneEngineRequest) {
  const GenerationPlan plan = parse_chat_request("{" + kMessages + "}", limits(), kModel);
  EXPECT_EQ(plan.kind, ApiKind::kChat);
  EXPECT_EQ(plan.model, kModel);
  EXPECT_FALSE(plan.stream);
  EXPECT_EQ(plan.n, 1);
  ASSERT_EQ(plan.engine_requests.size(), 1u);
  const Json e = Json::parse(plan.engine_requests[0]);
  EXPECT_EQ(e["messages"][0]["content"], "hi");
  EXPECT_EQ(e["n"], 1);
  EXPECT_FALSE(e.contains("temperature"));  // absent -> the server's defaults
  EXPECT_FALSE(e.contains("max_tokens"));
}

TEST(HttpChatRequest, EveryParameterIsCarriedUnderTheEngineName) {
  const std::string body = "{" + kMessages + R"(, "model": "tiny", "max_completion_tokens": 7,
      "max_tokens": 99, "temperature": 0.5, "top_p": 0.9, "top_k": -1, "min_p": 0.1,
      "frequency_penalty": 0.5, "presence_penalty": -0.5, "repetition_penalty": 1.1, "seed": -3,
      "stop": ["a", "b"], "stop_token_ids": [5], "n": 2, "logprobs": true, "top_logprobs": 3,
      "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true,
      "skip_special_tokens": false, "include_stop_str_in_output": true, "cache_salt": "s",
      "reasoning_effort": "max", "thinking": {"type": "enabled"}, "user": "u",
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "tool_choice": "auto"})";
  const GenerationPlan plan = parse_chat_request(body, limits(), kModel);
  EXPECT_TRUE(plan.stream);
  EXPECT_TRUE(plan.include_usage);
  EXPECT_TRUE(plan.logprobs);
  EXPECT_EQ(plan.top_logprobs, 3);
  EXPECT_EQ(plan.n, 2);
  EXPECT_TRUE(plan.tools_given);
  const Json e = Json::parse(plan.engine_requests[0]);
  EXPECT_EQ(e["max_tokens"], 7);  // max_completion_tokens wins over the deprecated name
  EXPECT_EQ(e["temperature"], 0.5);
  EXPECT_EQ(e["top_k"], 0);  // -1 (vLLM's "off") -> 0
  EXPECT_EQ(e["seed"], -3);
  EXPECT_EQ(e["stop"], Json::array({"a", "b"}));
  EXPECT_EQ(e["stop_token_ids"], Json::array({5}));
  EXPECT_EQ(e["n"], 2);
  EXPECT_EQ(e["top_logprobs"], 3);
  EXPECT_EQ(e["ignore_eos"], true);
  EXPECT_EQ(e["skip_special_tokens"], false);
  EXPECT_EQ(e["include_stop_str_in_output"], true);
  EXPECT_EQ(e["cache_salt"], "s");
  EXPECT_EQ(e["thinking"], true);
  EXPECT_EQ(e["reasoning_effort"], "max");
  EXPECT_EQ(e["tools"][0]["function"]["name"], "f");
}

TEST(HttpChatRequest, ThinkingSwitchesAndToolChoiceNone) {
  const auto engine = [](const std::string& extra) {
    return Json::parse(parse_chat_request("{" + kMessages + "," + extra + "}", limits(), kModel)
                           .engine_requests[0]);
  };
  EXPECT_EQ(engine(R"("chat_template_kwargs": {"thinking": true})")["thinking"], true);
  EXPECT_EQ(engine(R"("chat_template_kwargs": {"enable_thinking": false})")["thinking"], false);
  EXPECT_EQ(engine(R"("thinking": {"type": "disabled"})")["thinking"], false);
  EXPECT_FALSE(engine(R"("tools": [{"type": "function", "function": {"name": "f"}}],
                         "tool_choice": "none")")
                   .contains("tools"));
}

TEST(HttpChatRequest, ToolsKeepTheirKeyOrder) {
  // DeepSeek's template renders tool schemas with the client's key order.
  const std::string body = "{" + kMessages + R"(, "tools": [{"type": "function", "function":
      {"name": "f", "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}}]})";
  const std::string e = parse_chat_request(body, limits(), kModel).engine_requests[0];
  EXPECT_LT(e.find("\"z\""), e.find("\"a\"")) << e;
}

TEST(HttpChatRequest, BadInputTable) {
  const struct {
    const char* name;
    std::string body;
    unsigned status;
    const char* param;
    const char* code;
  } rows[] = {
      {"malformed JSON", R"({"messages": [)", 400, "", ""},
      {"not an object", R"([1, 2])", 400, "", ""},
      {"NaN literal", "{" + kMessages + R"(, "temperature": NaN})", 400, "", ""},
      {"trailing garbage", "{" + kMessages + "} x", 400, "", ""},
      {"invalid UTF-8", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}", 400,
       "", ""},
      {"no messages", R"({"model": "tiny"})", 400, "messages", ""},
      {"empty messages", R"({"messages": []})", 400, "messages", ""},
      {"messages not array", R"({"messages": "hi"})", 400, "messages", ""},
      {"message without role", R"({"messages": [{"content": "hi"}]})", 400, "messages", ""},
      {"unknown model", "{" + kMessages + R"(, "model": "gpt-4"})", 404, "model",
       "model_not_found"},
      {"model wrong type", "{" + kMessages + R"(, "model": 3})", 400, "model", ""},
      {"temperature string", "{" + kMessages + R"(, "temperature": "hot"})", 400, "temperature",
       ""},
      {"temperature too high", "{" + kMessages + R"(, "temperature": 2.5})", 400, "temperature",
       ""},
      {"top_p zero", "{" + kMessages + R"(, "top_p": 0})", 400, "top_p", ""},
      {"top_k fractional", "{" + kMessages + R"(, "top_k": 1.5})", 400, "top_k", ""},
      {"n = 10^6", "{" + kMessages + R"(, "n": 1000000})", 400, "n", ""},
      {"n = 0", "{" + kMessages + R"(, "n": 0})", 400, "n", ""},
      {"n huge unsigned", "{" + kMessages + R"(, "n": 18446744073709551615})", 400, "n", ""},
      {"top_logprobs = 1000", "{" + kMessages + R"(, "logprobs": true, "top_logprobs": 1000})", 400,
       "top_logprobs", ""},
      {"top_logprobs without logprobs", "{" + kMessages + R"(, "top_logprobs": 2})", 400,
       "top_logprobs", ""},
      {"max_tokens over the limit", "{" + kMessages + R"(, "max_tokens": 1001})", 400, "max_tokens",
       ""},
      {"max_tokens zero", "{" + kMessages + R"(, "max_completion_tokens": 0})", 400,
       "max_completion_tokens", ""},
      {"too many stops", "{" + kMessages + R"(, "stop": ["a", "b", "c", "d"]})", 400, "stop", ""},
      {"stop too long", "{" + kMessages + R"(, "stop": "0123456789abcdefg"})", 400, "stop", ""},
      {"empty stop", "{" + kMessages + R"(, "stop": [""]})", 400, "stop", ""},
      {"stop token outside vocab", "{" + kMessages + R"(, "stop_token_ids": [100]})", 400,
       "stop_token_ids", ""},
      {"stream_options without stream",
       "{" + kMessages + R"(, "stream_options": {"include_usage": true}})", 400, "stream_options",
       ""},
      {"stream not bool", "{" + kMessages + R"(, "stream": "yes"})", 400, "stream", ""},
      {"logit_bias", "{" + kMessages + R"(, "logit_bias": {"5": 10}})", 400, "logit_bias", ""},
      {"json mode", "{" + kMessages + R"(, "response_format": {"type": "json_object"}})", 400,
       "response_format", ""},
      {"tool_choice required", "{" + kMessages + R"(, "tool_choice": "required"})", 400,
       "tool_choice", ""},
      {"bad tool", "{" + kMessages + R"(, "tools": [{"type": "function"}]})", 400, "tools", ""},
      {"functions", "{" + kMessages + R"(, "functions": [{"name": "f"}]})", 400, "functions", ""},
      {"bad thinking", "{" + kMessages + R"(, "thinking": {"type": "maybe"}})", 400, "thinking",
       ""},
      {"echo", "{" + kMessages + R"(, "echo": true})", 400, "echo", ""},
      {"empty cache_salt", "{" + kMessages + R"(, "cache_salt": ""})", 400, "cache_salt", ""},
      {"number overflow", "{" + kMessages + R"(, "n": 1e400})", 400, "", ""},
      {"thinking without type", "{" + kMessages + R"(, "thinking": {"x": 1}})", 400, "thinking",
       ""},
      {"response_format without type", "{" + kMessages + R"(, "response_format": {}})", 400,
       "response_format", ""},
      {"deep nesting", "{\"messages\": " + std::string(100, '[') + std::string(100, ']') + "}", 400,
       "", ""},
  };
  for (const auto& row : rows) {
    const Refusal r = chat_refusal(row.body);
    EXPECT_EQ(r.status, row.status) << row.name << ": " << r.message;
    EXPECT_EQ(r.param, row.param) << row.name << ": " << r.message;
    EXPECT_EQ(r.code, row.code) << row.name;
    EXPECT_FALSE(r.message.empty()) << row.name;
  }
}

// An object of 100,000 keys (1.2 MB, here in a field the server does not know) is refused
// naming the bound, after a parse linear in the body: ordered_json::parse took ~7 s for it.
TEST(HttpChatRequest, HundredThousandKeysAreRefusedQuickly) {
  std::string keys = "{";
  for (int i = 0; i < 100000; ++i) {
    keys += (i == 0 ? "\"k" : ",\"k") + std::to_string(i) + "\":0";
  }
  keys += "}";
  for (const std::string& body : {"{" + kMessages + R"(, "metadata": )" + keys + "}", keys}) {
    const auto start = std::chrono::steady_clock::now();
    const Refusal r = chat_refusal(body);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.status, 400u);
    EXPECT_NE(r.message.find("max_object_keys"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("1024"), std::string::npos) << r.message;
    EXPECT_LT(ms, 100.0) << "refusing 100,000 keys took " << ms << " ms";
  }
}

// n x prompts beyond max_queue can never be admitted: a 400 naming n, not a retryable 429.
TEST(HttpCompletionRequest, FanOutBeyondTheQueueIsRefused) {
  RequestLimits l = limits();
  l.max_queue = 4;
  EXPECT_NO_THROW((void)parse_completion_request(R"({"prompt": ["a", "b"], "n": 2})", l, kModel));
  const Refusal r = refusal(
      [&] { (void)parse_completion_request(R"({"prompt": ["a", "b", "c"], "n": 2})", l, kModel); });
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.param, "n");
  EXPECT_NE(r.message.find("max_queue = 4"), std::string::npos) << r.message;
  l.max_queue = 3;
  EXPECT_EQ(
      refusal([&] { (void)parse_chat_request("{" + kMessages + R"(, "n": 4})", l, kModel); }).param,
      "n");
}

// A non-streaming body is held whole: a request whose estimate (n x max_tokens x logprob
// entries) exceeds the server's bound is refused before it runs; streamed, it is served.
TEST(HttpChatRequest, NonStreamingBodyBeyondTheBoundIsRefused) {
  RequestLimits l = limits();
  l.max_response_bytes = 1 << 20;
  const std::string big =
      "{" + kMessages + R"(, "n": 4, "max_tokens": 1000, "logprobs": true, "top_logprobs": 20)";
  const Refusal r = refusal([&] { (void)parse_chat_request(big + "}", l, kModel); });
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.param, "top_logprobs");
  EXPECT_NE(r.message.find("stream"), std::string::npos) << r.message;
  EXPECT_NO_THROW((void)parse_chat_request(big + R"(, "stream": true})", l, kModel));
  EXPECT_NO_THROW(
      (void)parse_chat_request("{" + kMessages + R"(, "n": 4, "max_tokens": 1000})", l, kModel));
  // Completions count every prompt; an absent max_tokens is the server's default.
  l.default_max_tokens = 1000;
  EXPECT_EQ(refusal([&] {
              (void)parse_completion_request(R"({"prompt": ["a", "b"], "n": 2, "logprobs": 20})", l,
                                             kModel);
            }).param,
            "logprobs");
}

TEST(HttpCompletionRequest, PromptForms) {
  const auto plan = [](const std::string& prompt) {
    return parse_completion_request(R"({"prompt": )" + prompt + R"(, "n": 2, "logprobs": 2})",
                                    limits(), kModel);
  };
  const auto text = plan(R"("once upon")");
  ASSERT_EQ(text.engine_requests.size(), 1u);
  EXPECT_EQ(Json::parse(text.engine_requests[0])["prompt"], "once upon");
  EXPECT_EQ(Json::parse(text.engine_requests[0])["top_logprobs"], 2);
  const auto ids = plan("[1, 2, 3]");
  ASSERT_EQ(ids.engine_requests.size(), 1u);
  EXPECT_EQ(Json::parse(ids.engine_requests[0])["prompt_token_ids"], Json::array({1, 2, 3}));
  const auto batch = plan(R"(["a", [4, 5], "c"])");
  ASSERT_EQ(batch.engine_requests.size(), 3u);
  EXPECT_EQ(Json::parse(batch.engine_requests[1])["prompt_token_ids"], Json::array({4, 5}));
  EXPECT_EQ(Json::parse(batch.engine_requests[2])["n"], 2);
}

TEST(HttpCompletionRequest, BadInputTable) {
  const struct {
    const char* name;
    const char* body;
    const char* param;
  } rows[] = {
      {"no prompt", R"({"max_tokens": 3})", "prompt"},
      {"empty prompt", R"({"prompt": ""})", "prompt"},
      {"empty array", R"({"prompt": []})", "prompt"},
      {"empty id list", R"({"prompt": [[]]})", "prompt"},
      {"id outside vocab", R"({"prompt": [1, 100]})", "prompt"},
      {"negative id", R"({"prompt": [-1]})", "prompt"},
      {"mixed types", R"({"prompt": [1, "a"]})", "prompt"},
      {"prompt number", R"({"prompt": 5})", "prompt"},
      {"too many prompts", R"({"prompt": ["a", "b", "c", "d", "e"]})", "prompt"},
      {"suffix", R"({"prompt": "a", "suffix": "b"})", "suffix"},
      {"best_of", R"({"prompt": "a", "best_of": 3})", "best_of"},
      {"logprobs 1000", R"({"prompt": "a", "logprobs": 1000})", "logprobs"},
      {"echo with logprobs", R"({"prompt": "a", "echo": true, "logprobs": 1})", "echo"},
  };
  for (const auto& row : rows) {
    const Refusal r = completion_refusal(row.body);
    EXPECT_EQ(r.status, 400u) << row.name << ": " << r.message;
    EXPECT_EQ(r.param, row.param) << row.name << ": " << r.message;
  }
}

}  // namespace
