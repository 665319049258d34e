// frontends/http routing and access: the API key (constant-time compare, Bearer parsing), exact
// route matching that path tricks cannot bypass, exempt paths, methods, CORS preflight.
#include <gtest/gtest.h>

#include <string>

#include "api_key.hpp"
#include "router.hpp"

namespace {

using tessera::http::authorized;
using tessera::http::bearer_token;
using tessera::http::constant_time_equals;
using tessera::http::decide;
using tessera::http::GateDecision;
using tessera::http::GateInput;
using tessera::http::GateOptions;
using tessera::http::Method;
using tessera::http::Route;

TEST(HttpApiKey, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(constant_time_equals("secret-key", "secret-key"));
  EXPECT_FALSE(constant_time_equals("secret-kex", "secret-key"));
  EXPECT_FALSE(constant_time_equals("secret", "secret-key"));        // prefix
  EXPECT_FALSE(constant_time_equals("secret-key-2", "secret-key"));  // longer
  EXPECT_FALSE(constant_time_equals("", "secret-key"));
  EXPECT_FALSE(constant_time_equals("x", ""));
  EXPECT_TRUE(constant_time_equals("", ""));
  // A guess that repeats the key cyclically must not pass (the loop indexes given modulo size).
  EXPECT_FALSE(constant_time_equals("ab", "abab"));
  EXPECT_FALSE(constant_time_equals(std::string("a\0b", 3), "a"));
}

TEST(HttpApiKey, BearerTokenParsing) {
  EXPECT_EQ(bearer_token("Bearer abc").value_or("?"), "abc");
  EXPECT_EQ(bearer_token("bearer   abc  ").value_or("?"), "abc");
  EXPECT_EQ(bearer_token("BEARER abc").value_or("?"), "abc");
  EXPECT_FALSE(bearer_token("Bearer").has_value());
  EXPECT_FALSE(bearer_token("Bearer ").has_value());
  EXPECT_FALSE(bearer_token("Bearerabc").has_value());
  EXPECT_FALSE(bearer_token("Basic abc").has_value());
  EXPECT_FALSE(bearer_token("abc").has_value());
  EXPECT_FALSE(bearer_token("").has_value());
}

TEST(HttpApiKey, AuthorizedNeedsTheExactKeyWhenOneIsSet) {
  EXPECT_TRUE(authorized("", ""));
  EXPECT_TRUE(authorized("Bearer anything", ""));
  EXPECT_TRUE(authorized("Bearer k1", "k1"));
  EXPECT_FALSE(authorized("Bearer k2", "k1"));
  EXPECT_FALSE(authorized("k1", "k1"));
  EXPECT_FALSE(authorized("", "k1"));
}

GateOptions with_key() {
  GateOptions o;
  o.api_key = "k1";
  o.exempt_paths = {"/health", "/ready", "/metrics"};
  return o;
}

GateDecision gate(Method m, const char* target, const char* auth, const GateOptions& o,
                  const char* origin = "") {
  GateInput in;
  in.method = m;
  in.target = target;
  in.authorization = auth;
  in.origin = origin;
  return decide(in, o);
}

TEST(HttpGate, EveryRouteIsFoundWithItsMethod) {
  const GateOptions open;
  const struct {
    Method method;
    const char* path;
    Route route;
  } cases[] = {
      {Method::kPost, "/v1/chat/completions", Route::kChatCompletions},
      {Method::kPost, "/v1/completions", Route::kCompletions},
      {Method::kGet, "/v1/models", Route::kModels},
      {Method::kGet, "/v1/models/org/name", Route::kModel},
      {Method::kPost, "/tokenize", Route::kTokenize},
      {Method::kPost, "/detokenize", Route::kDetokenize},
      {Method::kGet, "/health", Route::kHealth},
      {Method::kHead, "/health", Route::kHealth},
      {Method::kGet, "/ready", Route::kReady},
      {Method::kGet, "/metrics?x=1", Route::kMetrics},
  };
  for (const auto& c : cases) {
    const auto d = gate(c.method, c.path, "", open);
    ASSERT_EQ(d.kind, GateDecision::Kind::kRoute) << c.path << ": " << d.message;
    EXPECT_EQ(d.match.route, c.route) << c.path;
  }
  EXPECT_EQ(gate(Method::kGet, "/v1/models/org/name", "", open).match.model_id, "org/name");
}

// Framing: HTTP/1.1 without Host is 400; a transfer or content coding the server cannot undo
// is 501 / 415, before the key check and the route (the body would otherwise be read as JSON).
TEST(HttpGate, HostAndCodingsAreChecked) {
  const auto framed = [](bool http11, bool host, const char* te, const char* ce) {
    GateInput in;
    in.method = Method::kPost;
    in.target = "/tokenize";
    in.http11 = http11;
    in.has_host = host;
    in.transfer_encoding = te;
    in.content_encoding = ce;
    return decide(in, with_key());
  };
  EXPECT_EQ(framed(true, false, "", "").status, 400u);
  EXPECT_NE(framed(true, false, "", "").message.find("Host"), std::string::npos);
  EXPECT_EQ(framed(false, false, "", "").status, 401u);  // HTTP/1.0 needs none: on to the key
  EXPECT_EQ(framed(true, true, "chunked", "").status, 401u);
  EXPECT_EQ(framed(true, true, "Chunked", "identity").status, 401u);
  EXPECT_EQ(framed(true, true, "gzip, chunked", "").status, 501u);
  EXPECT_NE(framed(true, true, "gzip, chunked", "").message.find("gzip"), std::string::npos);
  EXPECT_EQ(framed(true, true, "", "gzip").status, 415u);
  EXPECT_EQ(framed(true, true, "", " br ").status, 415u);
}

TEST(HttpGate, WrongMethodIs405WithAllow) {
  const auto d = gate(Method::kGet, "/v1/chat/completions", "", GateOptions{});
  EXPECT_EQ(d.kind, GateDecision::Kind::kReject);
  EXPECT_EQ(d.status, 405u);
  EXPECT_EQ(d.allow, "POST");
  EXPECT_EQ(gate(Method::kPost, "/v1/models", "", GateOptions{}).status, 405u);
}

TEST(HttpGate, KeyRequiredEverywhereButTheExactExemptPaths) {
  const auto o = with_key();
  EXPECT_EQ(gate(Method::kPost, "/v1/chat/completions", "", o).status, 401u);
  EXPECT_EQ(gate(Method::kPost, "/v1/chat/completions", "Bearer k2", o).status, 401u);
  EXPECT_EQ(gate(Method::kPost, "/v1/chat/completions", "Bearer k1", o).kind,
            GateDecision::Kind::kRoute);
  EXPECT_EQ(gate(Method::kGet, "/health", "", o).kind, GateDecision::Kind::kRoute);
  EXPECT_EQ(gate(Method::kGet, "/ready", "", o).kind, GateDecision::Kind::kRoute);
  EXPECT_EQ(gate(Method::kGet, "/metrics", "", o).kind, GateDecision::Kind::kRoute);
  EXPECT_EQ(gate(Method::kGet, "/metrics?format=text", "", o).kind, GateDecision::Kind::kRoute);
}

TEST(HttpGate, PathTricksNeitherBypassTheKeyNorReachARoute) {
  const auto o = with_key();
  for (const char* trick :
       {"//v1/chat/completions", "/v1//chat/completions", "/v1%2Fchat%2Fcompletions",
        "/v1/chat/completions/", "/health/../v1/chat/completions", "/./v1/chat/completions",
        "/HEALTH", "/health/", "/health%00", "/%68ealth", "/v1/models/../../metrics",
        "/metrics/../v1/models"}) {
    // Without the key: refused before routing, whatever the path looks like.
    EXPECT_EQ(gate(Method::kPost, trick, "", o).status, 401u) << trick;
    EXPECT_EQ(gate(Method::kGet, trick, "", o).status, 401u) << trick;
    // With the key: not a route.
    const auto d = gate(Method::kPost, trick, "Bearer k1", o);
    EXPECT_NE(d.kind, GateDecision::Kind::kRoute) << trick;
  }
  EXPECT_EQ(gate(Method::kGet, "/v1/models/a//b", "Bearer k1", o).status, 404u);
}

TEST(HttpGate, MalformedTargetsAre400) {
  for (const char* t : {"http://host/v1/models", "*", "", "v1/models", "/v1/mo dels",
                        "/v1/models#frag", "/v1/\x01models"}) {
    EXPECT_EQ(gate(Method::kGet, t, "", GateOptions{}).status, 400u) << t;
  }
}

TEST(HttpGate, CorsIsOffByDefault) {
  const auto d =
      gate(Method::kOptions, "/v1/chat/completions", "", GateOptions{}, "https://evil.example");
  EXPECT_EQ(d.kind, GateDecision::Kind::kReject);
  EXPECT_TRUE(d.cors_origin.empty());
  const auto g = gate(Method::kGet, "/v1/models", "", GateOptions{}, "https://evil.example");
  EXPECT_EQ(g.kind, GateDecision::Kind::kRoute);
  EXPECT_TRUE(g.cors_origin.empty());
}

TEST(HttpGate, CorsPreflightOnlyForAllowedOriginsAndKnownRoutes) {
  auto o = with_key();
  o.cors_origins = {"https://app.example"};
  const auto pre = gate(Method::kOptions, "/v1/chat/completions", "", o, "https://app.example");
  EXPECT_EQ(pre.kind, GateDecision::Kind::kPreflight);
  EXPECT_EQ(pre.cors_origin, "https://app.example");
  EXPECT_EQ(pre.allow, "POST, OPTIONS");
  // Another origin: no preflight, and the key is still required.
  EXPECT_EQ(gate(Method::kOptions, "/v1/chat/completions", "", o, "https://evil.example").status,
            401u);
  // Unknown path: no preflight.
  EXPECT_EQ(gate(Method::kOptions, "//v1/chat/completions", "", o, "https://app.example").status,
            401u);
  // A real request from the allowed origin still needs the key, and gets the CORS header.
  EXPECT_EQ(gate(Method::kPost, "/v1/chat/completions", "", o, "https://app.example").status, 401u);
  const auto ok =
      gate(Method::kPost, "/v1/chat/completions", "Bearer k1", o, "https://app.example");
  EXPECT_EQ(ok.kind, GateDecision::Kind::kRoute);
  EXPECT_EQ(ok.cors_origin, "https://app.example");
}

}  // namespace
