#pragma once

// A private redis-server process on a free loopback port, for tests and for `redisync demo`.
// Started without persistence in its own temporary directory, waited for until it answers PING,
// and stopped by its PID. The cluster and sentinel fixtures are made of these.

#include <redisync/resp/value.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::process {

// Certificate files for servers that serve TLS as well as plain TCP (PEM paths).
struct tls_files {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
};

// The arguments of a server that also serves TLS on `tls_port`, without asking clients for
// certificates, and replicates over TLS (a Sentinel: talks TLS to the servers it watches).
std::vector<std::string> tls_args(tls_files const& files, std::uint16_t tls_port);

struct redis_options {
  std::vector<std::string> extra_args;  // appended to the command line ("--requirepass", "x")
  std::uint16_t replica_of = 0;         // port of a master on 127.0.0.1, or 0
  std::string password;                 // used by command() and to build url()
  std::chrono::milliseconds start_timeout{10000};
  // 0: a free one. A caller that needs the port in other arguments (a cluster node's config file
  // name) chooses it; the first start then keeps it, waiting for it like a restart.
  std::uint16_t port = 0;
  // Written to a config file in the server's directory before its first start and passed first on
  // the command line: Sentinel refuses to run without one that it can rewrite, and a restart keeps
  // what it wrote there.
  std::vector<std::string> config_file_lines;
  bool sentinel = false;  // --sentinel mode, with config_file_lines naming what to monitor
};

// Options for a replica of the server on 127.0.0.1:`master_port`.
inline redis_options replica_of(std::uint16_t master_port) {
  redis_options options;
  options.replica_of = master_port;
  return options;
}

// Options with extra command-line arguments.
inline redis_options with_args(std::vector<std::string> args) {
  redis_options options;
  options.extra_args = std::move(args);
  return options;
}

class redis_server {
 public:
  explicit redis_server(redis_options options = {});
  ~redis_server();
  redis_server(redis_server const&) = delete;
  redis_server& operator=(redis_server const&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  pid_t pid() const noexcept { return pid_; }
  std::string url() const;
  std::filesystem::path const& dir() const noexcept { return dir_; }

  // One command on a fresh blocking connection; returns the reply (errors are replies). No reply
  // within 10 s throws, naming the port.
  resp::value command(std::vector<std::string> const& args) const;
  resp::value command(std::initializer_list<std::string_view> args) const;
  // Several commands on one connection (WAIT counts the writes of its own connection); returns
  // the last reply.
  resp::value commands(std::vector<std::vector<std::string>> const& sequence) const;

  void send_signal(int signal) const;  // SIGSTOP, SIGCONT, ...
  void kill_hard();                    // SIGKILL and reap: data without persistence is gone
  void stop();                         // SIGTERM and reap
  // (Re)start on the same port with the same options; a restart waits up to start_timeout for its
  // port while another socket holds it.
  void start();
  bool running() const noexcept { return pid_ > 0; }

 private:
  void wait_until_ready();
  resp::value commands_by(std::vector<std::vector<std::string>> const& sequence,
                          std::chrono::steady_clock::time_point deadline) const;
  void reap(std::chrono::milliseconds grace);

  redis_options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
std::uint16_t free_loopback_port();

// For server states that have no event to await (a cluster converging, a failover): calls `unmet`
// every 50 ms until it returns an empty string, or throws after `limit`, naming `what` and the
// last unmet state. An exception from `unmet` counts as an unmet state (a node not answering yet).
void wait_until(std::string_view what, std::chrono::milliseconds limit,
                std::function<std::string()> const& unmet);

}  // namespace redisync::process
