# Sources of the CUDA device module, shared by the main build (core/cuda: nvcc, the GPU module),
# the emulated module (core/emulator: the same files compiled as C++ for the SIMT emulator) and
# the standalone GPU build (tools/gpu).
set(TESSERA_CUDA_MODULE_DIR ${CMAKE_CURRENT_LIST_DIR})
# Its include directories: the module's own folders, and the core's sources for the few plain
# headers the kernels share with the core (ops/row_scan.hpp).
get_filename_component(_tessera_core_src ${TESSERA_CUDA_MODULE_DIR}/../src ABSOLUTE)
set(TESSERA_CUDA_MODULE_INCLUDE_DIRS ${TESSERA_CUDA_MODULE_DIR} ${TESSERA_CUDA_MODULE_DIR}/kernels
  ${_tessera_core_src})
set(TESSERA_CUDA_MODULE_HOST_SOURCES ${TESSERA_CUDA_MODULE_DIR}/device_runtime.cpp
  ${TESSERA_CUDA_MODULE_DIR}/device_graphs.cpp)
# One kernel per op of the forward, shapes in a comment above each.
set(TESSERA_CUDA_KERNEL_SOURCES
  ${TESSERA_CUDA_MODULE_DIR}/kernels/rms_norm.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/swiglu.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/embed.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_dense.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_bf16_mma.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/hyper_mix.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_fp8.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_quantised_mma.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/moe_combine.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/moe_routing.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/rope.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/row_scan.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/elementwise.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/compressor_pool.cu)
