# The kernel benchmark: links the plugin's planner and kernels directly so that it can time the
# enqueued kernels alone. Included by tools/gpu/CMakeLists.txt and tests/cuda/CMakeLists.txt
# (so that CI compiles it); needs the lists of tests/cuda/sources.cmake.
add_executable(attention_mma_bench ${CMAKE_CURRENT_LIST_DIR}/attention_mma_bench.cpp
  ${TESSERA_MMA_DIR}/attention_enqueue.cpp ${TESSERA_MMA_DIR}/work_plan.cpp ${TESSERA_MMA_DIR}/kv_layouts.cpp
  ${TESSERA_MMA_KERNEL_SOURCES} ${TESSERA_CUDA_TEST_DIR}/test_device_cuda.cpp
  ${TESSERA_CUDA_TEST_CASE_SOURCES})
target_include_directories(attention_mma_bench PRIVATE ${TESSERA_CUDA_TEST_INCLUDES})
target_compile_options(attention_mma_bench PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
target_link_libraries(attention_mma_bench PRIVATE tessera_sdk CUDA::cudart Threads::Threads)

# The FP8 GEMM benchmark: our W8A8 kernel (core/cuda/kernels/linear_fp8.cu) against cuBLASLt's
# block-scaled FP8 matmul on DeepSeek-V4-Flash's shapes.
include(${CMAKE_CURRENT_LIST_DIR}/../../core/cuda/sources.cmake)
add_executable(fp8_gemm_bench ${CMAKE_CURRENT_LIST_DIR}/fp8_gemm_bench.cpp
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_fp8.cu ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_dense.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_quantised_mma.cu
  ${TESSERA_CUDA_MODULE_DIR}/kernels/linear_bf16_mma.cu)
target_include_directories(fp8_gemm_bench PRIVATE ${TESSERA_CUDA_MODULE_INCLUDE_DIRS})
target_link_libraries(fp8_gemm_bench PRIVATE CUDA::cudart CUDA::cublasLt)
