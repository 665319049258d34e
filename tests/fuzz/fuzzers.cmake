# The fuzz targets: one line each.
#
#   tessera_fuzzer(<name> SOURCES <core sources, globs relative to core/src>...
#                  [PKG <pkg-config modules>...] [SEEDS <extra seed dirs, relative to the repo>...]
#                  [RUNS <inputs tried by CTest, default 100000>] [RSS_MB <default 2048>])
#
# The harness is tests/fuzz/fuzz_<name>.cpp (defines LLVMFuzzerTestOneInput), committed seeds are
# in tests/fuzz/corpus/<name>/, and tests/fuzz/<name>.dict, when present, is the libFuzzer
# dictionary. fmt, nlohmann-json, Boost headers and toml++ (compiled in, so it is instrumented
# too) are always available.
tessera_fuzzer(config SOURCES config/*.cpp util/edit_distance.cpp
               SEEDS configs tests/data/config/invalid RUNS 300000)
tessera_fuzzer(tokenizer_encode SOURCES tokenizer/*.cpp PKG libpcre2-8 RUNS 100000)
tessera_fuzzer(tokenizer_load SOURCES tokenizer/*.cpp PKG libpcre2-8 RUNS 150000)
tessera_fuzzer(chat SOURCES chat/*.cpp RUNS 20000)
tessera_fuzzer(safetensors SOURCES weights/safetensors.cpp weights/dtype.cpp weights/mapped_file.cpp RUNS 500000)
tessera_fuzzer(http SOURCES ../../frontends/http/api_error.cpp ../../frontends/http/router.cpp ../../frontends/http/request_fields.cpp ../../frontends/http/openai_request.cpp ../../frontends/http/response_builder.cpp RUNS 200000)
tessera_fuzzer(serve_request SOURCES serve/serve_request.cpp serve/plain_content.cpp chat/*.cpp tokenizer/*.cpp
               PKG libpcre2-8 RUNS 200000)
