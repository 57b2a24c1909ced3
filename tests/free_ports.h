// Loopback endpoints for tests: ports that were free a moment ago.
#ifndef FERRY_TESTS_FREE_PORTS_H_
#define FERRY_TESTS_FREE_PORTS_H_

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace ferry::testing {

// Two tcp://127.0.0.1 endpoints. Both ports are held at once so they differ; plain sockets
// close synchronously, so a server can bind them right after.
inline std::pair<std::string, std::string> FreeTcpEndpoints() {
  std::string endpoints[2];
  int fds[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fds[i] >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    REQUIRE(::bind(fds[i], reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(::getsockname(fds[i], reinterpret_cast<sockaddr*>(&address), &length) == 0);
    endpoints[i] = "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return {endpoints[0], endpoints[1]};
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_FREE_PORTS_H_
