#include "simt_emulator.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "fiber_switch.hpp"

namespace tessera::emu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr int kWarp = 32;

enum class Collective : int { kShfl = 1, kBallot, kLdmatrix, kLdmatrixTrans, kMma };

struct LaneSlot {
  Collective tag;
  unsigned char bytes[40];
};

struct Copy {
  void* dst;
  const void* src;
};

struct Fiber {
  enum class State { kReady, kWarpWait, kBlockWait, kDone };
  void* sp = nullptr;
  unsigned char* stack = nullptr;
  dim3 tid;
  int lane = 0, warp = 0;
  State state = State::kReady;
  uint64_t wait_generation = 0;
  std::vector<Copy> open_group;
  std::deque<std::vector<Copy>> committed;
};

struct Warp {
  int arrived = 0;
  uint64_t generation = 0;
  LaneSlot slots[2][kWarp];
};

// Memory mapped with one inaccessible page after `bytes`: overruns fault at once.
class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  explicit GuardedBuffer(size_t bytes, size_t align) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t used = (bytes + align - 1) / align * align;
    mapped_ = (used + page - 1) / page * page + page;
    base_ = static_cast<unsigned char*>(
        mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    mprotect(base_ + mapped_ - page, page, PROT_NONE);
    data_ = base_ + mapped_ - page - used;
    size_ = bytes;
  }
  GuardedBuffer(GuardedBuffer&& o) noexcept { *this = std::move(o); }
  GuardedBuffer& operator=(GuardedBuffer&& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(mapped_, o.mapped_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~GuardedBuffer() {
    if (base_ != nullptr) munmap(base_, mapped_);
  }
  unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* base_ = nullptr;
  size_t mapped_ = 0;
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

struct LaunchState {
  dim3 block_idx, block_dim, grid_dim;
  const std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<GuardedBuffer> stacks;
  GuardedBuffer smem;
  Fiber* current = nullptr;
  void* scheduler_sp = nullptr;
  int block_arrived = 0;
  uint64_t block_generation = 0;
  int done = 0;
  std::string error;
};

thread_local LaunchState* g_launch = nullptr;

std::mutex g_memory_mutex;
std::map<uintptr_t, std::pair<size_t, GuardedBuffer>> g_device_memory;  // start -> (bytes, map)

std::mutex g_error_mutex;
cudaError_t g_last_error = cudaSuccess;
std::string g_last_error_text;

LaunchState& state() {
  if (g_launch == nullptr || g_launch->current == nullptr)
    throw std::logic_error("emulated device function called outside an emulated kernel");
  return *g_launch;
}

void yield(LaunchState& s) { tessera_emu_switch(&s.current->sp, s.scheduler_sp); }

void complete_groups(Fiber& f, size_t keep) {
  while (f.committed.size() > keep) {
    for (const Copy& c : f.committed.front()) std::memcpy(c.dst, c.src, 16);
    f.committed.pop_front();
  }
}

void fiber_main(void* argument) {
  auto* f = static_cast<Fiber*>(argument);
  LaunchState& s = *g_launch;
  try {
    (*s.body)();
    complete_groups(*f, 0);  // what a thread issued lands even if it never waited
    for (const Copy& c : f->open_group) std::memcpy(c.dst, c.src, 16);
  } catch (const std::exception& e) {
    if (s.error.empty()) s.error = e.what();
  } catch (...) {
    if (s.error.empty()) s.error = "unknown exception in an emulated kernel";
  }
  f->state = Fiber::State::kDone;
  ++s.done;
  tessera_emu_switch(&f->sp, s.scheduler_sp);
  std::abort();  // a finished fiber is never resumed
}

bool runnable(const LaunchState& s, const Fiber& f) {
  switch (f.state) {
    case Fiber::State::kReady:
      return true;
    case Fiber::State::kBlockWait:
      return s.block_generation > f.wait_generation;
    case Fiber::State::kWarpWait:
      return s.warps[f.warp].generation > f.wait_generation;
    case Fiber::State::kDone:
      return false;
  }
  return false;
}

std::string where(const LaunchState& s) {
  return " (block " + std::to_string(s.block_idx.x) + "," + std::to_string(s.block_idx.y) + ")";
}

void run_block(LaunchState& s) {
  const int n = static_cast<int>(s.fibers.size());
  for (int i = 0; i < n; ++i) {
    Fiber& f = s.fibers[i];
    f.state = Fiber::State::kReady;
    f.open_group.clear();
    f.committed.clear();
    f.sp = prepare_fiber_stack(f.stack, kStackBytes, fiber_main, &f);
  }
  for (Warp& w : s.warps) w.arrived = 0;
  s.block_arrived = 0;
  s.done = 0;
  std::memset(s.smem.data(), 0xFF, s.smem.size());  // unwritten shared memory reads as NaN
  while (s.done < n) {
    bool progress = false;
    for (int i = 0; i < n && s.error.empty(); ++i) {
      Fiber& f = s.fibers[i];
      if (!runnable(s, f)) continue;
      f.state = f.state == Fiber::State::kDone ? f.state : Fiber::State::kReady;
      s.current = &f;
      tessera_emu_switch(&s.scheduler_sp, f.sp);
      s.current = nullptr;
      progress = true;
    }
    if (!s.error.empty()) throw std::runtime_error(s.error + where(s));
    if (!progress) {
      int at_block = 0, at_warp = 0;
      for (const Fiber& f : s.fibers) {
        at_block += f.state == Fiber::State::kBlockWait;
        at_warp += f.state == Fiber::State::kWarpWait;
      }
      throw std::runtime_error("deadlock: " + std::to_string(at_block) +
                               " threads wait at a block barrier, " + std::to_string(at_warp) +
                               " in a warp collective, " + std::to_string(s.done) + " exited" +
                               where(s));
    }
  }
}

// The 32 lanes' slots of this collective, once every lane has arrived.
const LaneSlot* exchange(Collective tag, const void* mine, size_t bytes) {
  LaunchState& s = state();
  Fiber& f = *s.current;
  Warp& w = s.warps[f.warp];
  const uint64_t generation = w.generation;
  LaneSlot* slots = w.slots[generation & 1];
  slots[f.lane].tag = tag;
  std::memcpy(slots[f.lane].bytes, mine, bytes);
  f.wait_generation = generation;
  if (++w.arrived == kWarp) {
    for (int l = 0; l < kWarp; ++l)
      if (slots[l].tag != tag)
        fail("lanes of one warp are in different warp collectives (divergence)");
    w.arrived = 0;
    ++w.generation;
  }
  f.state = Fiber::State::kWarpWait;
  yield(s);
  return slots;
}

void check_shared(const LaunchState& s, const void* p, size_t bytes, const char* what) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < s.smem.data() || c + bytes > s.smem.data() + s.smem.size())
    fail((std::string(what) + ": address outside the block's shared memory").c_str());
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    fail((std::string(what) + ": shared address not 16-byte aligned").c_str());
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

uint16_t half_of(uint32_t word, int high) {
  return static_cast<uint16_t>(high ? word >> 16 : word);
}

}  // namespace

void launch(dim3 grid, dim3 block, size_t dynamic_smem_bytes, const std::function<void()>& body) {
  const auto threads = static_cast<int>(block.x * block.y * block.z);
  try {
    if (threads <= 0 || threads > 1024 || threads % kWarp != 0)
      throw std::runtime_error("block of " + std::to_string(threads) +
                               " threads: the emulator needs whole warps, at most 1024");
    if (dynamic_smem_bytes > static_cast<size_t>(kEmulatedSmemPerBlock))
      throw std::runtime_error("dynamic shared memory of " + std::to_string(dynamic_smem_bytes) +
                               " bytes exceeds the device's per-block limit");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) throw std::runtime_error("empty grid");
    LaunchState s;
    s.block_dim = block;
    s.grid_dim = grid;
    s.body = &body;
    s.fibers.resize(static_cast<size_t>(threads));
    s.warps.resize(static_cast<size_t>(threads / kWarp));
    s.smem = GuardedBuffer(std::max<size_t>(dynamic_smem_bytes, 16), 16);
    for (int i = 0; i < threads; ++i) {
      s.stacks.emplace_back(kStackBytes, 16);
      Fiber& f = s.fibers[static_cast<size_t>(i)];
      f.stack = s.stacks.back().data();
      f.tid = dim3(i % block.x, i / block.x % block.y, i / (block.x * block.y));
      f.lane = i % kWarp;
      f.warp = i / kWarp;
    }
    LaunchState* outer = g_launch;
    g_launch = &s;
    try {
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x) {
            s.block_idx = dim3(x, y, z);
            run_block(s);
          }
    } catch (...) {
      g_launch = outer;
      throw;
    }
    g_launch = outer;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emulated kernel failed: %s\n", e.what());
    std::lock_guard lock(g_error_mutex);
    g_last_error = cudaErrorLaunchFailure;
    g_last_error_text = std::string("emulated kernel failed: ") + e.what();
  }
}

const dim3& thread_idx() { return state().current->tid; }
const dim3& block_idx() { return state().block_idx; }
const dim3& block_dim() { return state().block_dim; }
const dim3& grid_dim() { return state().grid_dim; }
unsigned char* shared_memory() { return state().smem.data(); }

void block_barrier() {
  LaunchState& s = state();
  Fiber& f = *s.current;
  if (s.done > 0) fail("__syncthreads reached after some threads of the block exited");
  f.wait_generation = s.block_generation;
  if (++s.block_arrived == static_cast<int>(s.fibers.size())) {
    s.block_arrived = 0;
    ++s.block_generation;
  }
  f.state = Fiber::State::kBlockWait;
  yield(s);
}

float shfl_xor(float value, int lane_mask) {
  const LaneSlot* slots = exchange(Collective::kShfl, &value, sizeof value);
  float out;
  std::memcpy(&out, slots[(state().current->lane ^ lane_mask) & 31].bytes, sizeof out);
  return out;
}

uint32_t ballot(bool predicate) {
  const LaneSlot* slots = exchange(Collective::kBallot, &predicate, sizeof predicate);
  uint32_t bits = 0;
  for (int l = 0; l < kWarp; ++l) {
    bool p;
    std::memcpy(&p, slots[l].bytes, sizeof p);
    bits |= static_cast<uint32_t>(p) << l;
  }
  return bits;
}

// PTX ldmatrix: lane i gives the address of row i % 8 of matrix i / 8 (8 b16 values); lane l
// receives, of matrix j, elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) -- or, transposed,
// (2(l%4), l/4) and (2(l%4)+1, l/4) -- packed low element first.
void ldmatrix_x4(uint32_t (&r)[4], const void* shared_row, bool transpose) {
  LaunchState& s = state();
  check_shared(s, shared_row, 16, "ldmatrix");
  const LaneSlot* slots = exchange(transpose ? Collective::kLdmatrixTrans : Collective::kLdmatrix,
                                   &shared_row, sizeof shared_row);
  const int lane = s.current->lane;
  auto element = [&](int matrix, int row, int col) {
    const unsigned char* row_ptr;
    std::memcpy(&row_ptr, slots[matrix * 8 + row].bytes, sizeof row_ptr);
    uint16_t v;
    std::memcpy(&v, row_ptr + 2 * col, 2);
    return static_cast<uint32_t>(v);
  };
  for (int j = 0; j < 4; ++j) {
    if (!transpose)
      r[j] = element(j, lane / 4, 2 * (lane % 4)) | element(j, lane / 4, 2 * (lane % 4) + 1) << 16;
    else
      r[j] = element(j, 2 * (lane % 4), lane / 4) | element(j, 2 * (lane % 4) + 1, lane / 4) << 16;
  }
}

// PTX mma.m16n8k16 .row.col bf16 -> f32, group g = lane/4, t = lane%4:
//   A (16x16): a[0] (g, 2t..2t+1), a[1] (g+8, 2t..), a[2] (g, 2t+8..), a[3] (g+8, 2t+8..)
//   B (16x8):  b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   C (16x8):  d[0..1] (g, 2t..2t+1), d[2..3] (g+8, 2t..2t+1)
void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  struct Operands {
    uint32_t a[4], b0, b1;
  } mine{{a[0], a[1], a[2], a[3]}, b0, b1};
  const LaneSlot* slots = exchange(Collective::kMma, &mine, sizeof mine);
  auto lane_ops = [&](int l) {
    Operands o;
    std::memcpy(&o, slots[l].bytes, sizeof o);
    return o;
  };
  auto A = [&](int row, int k) {
    const Operands o = lane_ops(row % 8 * 4 + k % 8 / 2);
    return bf16_to_float(half_of(o.a[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k % 2));
  };
  auto B = [&](int k, int n) {
    const Operands o = lane_ops(n * 4 + k % 8 / 2);
    return bf16_to_float(half_of(k >= 8 ? o.b1 : o.b0, k % 2));
  };
  const int lane = state().current->lane, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + i % 2;
    float acc = 0.0f;
    for (int k = 0; k < 16; ++k) acc += A(row, k) * B(k, col);
    d[i] += acc;
  }
}

void async_copy_16(void* shared_dst, const void* global_src) {
  LaunchState& s = state();
  check_shared(s, shared_dst, 16, "cp.async destination");
  if (reinterpret_cast<uintptr_t>(global_src) % 16 != 0)
    fail("cp.async source not 16-byte aligned");
  const auto src = reinterpret_cast<uintptr_t>(global_src);
  {
    std::lock_guard lock(g_memory_mutex);
    auto it = g_device_memory.upper_bound(src);
    if (it == g_device_memory.begin() ||
        src + 16 > std::prev(it)->first + std::prev(it)->second.first)
      fail("cp.async source outside every device allocation");
  }
  s.current->open_group.push_back(Copy{shared_dst, global_src});
}

void async_commit() {
  Fiber& f = *state().current;
  f.committed.push_back(std::move(f.open_group));
  f.open_group.clear();
}

void async_wait(int pending_groups) {
  complete_groups(*state().current, static_cast<size_t>(pending_groups));
}

void* device_alloc(size_t bytes) {
  GuardedBuffer buffer(std::max<size_t>(bytes, 1), 256);
  void* p = buffer.data();
  std::lock_guard lock(g_memory_mutex);
  g_device_memory.emplace(reinterpret_cast<uintptr_t>(p), std::make_pair(bytes, std::move(buffer)));
  return p;
}

void device_free(void* p) {
  std::lock_guard lock(g_memory_mutex);
  g_device_memory.erase(reinterpret_cast<uintptr_t>(p));
}

bool is_device_memory(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(g_memory_mutex);
  auto it = g_device_memory.upper_bound(at);
  return it != g_device_memory.begin() &&
         at < std::prev(it)->first + std::max<size_t>(1, std::prev(it)->second.first);
}

cudaError_t take_last_error() {
  std::lock_guard lock(g_error_mutex);
  const cudaError_t e = g_last_error;
  g_last_error = cudaSuccess;
  return e;
}

const char* last_error_text() {
  std::lock_guard lock(g_error_mutex);
  return g_last_error_text.c_str();
}

void fail(const char* what) { throw std::runtime_error(what); }

}  // namespace tessera::emu
