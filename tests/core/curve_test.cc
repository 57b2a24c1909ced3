// CurveZMQ: key files round-trip, bad ones are named, and a server admits only listed clients.
#include "core/curve.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

namespace ferry::core {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ferry_curve_test_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST_CASE("keygen writes a secret .key and a .pub that read back, and never overwrites") {
  const fs::path dir = TempDir("keygen");
  const std::string prefix = (dir / "server").string();
  auto made = GenerateKeyFiles(prefix);
  REQUIRE_MESSAGE(made.ok(), made.status().message());
  struct stat st {};
  REQUIRE(stat((prefix + ".key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto pair = ReadKeyFile(prefix + ".key");
  REQUIRE(pair.ok());
  CHECK(pair->public_key == made->public_key);
  CHECK(pair->secret_key == made->secret_key);
  auto pub = ReadKeyFile(prefix + ".pub", /*public_only=*/true);
  REQUIRE(pub.ok());
  CHECK(pub->public_key == made->public_key);
  CHECK(pub->secret_key.empty());
  // A .pub where a key pair is needed, and a second keygen, are refused by name.
  auto no_secret = ReadKeyFile(prefix + ".pub");
  REQUIRE_FALSE(no_secret.ok());
  CHECK(no_secret.status().message().find("no secret key") != std::string::npos);
  auto again = GenerateKeyFiles(prefix);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().find(prefix + ".key exists") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a damaged key file or authorized-keys file is refused, naming file and line") {
  const fs::path dir = TempDir("bad");
  const std::string key = (dir / "bad.key").string();
  std::ofstream(key) << "# comment\npublic = \"tooshort\"\n";
  auto bad = ReadKeyFile(key);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == key + ":2: public is not a 40-character Z85 key");
  const std::string authorized = (dir / "authorized").string();
  std::ofstream(authorized) << "# clients\n\nnot a key\n";
  auto list = ReadAuthorizedKeys(authorized);
  REQUIRE_FALSE(list.ok());
  CHECK(list.status().message() == authorized + ":3: not a 40-character Z85 public key");
  fs::remove_all(dir);
}

// Sends a request from a client socket set up by `setup` and waits up to `seconds` for the echo.
bool RoundTrip(zmq::context_t& context, const std::string& endpoint,
               const std::function<void(zmq::socket_t&)>& setup, double seconds) {
  zmq::socket_t client(context, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  setup(client);
  client.connect(endpoint);
  client.send(zmq::str_buffer("ping"), zmq::send_flags::none);
  zmq::pollitem_t item{client.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<int>(seconds * 1000))) == 0) {
    return false;
  }
  zmq::message_t reply;
  return client.recv(reply, zmq::recv_flags::dontwait) && reply.to_string() == "pong";
}

TEST_CASE("a CURVE server answers a listed client and refuses others") {
  const fs::path dir = TempDir("handshake");
  auto server_keys = GenerateKeyFiles((dir / "server").string());
  auto good = GenerateKeyFiles((dir / "good").string());
  auto stranger = GenerateKeyFiles((dir / "stranger").string());
  REQUIRE((server_keys.ok() && good.ok() && stranger.ok()));
  std::ofstream(dir / "authorized") << "# the one client allowed\n"
                                    << std::ifstream(dir / "good.pub").rdbuf();
  auto authorized = ReadAuthorizedKeys((dir / "authorized").string());
  REQUIRE(authorized.ok());
  REQUIRE(authorized->size() == 1);

  zmq::context_t context(1);
  ZapAuthenticator authenticator(context, *authorized);
  zmq::socket_t server(context, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  MakeCurveServer(server, *server_keys);
  server.bind("tcp://127.0.0.1:*");
  const std::string endpoint = server.get(zmq::sockopt::last_endpoint);
  std::atomic<bool> stop{false};
  std::thread echo([&] {  // Answers every request with "pong", until the test ends.
    while (!stop.load()) {
      zmq::pollitem_t item{server.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(50)) == 0) continue;
      zmq::message_t id, body;
      if (!server.recv(id) || !server.recv(body)) continue;
      server.send(id, zmq::send_flags::sndmore);
      server.send(zmq::str_buffer("pong"), zmq::send_flags::none);
    }
  });

  CHECK(RoundTrip(context, endpoint,
                  [&](zmq::socket_t& s) { MakeCurveClient(s, *good, server_keys->public_key); },
                  5.0));
  CHECK_FALSE(RoundTrip(
      context, endpoint,
      [&](zmq::socket_t& s) { MakeCurveClient(s, *stranger, server_keys->public_key); }, 1.0));
  CHECK_FALSE(RoundTrip(context, endpoint, [](zmq::socket_t&) {}, 1.0));  // No CURVE at all.
  // A client that trusts the wrong server key never completes the handshake either.
  CHECK_FALSE(RoundTrip(context, endpoint,
                        [&](zmq::socket_t& s) { MakeCurveClient(s, *good, good->public_key); },
                        1.0));
  CHECK(authenticator.accepted() == 1);
  CHECK(authenticator.refused() >= 1);
  stop.store(true);
  echo.join();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::core
