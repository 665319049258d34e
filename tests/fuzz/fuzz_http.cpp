// Fuzzes the HTTP frontend's handling of outside bytes (frontends/http), three ways chosen by the
// first input byte:
//  0: raw bytes as an HTTP/1.1 request through Beast's parser with the frontend's header and
//     body limits, then the route gate. Invariants: a refusal is 400/401/404/405 with a message;
//     without the key only the exact exempt paths pass; a routed path is one of the table's.
//  1: the rest as a /v1/chat/completions body, 2: as a /v1/completions body. The parser returns a
//     plan or throws RequestError (400 or 404 with a message) — never another exception. A plan
//     respects the limits and every engine request it carries is a JSON object.
//  3: the rest as a list of engine events (one JSON per line) fed to the ResponseBuilder: every
//     SSE frame it emits is "data: <valid JSON>\n\n".
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../../frontends/http/openai_request.hpp"
#include "../../frontends/http/response_builder.hpp"
#include "../../frontends/http/router.hpp"

namespace {

namespace http = boost::beast::http;
using namespace tessera::http;

void require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "fuzz_http invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

RequestLimits limits() {
  RequestLimits l;
  l.max_tokens = 512;
  l.max_n = 4;
  l.max_logprobs = 5;
  l.max_stop = 4;
  l.max_stop_bytes = 32;
  l.max_prompts = 4;
  l.vocab_size = 1000;
  return l;
}

// Independent of api_key.cpp: "Bearer" (any case), spaces, "k", optional trailing blanks.
bool carries_key(std::string_view header) {
  std::string s(header);
  if (s.size() < 8) return false;
  for (std::size_t i = 0; i < 6; ++i)
    s[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  if (s.compare(0, 7, "bearer ") != 0) return false;
  std::string rest = s.substr(7);
  rest.erase(0, rest.find_first_not_of(' '));
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.pop_back();
  return rest == "k";
}

void fuzz_request_bytes(std::string_view bytes) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(4096);
  parser.body_limit(1 << 16);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec || !parser.is_header_done()) return;
  const auto& req = parser.get();
  GateOptions options;
  options.api_key = "k";
  options.exempt_paths = {"/health", "/metrics"};
  GateInput in;
  in.method = req.method() == http::verb::get    ? Method::kGet
              : req.method() == http::verb::post ? Method::kPost
              : req.method() == http::verb::head ? Method::kHead
                                                 : Method::kOther;
  in.target = std::string_view(req.target().data(), req.target().size());
  const auto auth = req[http::field::authorization];
  in.authorization = std::string_view(auth.data(), auth.size());
  const GateDecision d = decide(in, options);
  if (d.kind == GateDecision::Kind::kReject) {
    require(d.status == 400 || d.status == 401 || d.status == 404 || d.status == 405,
            "unexpected refusal status", std::to_string(d.status));
    require(!d.message.empty(), "refusal without a message");
    return;
  }
  const auto target = split_target(in.target);
  require(target.has_value(), "routed a malformed target", std::string(in.target));
  const bool exempt = target->path == "/health" || target->path == "/metrics";
  require(exempt || carries_key(in.authorization), "routed without the key",
          std::string(in.target) + " / " + std::string(in.authorization));
  require(match_route(target->path).has_value(), "routed an unknown path");
}

void fuzz_body(std::string_view body, bool chat) {
  const RequestLimits l = limits();
  try {
    const GenerationPlan plan =
        chat ? parse_chat_request(body, l, "m") : parse_completion_request(body, l, "m");
    require(plan.n >= 1 && plan.n <= l.max_n, "n outside the limit");
    require(plan.top_logprobs >= 0 && plan.top_logprobs <= l.max_logprobs, "top_logprobs");
    require(!plan.engine_requests.empty(), "no engine request");
    require(static_cast<std::int64_t>(plan.engine_requests.size()) <= l.max_prompts,
            "too many prompts");
    for (const auto& e : plan.engine_requests) {
      const auto j = Json::parse(e, nullptr, false);
      require(j.is_object(), "engine request is not a JSON object", e);
      if (j.contains("max_tokens")) {
        require(j["max_tokens"].get<std::int64_t>() <= l.max_tokens, "max_tokens over the limit");
      }
    }
  } catch (const RequestError& e) {
    require(e.error().status == 400 || e.error().status == 404, "unexpected status",
            std::to_string(e.error().status));
    require(!e.error().message.empty(), "error without a message");
    require(Json::parse(e.error().body(), nullptr, false).is_object(), "error body not JSON");
  }
}

void fuzz_events(std::string_view text) {
  GenerationPlan plan;
  plan.kind = text.size() % 2 ? ApiKind::kChat : ApiKind::kCompletion;
  plan.model = "m";
  plan.stream = true;
  plan.include_usage = true;
  plan.logprobs = true;
  plan.n = 2;
  plan.engine_requests = {"{}", "{}"};
  plan.echo_texts = {"", ""};
  ResponseBuilder builder(plan, "id", 1);
  std::string out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(begin, end - begin);
    const auto event = Json::parse(line, nullptr, false);
    out += builder.on_event(line.size() % 3, event);
    begin = end + 1;
  }
  if (builder.complete()) out += builder.stream_tail();
  if (!plan.stream) return;
  std::size_t pos = 0;
  while (pos < out.size()) {
    require(out.compare(pos, 6, "data: ") == 0, "frame without 'data: '", out.substr(pos, 80));
    const std::size_t stop = out.find("\n\n", pos);
    require(stop != std::string::npos, "unterminated frame");
    const std::string payload = out.substr(pos + 6, stop - pos - 6);
    require(payload == "[DONE]" || Json::parse(payload, nullptr, false).is_object(),
            "frame payload is not JSON", payload);
    pos = stop + 2;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      fuzz_request_bytes(rest);
      break;
    case 1:
      fuzz_body(rest, /*chat=*/true);
      break;
    case 2:
      fuzz_body(rest, /*chat=*/false);
      break;
    default:
      fuzz_events(rest);
  }
  return 0;
}
