# Sources of the mma attention plugin, shared by the main build (CMakeLists.txt here), the
# standalone GPU build (tools/gpu/CMakeLists.txt: nvcc + g++ only) and the SIMT-emulator build
# of the tests (tests/cuda/CMakeLists.txt).
set(TESSERA_MMA_DIR ${CMAKE_CURRENT_LIST_DIR})
# The single-source kernel primitives every Tessera kernel includes (device_primitives.cuh).
get_filename_component(TESSERA_KERNEL_COMMON_DIR ${CMAKE_CURRENT_LIST_DIR}/../../core/cuda/kernels
  ABSOLUTE)
# Host code: C++ that includes cuda_runtime.h (or the emulator's stand-in).
set(TESSERA_MMA_HOST_SOURCES
  ${TESSERA_MMA_DIR}/attention_mma.cpp
  ${TESSERA_MMA_DIR}/attention_enqueue.cpp
  ${TESSERA_MMA_DIR}/device_probe.cpp
  ${TESSERA_MMA_DIR}/work_plan.cpp
  ${TESSERA_MMA_DIR}/kv_layouts.cpp)
# Kernels and their launchers.
set(TESSERA_MMA_KERNEL_SOURCES
  ${TESSERA_MMA_DIR}/kernels/sparse_attention.cu
  ${TESSERA_MMA_DIR}/kernels/lightning_indexer.cu
  ${TESSERA_MMA_DIR}/kernels/topk_select.cu)
