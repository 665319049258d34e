#include "bench/machine.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

namespace tessera::bench {

std::string cpu_model_name(const std::string& cpuinfo) {
  std::istringstream lines(cpuinfo);
  std::string line;
  constexpr std::string_view kKey = "model name";
  while (std::getline(lines, line)) {
    if (line.rfind(kKey, 0) != 0) {
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    const size_t first = line.find_first_not_of(" \t", colon + 1);
    return first == std::string::npos ? std::string() : line.substr(first);
  }
  return {};
}

std::string machine_description() {
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  std::string model = cpu_model_name(text.str());
  if (model.empty()) {
    model = "unknown CPU";
  }
  return fmt::format("{}, {} hardware threads", model, std::thread::hardware_concurrency());
}

}  // namespace tessera::bench
