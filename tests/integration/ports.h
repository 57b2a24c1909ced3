// Ports for the servers of a run a test starts.
//
//   RunPorts()  -> the first of kRunPortSpan free consecutive ports, below the ephemeral range
//
// The kernel picks the local port of every outgoing connection from its ephemeral range
// (net.ipv4.ip_local_port_range, 32768-60999 by default). A server port inside that range can
// be held as the local end of any connection on the machine, the run's own included, and its
// server then cannot bind it: a CI run's paramserver failed that way at every start. Below the
// range only an explicit bind takes a port, and RunPorts checks that none holds its block.
#ifndef FERRY_TESTS_INTEGRATION_PORTS_H_
#define FERRY_TESTS_INTEGRATION_PORTS_H_

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

namespace ferry::testing {

// A run's replay shards listen on base, base + 1, ...; the paramserver on base + 10 and + 11.
inline constexpr int kRunPortSpan = 16;

// Whether a server could listen on `port` now (as ZeroMQ binds: SO_REUSEADDR, every interface).
inline bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return free;
}

// Each block is handed out once per process; blocks start from one the pid picks, so that two
// test processes running at once seldom probe the same ports.
inline int RunPorts() {
  constexpr int kLowest = 10000;
  int ephemeral_start = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_start;
  const int blocks = (ephemeral_start - kLowest) / kRunPortSpan;
  REQUIRE(blocks > 0);
  static int next = static_cast<int>(getpid()) % blocks;
  for (int tried = 0; tried < blocks; ++tried) {
    const int base = kLowest + next * kRunPortSpan;
    next = (next + 1) % blocks;
    bool free = true;
    for (int port = base; port < base + kRunPortSpan && free; ++port) free = PortFree(port);
    if (free) return base;
  }
  FAIL("no " << kRunPortSpan << " free consecutive ports below " << ephemeral_start);
  return -1;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_INTEGRATION_PORTS_H_
