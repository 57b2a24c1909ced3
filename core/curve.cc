#include "core/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/wire.h"

namespace ferry::core {
namespace {

constexpr size_t kZ85KeyLength = 40;

bool IsZ85Key(const std::string& key) {
  uint8_t binary[32];
  return key.size() == kZ85KeyLength && zmq_z85_decode(binary, key.c_str()) != nullptr;
}

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// Writes `text` to a new file `path` with `mode`; fails if it exists.
Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    return errno == EEXIST ? InvalidArgument(path + " exists; ferry keygen never overwrites a key")
                           : Unavailable("cannot create " + path + ": " + std::strerror(errno));
  }
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!written || !synced) return Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

struct ProcessSecurity {
  bool curve = false;
  CurveKeyPair server_keys;
  std::set<std::string> authorized;
  CurveKeyPair client_keys;
  std::string server_public_key;
};

ProcessSecurity& Installed() {
  static ProcessSecurity security;
  return security;
}

}  // namespace

Status InstallSocketSecurity(const SecurityOptions& options, bool server, bool client) {
  ProcessSecurity security;
  security.curve = options.curve;
  if (security.curve && server) {
    auto keys = ReadKeyFile(options.server_key);
    if (!keys.ok()) return InvalidArgument("security.server_key: " + keys.status().message());
    security.server_keys = *keys;
    auto authorized = ReadAuthorizedKeys(options.authorized_keys);
    if (!authorized.ok()) {
      return InvalidArgument("security.authorized_keys: " + authorized.status().message());
    }
    security.authorized = *authorized;
  }
  if (security.curve && client) {
    auto keys = ReadKeyFile(options.client_key);
    if (!keys.ok()) return InvalidArgument("security.client_key: " + keys.status().message());
    security.client_keys = *keys;
    auto server_public = ReadKeyFile(options.server_public_key, /*public_only=*/true);
    if (!server_public.ok()) {
      return InvalidArgument("security.server_public_key: " + server_public.status().message());
    }
    security.server_public_key = server_public->public_key;
  }
  Installed() = security;
  return Status::Ok();
}

void SecureServerSocket(zmq::socket_t& socket) {
  const ProcessSecurity& security = Installed();
  if (!security.curve) return;
  FERRY_CHECK(!security.server_keys.secret_key.empty());
  MakeCurveServer(socket, security.server_keys);
}

void SecureClientSocket(zmq::socket_t& socket) {
  const ProcessSecurity& security = Installed();
  if (!security.curve) return;
  FERRY_CHECK(!security.client_keys.secret_key.empty());
  MakeCurveClient(socket, security.client_keys, security.server_public_key);
}

const std::set<std::string>& AuthorizedClientKeys() { return Installed().authorized; }

bool CurveEnabled() { return Installed().curve; }

Result<CurveKeyPair> GenerateKeyFiles(const std::string& prefix) {
  char public_key[kZ85KeyLength + 1];
  char secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Unavailable("this libzmq has no CURVE support (built without libsodium)");
  }
  const CurveKeyPair keys{public_key, secret_key};
  FERRY_RETURN_IF_ERROR(WriteNewFile(prefix + ".key",
                                     "# ferry CURVE key pair; keep it secret\npublic = \"" +
                                         keys.public_key + "\"\nsecret = \"" + keys.secret_key +
                                         "\"\n",
                                     0600));
  FERRY_RETURN_IF_ERROR(WriteNewFile(
      prefix + ".pub", "# ferry CURVE public key\npublic = \"" + keys.public_key + "\"\n", 0644));
  return keys;
}

Result<CurveKeyPair> ReadKeyFile(const std::string& path, bool public_only) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read key file " + path + ": " + std::strerror(errno));
  CurveKeyPair keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (eq == std::string::npos) return InvalidArgument(where + "expected name = \"key\"");
    const std::string name = Trim(line.substr(0, eq));
    std::string value = Trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (name != "public" && name != "secret") {
      return InvalidArgument(where + "unknown name '" + name + "' (public or secret)");
    }
    if (!IsZ85Key(value)) {
      return InvalidArgument(where + name + " is not a 40-character Z85 key");
    }
    (name == "public" ? keys.public_key : keys.secret_key) = value;
  }
  if (keys.public_key.empty()) return InvalidArgument(path + ": no public key");
  if (!public_only && keys.secret_key.empty()) {
    return InvalidArgument(path + ": no secret key (is this a .pub file? pass the .key file)");
  }
  return keys;
}

Result<std::set<std::string>> ReadAuthorizedKeys(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read authorized keys " + path + ": " + std::strerror(errno));
  std::set<std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    // A .pub file's line works too: public = "KEY".
    if (line.rfind("public", 0) == 0 && line.find('=') != std::string::npos) {
      line = Trim(line.substr(line.find('=') + 1));
      if (line.size() >= 2 && line.front() == '"' && line.back() == '"') {
        line = line.substr(1, line.size() - 2);
      }
    }
    if (!IsZ85Key(line)) {
      return InvalidArgument(path + ":" + std::to_string(number) +
                             ": not a 40-character Z85 public key");
    }
    keys.insert(line);
  }
  return keys;
}

void MakeCurveServer(zmq::socket_t& socket, const CurveKeyPair& keys) {
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, "ferry");
}

void MakeCurveClient(zmq::socket_t& socket, const CurveKeyPair& keys,
                     const std::string& server_public_key) {
  socket.set(zmq::sockopt::curve_serverkey, server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

ZapAuthenticator::ZapAuthenticator(zmq::context_t& context,
                                   std::set<std::string> authorized_public_keys)
    : context_(context),
      authorized_(std::move(authorized_public_keys)),
      handler_(context_, zmq::socket_type::rep) {
  handler_.set(zmq::sockopt::linger, 0);
  handler_.bind("inproc://zeromq.zap.01");
  thread_ = std::thread([this] { Serve(); });
}

ZapAuthenticator::~ZapAuthenticator() {
  stop_.store(true);
  thread_.join();
}

void ZapAuthenticator::Serve() {
  while (!stop_.load()) {
    zmq::pollitem_t item{handler_.handle(), 0, ZMQ_POLLIN, 0};
    if (Poll(&item, 1, 100) == 0) continue;
    // version, request id, domain, address, routing id, mechanism, credentials...
    std::vector<zmq::message_t> request;
    do {
      request.emplace_back();
      if (!RetryInterrupted(
              [&] { return handler_.recv(request.back(), zmq::recv_flags::dontwait); })) {
        break;
      }
    } while (request.back().more());
    bool allowed = false;
    if (request.size() >= 7 && request[5].to_string() == "CURVE" && request[6].size() == 32) {
      char key[kZ85KeyLength + 1];
      zmq_z85_encode(key, static_cast<const uint8_t*>(request[6].data()), 32);
      allowed = authorized_.count(key) > 0;
    }
    (allowed ? accepted_ : refused_).fetch_add(1);
    const std::string request_id = request.size() > 1 ? request[1].to_string() : "";
    const std::string reply[] = {
        "1.0", request_id, allowed ? "200" : "400", allowed ? "OK" : "client key not authorized",
        "",    ""};
    for (size_t i = 0; i < 6; ++i) {
      const auto flags = i + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none;
      RetryInterrupted([&] { return handler_.send(zmq::buffer(reply[i]), flags); });
    }
  }
}

Result<std::unique_ptr<ZapAuthenticator>> SecureServerRole(const SecurityOptions& options,
                                                           zmq::context_t& context,
                                                           bool also_client) {
  FERRY_RETURN_IF_ERROR(InstallSocketSecurity(options, /*server=*/true, also_client));
  if (!CurveEnabled()) return std::unique_ptr<ZapAuthenticator>();
  return std::make_unique<ZapAuthenticator>(context, AuthorizedClientKeys());
}

}  // namespace ferry::core
