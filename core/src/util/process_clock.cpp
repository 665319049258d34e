#include "util/process_clock.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tessera {

double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string line;
  double up = 0;
  if (!std::getline(stat, line) || !(uptime >> up)) {
    return -1;
  }
  // Field 22 (starttime, clock ticks after boot); the fields after the command's closing ')'
  // start at field 3, and the command itself may hold spaces.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return -1;
  }
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) {
      return -1;
    }
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? up - std::stod(field) / static_cast<double>(ticks) : -1;
}

}  // namespace tessera
