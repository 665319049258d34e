// Minimal x86-64 (System V) stack switching for the SIMT emulator: a thread of an emulated block
// is a fiber with its own stack. glibc's swapcontext also saves the signal mask with a system call
// per switch (~1.3 us measured here); this switch saves only the callee-saved registers and the
// x87/SSE control words (~10 ns), which makes full-size kernels practical to emulate.
#pragma once

#include <cstddef>

namespace tessera::emu {

// Saves the current context's stack pointer into *save_sp and resumes the context whose stack
// pointer is load_sp.
extern "C" void tessera_emu_switch(void** save_sp, void* load_sp);

// A stack pointer that, when switched to, calls entry(argument) on the given stack. entry must
// never return (it switches away for good instead).
void* prepare_fiber_stack(unsigned char* stack, size_t bytes, void (*entry)(void*), void* argument);

}  // namespace tessera::emu
