// A TCP proxy that adds latency each way in front of a Redis on 127.0.0.1, for measuring the client
// over a network slower than loopback (docs/benchmarks.md, "Polling over a slower network").
//   latency_proxy SERVER_PORT LATENCY_US   prints its own port, then runs until killed

#include "support/fault_proxy.hpp"

#include <charconv>
#include <csignal>
#include <iostream>
#include <string_view>

namespace {

long number(char const* text) {
  std::string_view const v{text};
  long out = -1;
  auto const [end, rc] = std::from_chars(v.data(), v.data() + v.size(), out);
  return rc == std::errc{} && end == v.data() + v.size() ? out : -1;
}

}  // namespace

int main(int argc, char** argv) {
  long const port = argc == 3 ? number(argv[1]) : -1;
  long const latency_us = argc == 3 ? number(argv[2]) : -1;
  if (port <= 0 || port > 65535 || latency_us < 0) {
    std::cerr << "usage: latency_proxy SERVER_PORT LATENCY_US\n";
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the proxy's thread starts: only sigwait sees them
  redisync::test::fault_proxy proxy{static_cast<std::uint16_t>(port)};
  proxy.set({.latency = std::chrono::microseconds{latency_us}});
  std::cout << proxy.port() << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}
