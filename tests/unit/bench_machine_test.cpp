// bench/machine.hpp: the CPU named with every benchmark table.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "bench/machine.hpp"

namespace tessera::bench {
namespace {

TEST(BenchMachine, TheFirstModelNameOfCpuinfo) {
  const std::string cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 167\n"
      "model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 1\n\n"
      "processor\t: 1\nmodel name\t: Another CPU\n";
  EXPECT_EQ(cpu_model_name(cpuinfo), "Intel(R) Xeon(R) Processor");
  // "model" alone is not "model name"; a line without a value gives nothing.
  EXPECT_EQ(cpu_model_name("model\t\t: 26\nmodel name\t: AMD EPYC 9R45\n"), "AMD EPYC 9R45");
  EXPECT_EQ(cpu_model_name("model name\t:\n"), "");
  EXPECT_EQ(cpu_model_name("processor\t: 0\n"), "");
  EXPECT_EQ(cpu_model_name(""), "");
}

TEST(BenchMachine, DescriptionNamesThisMachinesCpuAndThreads) {
  const std::string text = machine_description();
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream cpuinfo;
  cpuinfo << in.rdbuf();
  const std::string model = cpu_model_name(cpuinfo.str());
  EXPECT_EQ(text.rfind(model.empty() ? "unknown CPU" : model, 0), 0u) << text;
  EXPECT_NE(
      text.find(", " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace tessera::bench
