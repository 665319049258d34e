#include "fiber_switch.hpp"

#include <cstdint>
#include <cstring>

#if !defined(__x86_64__)
#error "the SIMT emulator's fiber switch is written for x86-64 only"
#endif

// Frame saved by tessera_emu_switch, from the saved stack pointer upwards:
//   +0 x87 control word, +8 MXCSR, +16 r15, r14, r13, r12, rbx, rbp, +64 return address.
asm(R"(
    .text
    .p2align 4
    .globl tessera_emu_switch
    .hidden tessera_emu_switch
    .type tessera_emu_switch,@function
tessera_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    stmxcsr 8(%rsp)
    fnstcw (%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    fldcw (%rsp)
    ldmxcsr 8(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size tessera_emu_switch,.-tessera_emu_switch

    .p2align 4
    .type tessera_emu_trampoline,@function
tessera_emu_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size tessera_emu_trampoline,.-tessera_emu_trampoline
)");

extern "C" void tessera_emu_trampoline();

namespace tessera::emu {

void* prepare_fiber_stack(unsigned char* stack, size_t bytes, void (*entry)(void*),
                          void* argument) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  // After the 9 slots are popped, rsp = top - 16: 16-byte aligned before the trampoline's call.
  auto* frame = reinterpret_cast<uint64_t*>(top - 88);
  std::memset(frame, 0, 88);
  frame[0] = 0x037F;  // x87 control word: default precision and rounding, exceptions masked
  frame[1] = 0x1F80;  // MXCSR: round to nearest, exceptions masked
  frame[4] = reinterpret_cast<uint64_t>(entry);     // r13
  frame[5] = reinterpret_cast<uint64_t>(argument);  // r12
  frame[8] = reinterpret_cast<uint64_t>(&tessera_emu_trampoline);
  return frame;
}

}  // namespace tessera::emu
