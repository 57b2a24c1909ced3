// CurveZMQ for ferry's sockets: encryption, and servers that admit only listed clients.
//
//   ferry keygen PREFIX   -> PREFIX.key (public and secret key, mode 0600) and PREFIX.pub
//   the servers (replay shards, paramserver) load a key pair and an authorized-keys file (client
//   public keys, one per line, '#' comments) and run a ZapAuthenticator on their context;
//   the clients (actors, learner ranks, ferry inspect) load their key pair and the server's .pub.
//
// Keys are ZeroMQ's Z85 text, 40 characters. A key file:
//
//   # ferry CURVE key pair; keep it secret
//   public = "<40 Z85 characters>"
//   secret = "<40 Z85 characters>"
//
// A client whose key is not listed is refused during the handshake (ZAP status 400): its socket
// never delivers a message, and the server counts the refusal. Sockets must be set up before
// they bind or connect.
#ifndef FERRY_CORE_CURVE_H_
#define FERRY_CORE_CURVE_H_

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "core/config.h"
#include "core/status.h"

namespace ferry::core {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters.
  std::string secret_key;  // Empty in a .pub file.
};

// Writes PREFIX.key and PREFIX.pub for a fresh key pair; refuses to overwrite either.
Result<CurveKeyPair> GenerateKeyFiles(const std::string& prefix);
// A .key file (both keys) or, with `public_only`, a .pub file; errors name the file and line.
Result<CurveKeyPair> ReadKeyFile(const std::string& path, bool public_only = false);
// The public keys listed in an authorized-keys file.
Result<std::set<std::string>> ReadAuthorizedKeys(const std::string& path);

// Sets `socket` up as a CURVE server with `keys`.
void MakeCurveServer(zmq::socket_t& socket, const CurveKeyPair& keys);
// Sets `socket` up as a CURVE client with its own `keys`, trusting `server_public_key`.
void MakeCurveClient(zmq::socket_t& socket, const CurveKeyPair& keys,
                     const std::string& server_public_key);

// The process's socket security, from the config's security.* keys: every ferry role installs
// it once at start, as a server (loads server_key and authorized_keys), a client (client_key and
// server_public_key) or both; then every socket it makes goes through SecureServerSocket or
// SecureClientSocket before it binds or connects. Both do nothing while security.curve is off.
Status InstallSocketSecurity(const SecurityOptions& options, bool server, bool client);
void SecureServerSocket(zmq::socket_t& socket);
void SecureClientSocket(zmq::socket_t& socket);
// The installed server's authorized client keys (for its ZapAuthenticator); empty when off.
const std::set<std::string>& AuthorizedClientKeys();
bool CurveEnabled();

// Answers ZeroMQ's authentication requests (ZAP, RFC 27) for every CURVE server socket of
// `context`, on a thread of its own, until destroyed. Create it before the servers bind.
class ZapAuthenticator {
 public:
  ZapAuthenticator(zmq::context_t& context, std::set<std::string> authorized_public_keys);
  ~ZapAuthenticator();
  ZapAuthenticator(const ZapAuthenticator&) = delete;
  ZapAuthenticator& operator=(const ZapAuthenticator&) = delete;

  int64_t accepted() const { return accepted_.load(); }
  int64_t refused() const { return refused_.load(); }

 private:
  void Serve();

  zmq::context_t& context_;
  std::set<std::string> authorized_;
  zmq::socket_t handler_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> refused_{0};
  std::thread thread_;
};

// A server role's security: installs its keys (InstallSocketSecurity as a server, and as a
// client too for a role that is both, like a relaying paramserver) and, with CURVE on, returns
// the authenticator for `context`'s sockets (null otherwise), which must live while they serve.
Result<std::unique_ptr<ZapAuthenticator>> SecureServerRole(const SecurityOptions& options,
                                                           zmq::context_t& context,
                                                           bool also_client = false);

}  // namespace ferry::core

#endif  // FERRY_CORE_CURVE_H_
