#include "generation/sampling_defaults.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "util/check.hpp"

namespace tessera::generation {

namespace {

template <class T>
void take(const nlohmann::json& j, const char* key, const std::string& file, T& out,
          std::map<std::string, std::string>& source) {
  if (!j.contains(key) || j[key].is_null()) return;
  TS_CHECK(j[key].is_number(), "{}: `{}` must be a number, got {}", file, key, j[key].dump());
  out = j[key].get<T>();
  source[key] = "generation_config.json";
}

}  // namespace

std::string ResolvedDefaults::describe() const {
  std::string s = fmt::format("sampling defaults: temperature {} top_p {} top_k {} min_p {}",
                              values.temperature, values.top_p, values.top_k, values.min_p);
  std::string from;
  for (const auto& [key, where] : source)
    from += fmt::format("{}{} from {}", from.empty() ? "" : ", ", key, where);
  return s + " (" +
         (from.empty() ? "all from [sampler.defaults]"
                       : from + "; the rest from [sampler.defaults]") +
         ")";
}

ResolvedDefaults resolve_sampling_defaults(const SamplingDefaults& toml_defaults,
                                           const std::filesystem::path& model_dir) {
  ResolvedDefaults r;
  r.values = toml_defaults;
  const auto path = model_dir / "generation_config.json";
  if (!std::filesystem::exists(path)) return r;
  std::ifstream in(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
  TS_CHECK(j.is_object(), "{}: expected a JSON object", path.string());
  const std::string file = path.string();
  take(j, "temperature", file, r.values.temperature, r.source);
  take(j, "top_p", file, r.values.top_p, r.source);
  take(j, "top_k", file, r.values.top_k, r.source);
  take(j, "min_p", file, r.values.min_p, r.source);
  take(j, "repetition_penalty", file, r.values.repetition_penalty, r.source);
  const bool do_sample = j.value("do_sample", false);
  r.model_recommends_sampling =
      do_sample || (j.contains("temperature") && j["temperature"].is_number() &&
                    j["temperature"].get<double>() > 0);
  return r;
}

std::string greedy_warning(const ResolvedDefaults& defaults, double request_temperature) {
  if (request_temperature > 0 || !defaults.model_recommends_sampling) return {};
  return fmt::format(
      "temperature 0 (greedy) on a model whose generation_config.json recommends sampling "
      "(temperature {}): greedy decoding of DeepSeek models tends to loop; the repetition guard "
      "is watching",
      defaults.values.temperature);
}

}  // namespace tessera::generation
