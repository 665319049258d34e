# cmake -P script run by CTest: `tessera plugins` over the deliberately broken plugins lists the
# good ones with their schema and every refusal with its reason, in JSON and in text, and refuses
# a --plugin-dir that does not exist.
# Inputs: TESSERA PLUGIN_DIR
cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND ${TESSERA} plugins --json --no-default-path --plugin-dir ${PLUGIN_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera plugins --json failed (${rc}): ${err}")
endif()
string(JSON n_plugins LENGTH "${listing}" plugins)
string(JSON n_failures LENGTH "${listing}" failures)
if(NOT n_plugins EQUAL 5 OR NOT n_failures EQUAL 6)
  message(FATAL_ERROR "expected 5 plugins and 6 refusals, got ${n_plugins} and ${n_failures}:\n${listing}")
endif()
# Sorted by kind then name: kv_cache test_kv first, then the samplers.
string(JSON first GET "${listing}" plugins 0 name)
string(JSON sampler GET "${listing}" plugins 2 name)
string(JSON kind GET "${listing}" plugins 2 kind)
string(JSON abi_major GET "${listing}" plugins 2 abi major)
string(JSON maximum GET "${listing}" plugins 2 options_schema properties bias maximum)
string(JSON devices GET "${listing}" plugins 2 capabilities devices 0)
string(JSON host_major GET "${listing}" host abi major)
if(NOT "${first} ${sampler} ${kind} ${maximum} ${devices}" STREQUAL "test_kv test_sampler sampler 100 cpu"
   OR NOT abi_major EQUAL host_major)
  message(FATAL_ERROR "unexpected plugin entries:\n${listing}")
endif()
string(JSON reason GET "${listing}" failures 0 reason)
if(NOT reason MATCHES "plugin ABI [0-9]+\\.[0-9]+ does not match host ABI .*Fix: rebuild")
  message(FATAL_ERROR "first refusal (abi major) lacks versions or fix: ${reason}")
endif()

execute_process(COMMAND ${TESSERA} plugins --no-default-path --plugin-dir ${PLUGIN_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT text MATCHES "Plugins \\(5\\):" OR NOT text MATCHES "Refused \\(6\\):"
   OR NOT text MATCHES "libtest_not_elf.so\n    the dynamic loader refused it: [^\n]*invalid ELF header")
  message(FATAL_ERROR "unexpected text listing (exit ${rc}):\n${text}\n${err}")
endif()

execute_process(COMMAND ${TESSERA} plugins --plugin-dir ${PLUGIN_DIR}/does-not-exist
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "does-not-exist")
  message(FATAL_ERROR "a missing --plugin-dir was accepted (exit ${rc}):\n${out}${err}")
endif()
