// util/huge_page_buffer: zero-filled, 2 MiB-aligned memory that asked the kernel for huge pages
// before its first write (the kv cache's page pools live in one).
#include "util/huge_page_buffer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace tessera {
namespace {

// The VmFlags line of the mapping in /proc/self/smaps that contains p ("" when none does).
// "lo-hi" of the mapping that holds p, or "" when none does.
std::string mapping_of(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-') &&
        addr >= lo && addr < hi)
      return line.substr(0, line.find(' '));
  }
  return "";
}

std::string vm_flags_of(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool kernel_has_thp() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage"); }

TEST(HugePageBuffer, IsZeroFilledAlignedAndWritable) {
  const size_t bytes = 5 * kHugePageBytes + 123;
  HugePageBuffer b(bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePageBytes, 0u);
  EXPECT_TRUE(std::all_of(b.data(), b.data() + bytes, [](uint8_t v) { return v == 0; }));
  for (size_t i = 0; i < bytes; ++i) {
    b.data()[i] = static_cast<uint8_t>(i * 7 + 1);
  }
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) {
    wrong += b.data()[i] != static_cast<uint8_t>(i * 7 + 1);
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(HugePageBuffer, AdvisesItsWholeHugePagesBeforeTheFirstWrite) {
  const size_t bytes = 3 * kHugePageBytes + 4096;
  HugePageBuffer b(bytes);
  if (!kernel_has_thp()) {  // a kernel built without THP refuses MADV_HUGEPAGE
    EXPECT_EQ(b.advised_bytes(), 0u);
    return;
  }
  EXPECT_EQ(b.advised_bytes(), 3 * kHugePageBytes);  // the 4 KiB tail keeps small pages
  // "hg": the mapping was given MADV_HUGEPAGE (proc(5)); the tail's mapping was not.
  const std::string head = vm_flags_of(b.data());
  const std::string tail = vm_flags_of(b.data() + 3 * kHugePageBytes);
  EXPECT_NE(head.find(" hg"), std::string::npos) << head;
  EXPECT_EQ(tail.find(" hg"), std::string::npos) << tail;
}

TEST(HugePageBuffer, MovesOwnershipAndUnmapsOnce) {
  HugePageBuffer a(kHugePageBytes);
  a.data()[17] = 42;
  uint8_t* const p = a.data();
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[17], 42);
  HugePageBuffer c(2 * kHugePageBytes);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), kHugePageBytes);
  const std::string mapped = mapping_of(p);
  EXPECT_FALSE(mapped.empty());
  c = HugePageBuffer();
  // Unmapped: no mapping holds p any more, or (the address space being the process's) another
  // mapping since placed over the freed range, never the buffer's own.
  EXPECT_NE(mapping_of(p), mapped);
}

TEST(HugePageBuffer, EmptyHoldsNothing) {
  HugePageBuffer b(0);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.advised_bytes(), 0u);
}

}  // namespace
}  // namespace tessera
