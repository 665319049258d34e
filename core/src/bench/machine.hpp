// Which machine a benchmark ran on, printed with its table: the same code's engine numbers differ
// by up to 2x between the development VMs (an AMD Zen 5, an Intel Xeon, an AMD Zen 3; docs/perf.md
// "Machines"), so every table names its CPU.
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
