// Which machine a benchmark ran on, printed with its table: the development VM changed from an
// AMD Zen 5 to an Intel Xeon between sessions 11 and 12 (docs/perf.md "Session 12"), and the
// engine's numbers moved by 2x with it, so every table now names its CPU.
#pragma once

#include <string>

namespace tessera::bench {

// "<CPU model name>, <n> hardware threads": the first "model name" of /proc/cpuinfo (Linux), or
// "unknown CPU" where there is none.
std::string machine_description();

// The first "model name" value in text laid out as /proc/cpuinfo ("key\t: value" lines); empty
// when there is none.
std::string cpu_model_name(const std::string& cpuinfo);

}  // namespace tessera::bench
