// The safetensors reader and the checkpoint layer: a valid file reads back exactly; every class
// of malformed file (each written by the test itself) is refused with the tensor and the reason;
// an index + shards checkpoint resolves names and refuses inconsistent indexes.
#include "weights/safetensors.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/check.hpp"
#include "weights/checkpoint.hpp"

namespace tessera::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Builds the bytes of a safetensors file from header JSON text and a data section.
std::string file_bytes(const std::string& header_text, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header_text + data;
}

std::span<const std::byte> as_span(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// The error message parse_safetensors_header gives for `bytes`, or "" when it accepts them.
std::string parse_error(const std::string& bytes) {
  try {
    (void)parse_safetensors_header(as_span(bytes), "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string header_error(const json& header, const std::string& data) {
  return parse_error(file_bytes(header.dump(), data));
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("tessera_st_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ / name, std::ios::binary) << bytes;
    return path_ / name;
  }

 private:
  fs::path path_;
};

std::string f32_bytes(const std::vector<float>& values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

TEST(Safetensors, ReadsValidFileWithMetadataAndUnalignedOffsets) {
  // a: F32 [2, 3] (24 B), b: U8 [1] (1 B) at 24, c: BF16 [2] at an odd offset 25.
  const json header = {
      {"__metadata__", {{"format", "pt"}}},
      {"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
      {"b", {{"dtype", "U8"}, {"shape", {1}}, {"data_offsets", {24, 25}}}},
      {"c", {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {25, 29}}}},
  };
  const std::string data =
      f32_bytes({1, 2, 3, 4, 5, 6}) + "\x07" + std::string("\x80\x3f\x00\x40", 4);
  TempDir dir;
  const auto path = dir.write("ok.safetensors", file_bytes(header.dump(), data));
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  const TensorInfo* a = file.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->numel(), 6);
  std::vector<float> read(6);
  std::memcpy(read.data(), file.data(*a).data(), 24);
  EXPECT_EQ(read, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const TensorInfo* c = file.find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype, DType::BF16);
  EXPECT_EQ(static_cast<uint8_t>(file.data(*c)[1]), 0x3F);
  EXPECT_EQ(file.find("missing"), nullptr);
}

TEST(Safetensors, AcceptsEmptyTensorsAndSubByteTypes) {
  const json header = {
      {"empty", {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {0, 0}}}},
      {"fp4", {{"dtype", "F4"}, {"shape", {2, 8}}, {"data_offsets", {0, 8}}}},
      {"scalar", {{"dtype", "F32"}, {"shape", json::array()}, {"data_offsets", {8, 12}}}},
  };
  EXPECT_EQ(header_error(header, std::string(12, '\0')), "");
}

TEST(Safetensors, RefusesFileShorterThanLengthPrefix) {
  EXPECT_NE(parse_error("abc").find("truncated: 3 bytes"), std::string::npos) << parse_error("abc");
}

TEST(Safetensors, RefusesOversizedHeaderBeforeAllocating) {
  std::string bytes(16, '\0');
  bytes[5] = 1;  // length 2^40
  const std::string err = parse_error(bytes);
  EXPECT_NE(err.find("header length 1099511627776 exceeds the limit"), std::string::npos) << err;
}

TEST(Safetensors, RefusesHeaderRunningPastEndOfFile) {
  std::string bytes = file_bytes(R"({"a":1})", "");
  bytes[0] = 100;  // claims a 100-byte header in a 15-byte file
  const std::string err = parse_error(bytes);
  EXPECT_NE(err.find("truncated: header length 100 runs past the end"), std::string::npos) << err;
}

TEST(Safetensors, RefusesTruncatedDataNamingTheTensor) {
  const json header = {{"w", {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 16}}}}};
  const std::string err = header_error(header, std::string(10, '\0'));  // 6 bytes missing
  EXPECT_NE(err.find("tensor 'w': data_offsets [0, 16] run past the end of the data section (10 "
                     "bytes): file truncated?"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RefusesOverlappingTensors) {
  const json header = {
      {"first", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
      {"second", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}},
  };
  const std::string err = header_error(header, std::string(12, '\0'));
  EXPECT_NE(err.find("tensors 'first' (bytes [0, 8)) and 'second' (bytes [4, 12)) overlap"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RefusesShapeThatDoesNotMatchByteSpan) {
  const json header = {{"w", {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 8}}}}};
  const std::string err = header_error(header, std::string(8, '\0'));
  EXPECT_NE(err.find("tensor 'w': shape 3 of F32 needs 12 bytes but data_offsets [0, 8] span 8"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RefusesMalformedEntries) {
  const auto entry_error = [](const json& entry) {
    return header_error(json{{"w", entry}}, std::string(16, '\0'));
  };
  EXPECT_NE(entry_error({{"dtype", "F128"}, {"shape", {1}}, {"data_offsets", {0, 16}}})
                .find("tensor 'w': unknown dtype 'F128'"),
            std::string::npos);
  EXPECT_NE(
      entry_error({{"shape", {1}}, {"data_offsets", {0, 4}}}).find("missing string field 'dtype'"),
      std::string::npos);
  EXPECT_NE(entry_error({{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}})
                .find("shape entry -1 is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(entry_error({{"dtype", "F32"}, {"shape", {1.5}}, {"data_offsets", {0, 4}}})
                .find("not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(entry_error({{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {8, 4}}})
                .find("end before they begin"),
            std::string::npos);
  EXPECT_NE(entry_error({{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0}}})
                .find("'data_offsets' must be [begin, end]"),
            std::string::npos);
  // 2^40 * 2^40 elements would wrap a 64-bit size: refused as too large, not as a wrapped size.
  EXPECT_NE(
      entry_error({{"dtype", "F32"}, {"shape", {1ull << 40, 1ull << 40}}, {"data_offsets", {0, 0}}})
          .find("is too large"),
      std::string::npos);
  EXPECT_NE(entry_error({{"dtype", "F4"}, {"shape", {3}}, {"data_offsets", {0, 1}}})
                .find("does not fill whole bytes"),
            std::string::npos);
  EXPECT_NE(entry_error(json::array({1, 2})).find("entry is not a JSON object"), std::string::npos);
}

TEST(Safetensors, RefusesBadJsonDuplicatesNestingAndMetadata) {
  EXPECT_NE(parse_error(file_bytes("{not json", "")).find("header is not valid JSON"),
            std::string::npos);
  EXPECT_NE(parse_error(file_bytes("[1, 2]", "")).find("header JSON is not an object"),
            std::string::npos);
  const std::string dup = R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                          R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  EXPECT_NE(parse_error(file_bytes(dup, "ab")).find("tensor 'w' appears twice"), std::string::npos);
  const std::string deep = R"({"__metadata__":{"a":{"b":{"c":[1]}}}})";
  EXPECT_NE(parse_error(file_bytes(deep, "")).find("nests deeper than"), std::string::npos);
  EXPECT_NE(parse_error(file_bytes(std::string(100000, '['), "")).find("nests deeper than"),
            std::string::npos);
  EXPECT_NE(parse_error(file_bytes(R"({"__metadata__":{"n":5}})", ""))
                .find("'__metadata__' value for 'n' is not a string"),
            std::string::npos);
}

TEST(Safetensors, OpenNamesFileAndOsReason) {
  try {
    (void)SafetensorsFile::open("/nonexistent/dir/model.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open /nonexistent/dir/model.safetensors"),
              std::string::npos)
        << e.what();
  }
}

// ------------------------------------------------------------------ checkpoint (index + shards)

std::string one_tensor_file(const std::string& name, float value) {
  const json header = {{name, {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}};
  return file_bytes(header.dump(), f32_bytes({value}));
}

std::string checkpoint_error(const fs::path& dir) {
  try {
    (void)Checkpoint::open(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, ResolvesShardedIndex) {
  TempDir dir;
  dir.write("s1.safetensors", one_tensor_file("a", 1.0f));
  dir.write("s2.safetensors", one_tensor_file("b", 2.0f));
  dir.write("model.safetensors.index.json",
            json{{"metadata", {{"total_size", 8}}},
                 {"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}}
                .dump());
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt.num_files(), 2u);
  const CheckpointTensor* b = ckpt.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->file_name(), "s2.safetensors");
  float value = 0;
  std::memcpy(&value, b->bytes().data(), 4);
  EXPECT_EQ(value, 2.0f);
}

TEST(Checkpoint, RefusesInconsistentIndexes) {
  TempDir dir;
  dir.write("s1.safetensors", one_tensor_file("a", 1.0f));
  dir.write("s2.safetensors", one_tensor_file("b", 2.0f));
  const auto with_index = [&](const json& weight_map) {
    dir.write("model.safetensors.index.json", json{{"weight_map", weight_map}}.dump());
    return checkpoint_error(dir.path());
  };
  EXPECT_NE(with_index({{"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"z", "s2.safetensors"}})
                .find("tensor 'b' is listed in shard 's1.safetensors' but is stored in "
                      "'s2.safetensors'"),
            std::string::npos);
  EXPECT_NE(with_index({{"a", "s1.safetensors"}, {"c", "s2.safetensors"}})
                .find("tensor 'c' is listed in shard 's2.safetensors' but no shard holds it"),
            std::string::npos);
  EXPECT_NE(with_index({{"a", "../s1.safetensors"}}).find("is not a plain relative file name"),
            std::string::npos);
  EXPECT_NE(with_index({{"a", "/etc/passwd"}}).find("is not a plain relative file name"),
            std::string::npos);
  EXPECT_NE(with_index({{"a", "s3.safetensors"}}).find("shard 's3.safetensors' does not exist"),
            std::string::npos);
  dir.write("s3.safetensors", one_tensor_file("a", 3.0f));
  EXPECT_NE(with_index({{"a", "s1.safetensors"}, {"b", "s3.safetensors"}})
                .find("tensor 'a' appears in two files"),
            std::string::npos);
}

TEST(Checkpoint, SingleFileAndEmptyDirectory) {
  TempDir dir;
  EXPECT_NE(
      checkpoint_error(dir.path()).find("no model.safetensors.index.json or model.safetensors"),
      std::string::npos);
  dir.write("model.safetensors", one_tensor_file("x", 5.0f));
  const Checkpoint ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt.tensors().size(), 1u);
  EXPECT_NE(ckpt.find("x"), nullptr);
  // A truncated shard is refused with its path.
  const std::string bytes = one_tensor_file("x", 5.0f);
  dir.write("model.safetensors", bytes.substr(0, bytes.size() - 2));
  const std::string err = checkpoint_error(dir.path());
  EXPECT_NE(err.find("model.safetensors: tensor 'x': data_offsets [0, 4] run past the end"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace tessera::weights
