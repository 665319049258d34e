// The http plugin loaded through the PluginRegistry and started by FrontendHost with the real
// serving table (core/src/serve) but no engine yet: what a client sees while the model loads and
// while the server drains, option refusals naming the key, two frontends from one configuration,
// and a stop that closes the listener.
#include <gtest/gtest.h>

#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.hpp"
#include "plugins/registry.hpp"
#include "serve/frontend_host.hpp"
#include "serve/serving_api.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;
namespace http = boost::beast::http;
using tessera::serve::FrontendHost;
using tessera::serve::ServingApi;
using tessera::serve::ServingInfo;

struct Response {
  unsigned status = 0;
  std::string body;
  std::string retry_after;
};

Response call(int port, http::verb verb, const std::string& target, const std::string& body = "") {
  net::io_context ioc;
  net::ip::tcp::socket socket(ioc);
  socket.connect({net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "x");
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return {res.result_int(), res.body(), std::string(res[http::field::retry_after])};
}

int read_port(const fs::path& file) {
  std::ifstream in(file);
  int port = 0;
  in >> port;
  return port;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("http_server_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    // Only this plugin: others (gRPC's protobuf registrations) need not survive reloading.
    (void)registry.load(fs::path(TESSERA_PLUGIN_DIR) / "libtessera_frontend_http.so");
    auto tokenizer = std::make_shared<const tessera::tokenizer::Tokenizer>(
        tessera::tokenizer::Tokenizer::from_file(std::string(TESSERA_SOURCE_DIR) +
                                                 "/models/tiny-dsv4/tokenizer.json"));
    ServingInfo info;
    info.model_name = "tiny";
    info.limits.max_context = 128;
    api = std::make_unique<ServingApi>(info, tokenizer);
  }
  void TearDown() { fs::remove_all(dir); }

  tessera::Config config_with(const std::string& frontends) {
    return tessera::load_config_string("[model]\npath = \"unused\"\n" + frontends, "test.toml");
  }
  std::string frontend(const std::string& name, const std::string& extra = "") {
    return "[[frontend]]\nplugin = \"http\"\nlisten = \"127.0.0.1:0\"\nport_file = \"" +
           (dir / name).string() + "\"\n" + extra + "\n";
  }

  fs::path dir;
  tessera::PluginRegistry registry;
  std::unique_ptr<ServingApi> api;
};

TEST_F(HttpServerTest, LoadingThenDrainingAsClientsSeeIt) {
  FrontendHost host(registry, config_with(frontend("a")));
  host.start_all(api->table());
  const int port = read_port(dir / "a");
  ASSERT_GT(port, 0);

  EXPECT_EQ(call(port, http::verb::get, "/health").status, 200u);
  const Response loading = call(port, http::verb::get, "/ready");
  EXPECT_EQ(loading.status, 503u);
  EXPECT_EQ(loading.body, "loading\n");
  const Response refused = call(port, http::verb::post, "/v1/chat/completions",
                                R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(refused.status, 503u);
  EXPECT_EQ(refused.retry_after, "5");
  const auto error = nlohmann::json::parse(refused.body)["error"];
  EXPECT_EQ(error["type"], "service_unavailable_error");
  // The tokenizer is there before the weights: /tokenize and /v1/models already answer.
  const Response tokens = call(port, http::verb::post, "/tokenize", R"({"prompt": "hello"})");
  EXPECT_EQ(tokens.status, 200u) << tokens.body;
  EXPECT_EQ(nlohmann::json::parse(tokens.body)["max_model_len"], 128);
  const auto models = nlohmann::json::parse(call(port, http::verb::get, "/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  const std::string metrics = call(port, http::verb::get, "/metrics").body;
  EXPECT_NE(metrics.find("tessera:http_requests_total{model_name=\"tiny\",route=\"/v1/chat/"
                         "completions\",status=\"503\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("tessera:http_requests_total{model_name=\"tiny\",route=\"/ready\","
                         "status=\"503\"} 1"),
            std::string::npos);

  api->set_draining();
  const Response draining = call(port, http::verb::get, "/ready");
  EXPECT_EQ(draining.status, 503u);
  EXPECT_EQ(draining.body, "draining\n");

  host.stop_all(std::chrono::milliseconds(100));
  // The listener closes on the server's own thread; give it up to 2 s to let go of the port.
  net::io_context ioc;
  boost::system::error_code ec;
  for (int attempt = 0; attempt < 40 && !ec; ++attempt) {
    net::ip::tcp::socket socket(ioc);
    socket.connect({net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)}, ec);
    if (!ec) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ec) << "still accepting 2 s after stop";
}

TEST_F(HttpServerTest, TwoFrontendsFromOneConfiguration) {
  FrontendHost host(registry, config_with(frontend("a") + frontend("b", "api_key = \"k\"")));
  ASSERT_EQ(host.size(), 2u);
  host.start_all(api->table());
  const int a = read_port(dir / "a");
  const int b = read_port(dir / "b");
  ASSERT_NE(a, b);
  EXPECT_EQ(call(a, http::verb::get, "/v1/models").status, 200u);
  EXPECT_EQ(call(b, http::verb::get, "/v1/models").status, 401u);  // b has a key, a not
  EXPECT_EQ(call(b, http::verb::get, "/health").status, 200u);
  host.stop_all(std::chrono::milliseconds(0));
}

TEST_F(HttpServerTest, BadOptionsAreRefusedNamingTheEntryAndKey) {
  try {
    FrontendHost host(registry, config_with(frontend("a", "lisen = \"x\"")));
    FAIL() << "accepted an unknown option";
  } catch (const tessera::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[[frontend]]"), std::string::npos) << what;
    EXPECT_NE(what.find("lisen"), std::string::npos) << what;
  }
  try {
    FrontendHost host(registry, config_with("[[frontend]]\nplugin = \"http\"\n"
                                            "listen = \"127.0.0.1:99999\"\n"));
    FAIL() << "accepted port 99999";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("port"), std::string::npos) << e.what();
  }
}

TEST_F(HttpServerTest, APortInUseFailsStartWithTheAddress) {
  FrontendHost first(registry, config_with(frontend("a")));
  first.start_all(api->table());
  const int port = read_port(dir / "a");
  FrontendHost second(registry,
                      config_with("[[frontend]]\nplugin = \"http\"\nlisten = \"127.0.0.1:" +
                                  std::to_string(port) + "\"\n"));
  try {
    second.start_all(api->table());
    FAIL() << "two listeners on one port";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
  first.stop_all(std::chrono::milliseconds(0));
}

}  // namespace
