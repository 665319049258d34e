// frontends/http response building: engine events -> OpenAI objects and SSE frames, checked
// frame by frame against the shapes OpenAI sends (role chunk first, deltas, finish chunk, usage
// chunk with empty choices, [DONE] last).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "response_builder.hpp"

namespace {

using tessera::http::ApiKind;
using tessera::http::GenerationPlan;
using tessera::http::Json;
using tessera::http::ResponseBuilder;

GenerationPlan chat_plan(bool stream, bool usage, int n = 1) {
  GenerationPlan p;
  p.kind = ApiKind::kChat;
  p.model = "tiny";
  p.stream = stream;
  p.include_usage = usage;
  p.n = n;
  p.engine_requests = {"{}"};
  return p;
}

// "data: {...}\n\n" frames -> their payloads ("[DONE]" kept as text).
std::vector<std::string> frames(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    EXPECT_EQ(sse.compare(pos, 6, "data: "), 0) << sse.substr(pos);
    const std::size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    if (end == std::string::npos) break;
    out.push_back(sse.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

Json ev(const char* text) { return Json::parse(text); }

TEST(HttpResponse, ChatStreamHasOpenAIShape) {
  ResponseBuilder b(chat_plan(true, true), "chatcmpl-x", 123);
  std::string sse;
  sse += b.on_event(0, ev(R"({"type":"delta","index":0,"reasoning":"let me think"})"));
  sse += b.on_event(0, ev(R"({"type":"delta","index":0,"content":"Hello"})"));
  sse += b.on_event(
      0, ev(R"({"type":"delta","index":0,"tool_calls":[{"name":"f","arguments":"{\"x\":1}"}]})"));
  sse +=
      b.on_event(0, ev(R"({"type":"finish","index":0,"finish_reason":"stop","stop_reason":null})"));
  EXPECT_FALSE(b.complete());
  sse += b.on_event(
      0,
      ev(R"({"type":"done","usage":{"prompt_tokens":5,"completion_tokens":9,"reasoning_tokens":3,"cached_tokens":0}})"));
  ASSERT_TRUE(b.complete());
  sse += b.stream_tail();
  const auto f = frames(sse);
  ASSERT_EQ(f.size(), 7u) << sse;
  for (std::size_t i = 0; i + 1 < f.size(); ++i) {
    const Json c = Json::parse(f[i]);
    EXPECT_EQ(c["id"], "chatcmpl-x");
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["created"], 123);
    EXPECT_EQ(c["model"], "tiny");
    EXPECT_TRUE(c.contains("usage"));  // null until the last chunk, when include_usage
  }
  const Json role = Json::parse(f[0]);
  EXPECT_EQ(role["choices"][0]["delta"], Json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(role["choices"][0]["finish_reason"].is_null());
  const Json reasoning = Json::parse(f[1])["choices"][0]["delta"];
  EXPECT_EQ(reasoning["reasoning_content"], "let me think");
  EXPECT_EQ(reasoning["reasoning"], "let me think");
  EXPECT_FALSE(reasoning.contains("content"));
  EXPECT_EQ(Json::parse(f[2])["choices"][0]["delta"]["content"], "Hello");
  const Json call = Json::parse(f[3])["choices"][0]["delta"]["tool_calls"][0];
  EXPECT_EQ(call["index"], 0);
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "f");
  EXPECT_EQ(call["function"]["arguments"], "{\"x\":1}");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  const Json fin = Json::parse(f[4])["choices"][0];
  EXPECT_EQ(fin["delta"], Json::object());
  EXPECT_EQ(fin["finish_reason"], "tool_calls");  // stop with tool calls
  const Json usage = Json::parse(f[5]);
  EXPECT_EQ(usage["choices"], Json::array());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 9);
  EXPECT_EQ(usage["usage"]["total_tokens"], 14);
  EXPECT_EQ(usage["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_EQ(f[6], "[DONE]");
}

TEST(HttpResponse, NoUsageChunkUnlessAsked) {
  ResponseBuilder b(chat_plan(true, false), "id", 1);
  std::string sse = b.on_event(0, ev(R"({"type":"delta","index":0,"content":"a"})"));
  sse += b.on_event(0, ev(R"({"type":"finish","index":0,"finish_reason":"length"})"));
  sse += b.on_event(0, ev(R"({"type":"done","usage":{}})"));
  sse += b.stream_tail();
  const auto f = frames(sse);
  ASSERT_EQ(f.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(Json::parse(f[i]).contains("usage"));
  EXPECT_EQ(f[3], "[DONE]");
}

TEST(HttpResponse, ChatNonStreamingMessage) {
  ResponseBuilder b(chat_plan(false, false, 2), "id", 1);
  EXPECT_EQ(b.on_event(0, ev(R"({"type":"delta","index":1,"reasoning":"r","content":"B"})")), "");
  (void)b.on_event(0, ev(R"({"type":"delta","index":0,"content":"A"})"));
  (void)b.on_event(
      0, ev(R"({"type":"delta","index":0,"tool_calls":[{"name":"g","arguments":"{}"}]})"));
  (void)b.on_event(0, ev(R"({"type":"finish","index":0,"finish_reason":"stop"})"));
  (void)b.on_event(0, ev(R"({"type":"finish","index":1,"finish_reason":"length"})"));
  (void)b.on_event(0, ev(R"({"type":"done","usage":{"prompt_tokens":2,"completion_tokens":4}})"));
  ASSERT_TRUE(b.complete());
  const Json body = Json::parse(b.final_body());
  EXPECT_EQ(body["object"], "chat.completion");
  ASSERT_EQ(body["choices"].size(), 2u);
  const Json& c0 = body["choices"][0];
  EXPECT_EQ(c0["index"], 0);
  EXPECT_EQ(c0["message"]["role"], "assistant");
  EXPECT_EQ(c0["message"]["content"], "A");
  EXPECT_EQ(c0["message"]["tool_calls"][0]["function"]["name"], "g");
  EXPECT_EQ(c0["finish_reason"], "tool_calls");
  const Json& c1 = body["choices"][1];
  EXPECT_EQ(c1["message"]["content"], "B");
  EXPECT_EQ(c1["message"]["reasoning_content"], "r");
  EXPECT_FALSE(c1["message"].contains("tool_calls"));
  EXPECT_EQ(c1["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 6);
}

TEST(HttpResponse, CompletionsLegacyLogprobsAndPromptBatches) {
  GenerationPlan p;
  p.kind = ApiKind::kCompletion;
  p.model = "tiny";
  p.n = 2;
  p.logprobs = true;
  p.top_logprobs = 1;
  p.engine_requests = {"{}", "{}"};
  ResponseBuilder b(p, "cmpl-x", 1);
  // Prompt 1, choice 1 -> overall index 3.
  (void)b.on_event(1, ev(R"({"type":"delta","index":1,"text":"ab","logprobs":[
      {"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[{"token":"a","logprob":-0.5}]},
      {"token":"b","bytes":[98],"logprob":-1.5,"top_logprobs":[{"token":"c","logprob":-0.1}]}]})"));
  for (int prompt = 0; prompt < 2; ++prompt) {
    for (int i = 0; i < 2; ++i) {
      (void)b.on_event(prompt, ev(("{\"type\":\"finish\",\"index\":" + std::to_string(i) +
                                   ",\"finish_reason\":\"length\"}")
                                      .c_str()));
    }
    EXPECT_FALSE(b.complete());
    (void)b.on_event(prompt,
                     ev(R"({"type":"done","usage":{"prompt_tokens":1,"completion_tokens":2}})"));
  }
  ASSERT_TRUE(b.complete());
  const Json body = Json::parse(b.final_body());
  EXPECT_EQ(body["object"], "text_completion");
  ASSERT_EQ(body["choices"].size(), 4u);
  const Json& c = body["choices"][3];
  EXPECT_EQ(c["text"], "ab");
  EXPECT_EQ(c["logprobs"]["tokens"], Json::array({"a", "b"}));
  EXPECT_EQ(c["logprobs"]["token_logprobs"], Json::array({-0.5, -1.5}));
  EXPECT_EQ(c["logprobs"]["top_logprobs"][1], Json({{"c", -0.1}}));
  EXPECT_EQ(c["logprobs"]["text_offset"], Json::array({0, 1}));
  EXPECT_EQ(body["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
}

TEST(HttpResponse, ErrorBeforeOutputIsAFailureAfterOutputInBand) {
  ResponseBuilder early(chat_plan(true, false), "id", 1);
  EXPECT_EQ(early.on_event(0, ev(R"({"type":"error","status":503,"message":"busy"})")), "");
  ASSERT_TRUE(early.failure().has_value());
  EXPECT_EQ(early.failure()->status, 503u);
  EXPECT_FALSE(early.started_streaming());

  ResponseBuilder late(chat_plan(true, false), "id", 1);
  (void)late.on_event(0, ev(R"({"type":"delta","index":0,"content":"a"})"));
  const std::string frame = late.on_event(0, ev(R"({"type":"error","message":"boom"})"));
  EXPECT_FALSE(late.failure().has_value());
  const auto f = frames(frame);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Json::parse(f[0])["error"]["message"], "boom");
  EXPECT_EQ(Json::parse(f[0])["error"]["type"], "internal_error");
}

TEST(HttpResponse, IgnoresEventsItCannotPlace) {
  ResponseBuilder b(chat_plan(true, false), "id", 1);
  EXPECT_EQ(b.on_event(5, ev(R"({"type":"delta","index":0,"content":"a"})")), "");
  EXPECT_EQ(b.on_event(0, ev(R"({"type":"delta","index":7,"content":"a"})")), "");
  EXPECT_EQ(b.on_event(0, ev(R"("not an object")")), "");
  EXPECT_EQ(b.on_event(0, ev(R"({"type":"mystery"})")), "");
}

TEST(HttpResponse, ApiErrorBody) {
  tessera::http::ApiError e;
  e.status = 400;
  e.message = "This model's maximum context length is 10 tokens.";
  e.param = "messages";
  e.code = "context_length_exceeded";
  const Json body = Json::parse(e.body());
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(body["error"]["param"], "messages");
  // Key order as OpenAI sends it.
  EXPECT_LT(e.body().find("\"message\""), e.body().find("\"type\""));
  tessera::http::ApiError auth;
  auth.status = 401;
  EXPECT_EQ(Json::parse(auth.body())["error"]["type"], "authentication_error");
  EXPECT_TRUE(Json::parse(auth.body())["error"]["param"].is_null());
}

}  // namespace
