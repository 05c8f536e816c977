// W1 (one task: acquire, release, repeat) three ways on one private server, in interleaved rounds:
// through the library; through a minimal client that sends the library's own two script calls
// over a bare socket (send, then recv polled for up to the library's reply_spin budget, then
// epoll_wait, and nothing else); and redis-benchmark's `evalsha -c1 -P1` with the minimal lock
// step, whose half is the two-round-trip floor. ours / minimal is what the library costs;
// minimal / floor is what polling for replies gains and the scripts cost against the floor's
// one-line script and sleeping client, plus the noise of the moment. Prints one JSON line.
//   w1_bench [--rounds R] [--n N]

#include <redisync/redisync.hpp>

#include "primitives/lock_protocol/protocol.hpp"
#include "testbed/redis_server.hpp"
#include "redis_benchmark.hpp"
#include "script/script.hpp"

#include <redisync/resp/parser.hpp>
#include <scripts.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <array>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view lock_name = "bench:w1:lock";
constexpr int warmup = 200;

double per_second(int n, clock_type::duration d) {
  return n / std::chrono::duration<double>(d).count();
}

double run_library(std::string const& url, int n) {
  asio::io_context ctx{1};
  redisync::client c{ctx.get_executor(), redisync::config::from_url(url)};
  c.start();
  double rate = 0;
  auto body = [&]() -> asio::awaitable<void> {
    auto l = c.new_owner().lock(std::string{lock_name});
    for (int i = 0; i < warmup; ++i) {
      auto h = co_await l.acquire(30s, asio::use_awaitable);
      co_await h.release(asio::use_awaitable);
    }
    auto const start = clock_type::now();
    for (int i = 0; i < n; ++i) {
      auto h = co_await l.acquire(30s, asio::use_awaitable);
      co_await h.release(asio::use_awaitable);
    }
    rate = per_second(n, clock_type::now() - start);
    c.stop();
  };
  asio::co_spawn(ctx, body(), asio::detached);
  ctx.run();
  return rate;
}

// One request, one reply, on a non-blocking socket polled and then watched by epoll: the least a
// client with the library's reading policy can do.
class minimal_client {
 public:
  explicit minimal_client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    epoll_ = ::epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd_, &ev);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
      throw std::runtime_error{"connect failed"};
    }
    ::epoll_wait(epoll_, &ev, 1, -1);  // connected
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  minimal_client(minimal_client const&) = delete;
  minimal_client& operator=(minimal_client const&) = delete;
  ~minimal_client() {
    ::close(fd_);
    ::close(epoll_);
  }

  void round_trip(std::string_view request) {
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())) {
      throw std::runtime_error{"short send"};
    }
    boost::system::error_code ec;
    auto const give_up = clock_type::now() + redisync::config{}.reply_spin;
    for (;;) {
      ssize_t const got = ::recv(fd_, buffer_, sizeof buffer_, 0);
      if (got > 0) {
        parser_.feed({buffer_, std::size_t(got)}, ec);
        if (ec) throw std::runtime_error{"bad reply"};
        if (parser_.has_value()) {
          if (parser_.take_value().is_error()) throw std::runtime_error{"error reply"};
          return;
        }
      } else if (got == 0 || errno != EAGAIN) {
        throw std::runtime_error{"connection lost"};
      } else if (clock_type::now() >= give_up) {
        epoll_event ev{};
        ::epoll_wait(epoll_, &ev, 1, -1);
      }
    }
  }

 private:
  int fd_ = -1;
  int epoll_ = -1;
  char buffer_[4096];
  redisync::resp::parser parser_;
};

double run_minimal(std::uint16_t port, std::string const& owner, int n) {
  namespace scripts = redisync::detail::scripts;
  std::string const name{lock_name};
  std::string const token_key = redisync::detail::lock_protocol::token_key_of(name);
  std::string const channel = redisync::detail::lock_protocol::channel_of(name);
  std::array<std::string_view, 2> const acquire_keys{name, token_key};
  std::array<std::string_view, 3> const acquire_args{"acquire", owner, "30000"};
  std::array<std::string_view, 1> const release_keys{name};
  std::array<std::string_view, 4> const release_args{"release", owner, "30000", channel};
  auto const acquire = redisync::detail::script_call(scripts::lock_calls, 0, acquire_keys, acquire_args);
  auto const release = redisync::detail::script_call(scripts::lock_calls, 0, release_keys, release_args);
  minimal_client client{port};
  for (int i = 0; i < warmup; ++i) {
    client.round_trip(acquire.payload);
    client.round_trip(release.payload);
  }
  auto const start = clock_type::now();
  for (int i = 0; i < n; ++i) {
    client.round_trip(acquire.payload);
    client.round_trip(release.payload);
  }
  return per_second(n, clock_type::now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  int n = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view const flag = argv[i];
    if (flag == "--rounds") rounds = std::stoi(argv[i + 1]);
    if (flag == "--n") n = std::stoi(argv[i + 1]);
  }
  redisync::process::redis_server redis;
  std::string const floor_sha{redis.command({"SCRIPT", "LOAD", redisync::bench::lock_step}).text()};
  redis.command({"SCRIPT", "LOAD", std::string{redisync::detail::scripts::lock_calls.source}});
  // The minimal client's owner has the library's format: <client uuid>:<id>.
  std::string const owner = "9f3c2a4e-1b7d-4c55-8a0e-2d6f1e9b7c31:1";
  std::vector<double> library, minimal, floor;
  for (int r = 0; r < rounds; ++r) {
    library.push_back(run_library(redis.url(), n));
    minimal.push_back(run_minimal(redis.port(), owner, n));
    floor.push_back(redisync::bench::run_redis_benchmark(redis.port(), floor_sha, 2 * n, 1) / 2);
  }
  std::vector<double> ours_to_minimal, ours_to_floor, minimal_to_floor;
  for (int r = 0; r < rounds; ++r) {
    ours_to_minimal.push_back(library[r] / minimal[r]);
    ours_to_floor.push_back(library[r] / floor[r]);
    minimal_to_floor.push_back(minimal[r] / floor[r]);
  }
  using redisync::bench::median;
  fmt::print(
      "{{\"bench\":\"w1_three_ways\",\"n\":{},\"rounds\":{},\"library_pairs_per_s\":[{:.0f}],"
      "\"minimal_client_pairs_per_s\":[{:.0f}],\"floor_pairs_per_s\":[{:.0f}],"
      "\"median_library_to_minimal\":{:.2f},\"median_library_to_floor\":{:.2f},"
      "\"median_minimal_to_floor\":{:.2f}}}\n",
      n, rounds, fmt::join(library, ","), fmt::join(minimal, ","), fmt::join(floor, ","),
      median(ours_to_minimal), median(ours_to_floor), median(minimal_to_floor));
  return 0;
}
