#include "testbed/redis_server.hpp"
#include "testbed/child.hpp"

#include <redisync/resp/parser.hpp>
#include <redisync/resp/request.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace redisync::process {

namespace asio = boost::asio;
using asio::ip::tcp;

std::uint16_t free_loopback_port() {
  asio::io_context ctx;
  tcp::acceptor acceptor{ctx, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
  return acceptor.local_endpoint().port();
}

namespace {

// The program could not be started at all (exit code 127 from the child).
struct not_runnable : std::runtime_error {
  not_runnable() : std::runtime_error{"not runnable"} {}
};

// In the server's own directory, so that each server has its own.
constexpr char const* config_file_name = "redis.conf";

std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "redisync-redis-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error{"mkdtemp failed"};
  return pattern;
}

// Something else on the port (a process that took it meanwhile and never answers) must not hang
// the caller: the replies come within this, or the exchange fails.
constexpr std::chrono::seconds reply_timeout{10};

// Waits until `socket` has bytes to read, at most until `deadline`.
void await_readable(tcp::socket& socket, std::uint16_t port, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto const left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw std::runtime_error{fmt::format("no reply from 127.0.0.1:{} in time (is it a redis-server?)", port)};
    }
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    int const ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready > 0) return;
    if (ready < 0 && errno != EINTR) throw std::runtime_error{fmt::format("poll failed: errno {}", errno)};
  }
}

resp::value exchange(std::uint16_t port, resp::request const& req, std::size_t replies,
                     std::chrono::steady_clock::time_point deadline) {
  asio::io_context ctx;
  tcp::socket socket{ctx};
  socket.connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port});
  asio::write(socket, asio::buffer(req.payload()));
  resp::parser parser;
  std::string buffer;
  char chunk[4096];
  resp::value last;
  while (replies > 0) {
    boost::system::error_code ec;
    std::size_t const used = parser.feed(buffer, ec);
    if (ec) throw std::runtime_error{"bad reply from redis-server: " + ec.message()};
    buffer.erase(0, used);
    if (parser.has_value()) {
      last = parser.take_value();
      --replies;
      continue;
    }
    await_readable(socket, port, deadline);
    std::size_t const n = socket.read_some(asio::buffer(chunk));
    buffer.append(chunk, n);
  }
  return last;
}

}  // namespace

redis_server::redis_server(redis_options options) : options_{std::move(options)}, port_{options_.port} {
  dir_ = make_temp_dir();
  if (!options_.config_file_lines.empty()) {
    std::ofstream file{dir_ / config_file_name};
    for (auto const& line : options_.config_file_lines) file << line << '\n';
    if (!file.flush()) throw std::runtime_error{"cannot write " + (dir_ / config_file_name).string()};
  }
  start();
}

redis_server::~redis_server() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string redis_server::url() const {
  if (options_.password.empty()) return fmt::format("redis://127.0.0.1:{}", port_);
  return fmt::format("redis://:{}@127.0.0.1:{}", options_.password, port_);
}

void redis_server::start() {
  if (pid_ > 0) return;
  // A first start may take any free port; a restart must keep the one its clients know, and so must
  // a start on a port that the caller chose.
  bool const keep_port = port_ != 0;
  auto const deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (int attempt = 0;; ++attempt) {
    if (!keep_port) port_ = free_loopback_port();
    std::vector<std::string> args;
    // redis-server only takes a config file as its first argument.
    if (!options_.config_file_lines.empty()) args.push_back((dir_ / config_file_name).string());
    args.insert(args.end(), {"--port", std::to_string(port_),
                             "--bind", "127.0.0.1",
                             "--save", "",
                             "--appendonly", "no",
                             // A replica's first sync starts at once, not after 5 s.
                             "--repl-diskless-sync-delay", "0",
                             "--daemonize", "no",
                             "--dir", dir_.string(),
                             "--logfile", (dir_ / "redis.log").string()});
    if (options_.replica_of != 0) {
      args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(options_.replica_of)});
    }
    if (!options_.password.empty()) {
      args.insert(args.end(), {"--requirepass", options_.password});
      if (options_.replica_of != 0) args.insert(args.end(), {"--masterauth", options_.password});
    }
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
    if (options_.sentinel) args.push_back("--sentinel");
    // The server logs to its file; it must not hold a test runner's pipes open.
    pid_ = spawn_child("redis-server", args, {.stdout_file = {}, .quiet_stderr = true});
    try {
      wait_until_ready();
      return;
    } catch (not_runnable const&) {
      throw std::runtime_error{"cannot run redis-server (is it installed and on PATH?)"};
    } catch (std::exception const&) {
      // Most likely another socket holds the port: a first start tries another, a restart waits.
      kill_hard();
    }
    bool const gave_up = keep_port ? std::chrono::steady_clock::now() > deadline : attempt == 4;
    if (gave_up) {
      throw std::runtime_error{
          fmt::format("redis-server did not start on port {}; see {}/redis.log", port_, dir_.string())};
    }
    // Waiting for a port that another socket holds: nothing to wait on but time.
    if (keep_port) std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

void redis_server::wait_until_ready() {
  auto const deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      // 127: the child could not exec it; another port would not help.
      if (WIFEXITED(status) && WEXITSTATUS(status) == 127) throw not_runnable{};
      throw std::runtime_error{"redis-server exited during start-up"};
    }
    try {
      auto const reply = commands_by({{"PING"}}, deadline);
      if (!reply.is_error() || reply.text().starts_with("NOAUTH")) return;
    } catch (std::exception const&) {
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error{"redis-server did not answer PING in time"};
    }
    // Polling a port that is not open yet: nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

resp::value redis_server::command(std::vector<std::string> const& args) const {
  return commands({args});
}

resp::value redis_server::commands(std::vector<std::vector<std::string>> const& sequence) const {
  return commands_by(sequence, std::chrono::steady_clock::now() + reply_timeout);
}

resp::value redis_server::commands_by(std::vector<std::vector<std::string>> const& sequence,
                                      std::chrono::steady_clock::time_point deadline) const {
  resp::request req;
  std::size_t replies = sequence.size();
  if (!options_.password.empty()) {
    req.push("AUTH", options_.password);
    ++replies;
  }
  for (auto const& args : sequence) {
    std::vector<std::string_view> tail(args.begin() + 1, args.end());
    req.push_range(args.front(), tail);
  }
  return exchange(port_, req, replies, deadline);
}

resp::value redis_server::command(std::initializer_list<std::string_view> args) const {
  return command(std::vector<std::string>(args.begin(), args.end()));
}

void redis_server::send_signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

void redis_server::reap(std::chrono::milliseconds grace) {
  auto const deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    int status = 0;
    pid_t const r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || r < 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  pid_ = -1;
}

void redis_server::kill_hard() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  reap(std::chrono::milliseconds{5000});
}

void redis_server::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  reap(std::chrono::milliseconds{5000});
}

void wait_until(std::string_view what, std::chrono::milliseconds limit,
                std::function<std::string()> const& unmet) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::string state;
    try {
      state = unmet();
    } catch (std::exception const& e) {
      state = e.what();
    }
    if (state.empty()) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error{fmt::format("gave up after {} ms waiting for {}: {}", limit.count(), what, state)};
    }
    // Server states have no event to await: nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
}

std::vector<std::string> tls_args(tls_files const& files, std::uint16_t tls_port) {
  return {"--tls-port",         std::to_string(tls_port), "--tls-cert-file",    files.cert_file,
          "--tls-key-file",     files.key_file,           "--tls-ca-cert-file", files.ca_file,
          "--tls-auth-clients", "no",                     "--tls-replication",  "yes"};
}

}  // namespace redisync::process
