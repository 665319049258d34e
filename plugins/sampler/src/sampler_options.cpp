#include "sampler_options.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "tessera/plugin_sdk.hpp"

namespace tessera::sampler {

ts_status parse_sampler_options(const char* options_json, SamplerOptions& out) noexcept {
  return sdk::guarded([&]() -> ts_status {
    SamplerOptions parsed;
    if (options_json == nullptr || options_json[0] == '\0') {
      out = parsed;
      return sdk::ok();
    }
    const auto json = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       std::string("sampler options are not valid JSON: ") + options_json);
    }
    if (json.is_null()) {
      out = parsed;
      return sdk::ok();
    }
    if (!json.is_object()) {
      return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                       "sampler options must be a JSON object, got " + json.dump());
    }
    for (const auto& [key, value] : json.items()) {
      if (key == "draw") {
        if (value == "rejection") {
          parsed.draw = DrawMethod::kRejection;
        } else if (value == "inverse_cdf") {
          parsed.draw = DrawMethod::kInverseCdf;
        } else if (value == "race") {
          parsed.draw = DrawMethod::kRace;
        } else {
          return sdk::fail(TS_ERR_INVALID_ARGUMENT, "sampler option 'draw' = " + value.dump() +
                                                        " (must be \"rejection\", "
                                                        "\"inverse_cdf\" or \"race\")");
        }
        continue;
      }
      if (key != "threads") {
        return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                         "unknown sampler option '" + key + "' (known: threads, draw)");
      }
      if (!value.is_number_integer()) {
        return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                         "sampler option 'threads' must be an integer, got " + value.dump());
      }
      const auto threads = value.get<int64_t>();
      if (threads < 0 || threads > kMaxThreads) {
        return sdk::fail(TS_ERR_INVALID_ARGUMENT,
                         "sampler option 'threads' = " + std::to_string(threads) +
                             " is outside [0, " + std::to_string(kMaxThreads) + "]");
      }
      parsed.threads = static_cast<int>(threads);
    }
    out = parsed;
    return sdk::ok();
  });
}

}  // namespace tessera::sampler
