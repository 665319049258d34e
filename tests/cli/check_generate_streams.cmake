# cmake -P script run by CTest: `tessera generate` keeps stdout for the generated text.
#   stdout: the text only (no spdlog line, no summary line);
#   stderr: the runtime's log lines and the finish line (finish_reason=..., token counts).
# Inputs: TESSERA (the binary), PLUGIN_DIR (the in-tree plugins), CONFIG (configs/tiny-cpu.toml).
set(ENV{TESSERA_PLUGIN_PATH} ${PLUGIN_DIR})
execute_process(
  COMMAND ${TESSERA} generate -c ${CONFIG} -p "The quick brown fox" --max-tokens 16
          --temperature 0
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera generate exited ${rc}:\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "stdout:\n${out}")
message(STATUS "stderr:\n${err}")

# spdlog's default pattern: "[2026-12-05 08:40:00.123] [info] message".
set(log_line "\\[[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9:.]+\\] \\[")
if(out MATCHES "${log_line}" OR out MATCHES "\\[(trace|debug|info|warning|error|critical)\\]")
  message(FATAL_ERROR "a log line was written to stdout:\n${out}")
endif()
if(out MATCHES "finish_reason=")
  message(FATAL_ERROR "the finish line was written to stdout:\n${out}")
endif()
string(STRIP "${out}" text)
if(text STREQUAL "")
  message(FATAL_ERROR "stdout holds no generated text (16 greedy tokens asked for)")
endif()
if(NOT err MATCHES "finish_reason=[a-z]+ prompt_tokens=[0-9]+ completion_tokens=[0-9]+")
  message(FATAL_ERROR "no finish line on stderr:\n${err}")
endif()
if(NOT err MATCHES "${log_line}info\\] runtime: ")
  message(FATAL_ERROR "the runtime's log lines are not on stderr:\n${err}")
endif()
