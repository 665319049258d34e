// The core's one family of checks. Each failure throws tessera::Error whose message says what
// failed, where, and the values involved (TensorRT-LLM / TurboMind style). Never used across a
// plugin boundary: there, statuses (plugin_sdk.hpp).
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail_check(const char* file, int line, const std::string& what) {
  throw Error(fmt::format("{} ({}:{})", what, file, line));
}

}  // namespace tessera

// TS_CHECK(cond, "fmt", args...): throws with the formatted context when cond is false.
#define TS_CHECK(cond, ...)                                                             \
  do {                                                                                  \
    if (!(cond)) ::tessera::fail_check(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

// TS_CHECK_EQ(a, b, "context"): prints both operands on failure.
#define TS_CHECK_OP(a, b, op, ctx)                                                          \
  do {                                                                                      \
    const auto& ts_a_ = (a);                                                                \
    const auto& ts_b_ = (b);                                                                \
    if (!(ts_a_ op ts_b_))                                                                  \
      ::tessera::fail_check(__FILE__, __LINE__,                                             \
                            ::fmt::format("{}: expected {} " #op " {}, got {} vs {}", ctx, \
                                          #a, #b, ts_a_, ts_b_));                           \
  } while (0)
#define TS_CHECK_EQ(a, b, ctx) TS_CHECK_OP(a, b, ==, ctx)
#define TS_CHECK_LE(a, b, ctx) TS_CHECK_OP(a, b, <=, ctx)
#define TS_CHECK_LT(a, b, ctx) TS_CHECK_OP(a, b, <, ctx)
#define TS_CHECK_GE(a, b, ctx) TS_CHECK_OP(a, b, >=, ctx)
