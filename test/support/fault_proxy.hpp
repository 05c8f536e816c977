#pragma once

// A TCP proxy on a loopback port in front of a server, with faults a test switches on and off:
// added latency, traffic stalled one way or both (a blackhole: the connection stays open and
// silent), every connection reset, connections cut after N bytes, reads slowed to a trickle, new
// connections refused. Like a real network, it never loses bytes from the middle of a stream: a
// stalled direction holds them back and delivers them once the fault is over, as TCP does when a
// path heals (dropping them would desynchronise requests and replies, which TCP cannot do). It runs on its own thread, so a test's io_context and the processes under
// test see it as the network.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace redisync::test {

class fault_proxy {
 public:
  enum direction : unsigned { none = 0, to_server = 1, to_client = 2, both = 3 };

  struct faults {
    std::chrono::microseconds latency{0};  // added before each chunk is passed on
    unsigned stalled = none;               // directions whose bytes are held back until cleared
    std::int64_t cut_after = -1;           // bytes to the server a connection may carry; -1: any
    std::size_t trickle = 0;               // > 0: pass on this many bytes per millisecond at most
    bool refuse = false;                   // close new connections at once
  };

  explicit fault_proxy(std::uint16_t server_port)
      : server_{boost::asio::ip::make_address("127.0.0.1"), server_port},
        acceptor_{ctx_, {boost::asio::ip::make_address("127.0.0.1"), 0}} {
    boost::asio::co_spawn(ctx_, accept_loop(), boost::asio::detached);
    thread_ = std::thread{[this] { ctx_.run(); }};
  }
  // Closes everything; the thread ends when the last pump has.
  ~fault_proxy() {
    boost::asio::post(ctx_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      close_all(true);
    });
    thread_.join();
  }
  fault_proxy(fault_proxy const&) = delete;
  fault_proxy& operator=(fault_proxy const&) = delete;

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port()); }

  void set(faults f) {
    std::lock_guard const lock{mutex_};
    faults_ = f;
  }
  void clear() { set({}); }
  // Resets every open connection (RST, not FIN): both ends see a hard error.
  void reset_all() {
    boost::asio::post(ctx_, [this] { close_all(true); });
  }

 private:
  using tcp = boost::asio::ip::tcp;

  struct link {
    tcp::socket client;
    tcp::socket server;
    std::int64_t to_server_bytes = 0;
    link(boost::asio::io_context& ctx, tcp::socket c) : client{std::move(c)}, server{ctx} {}
    void close(bool hard) {
      boost::system::error_code ignored;
      if (hard) {
        client.set_option(tcp::socket::linger{true, 0}, ignored);
        server.set_option(tcp::socket::linger{true, 0}, ignored);
      }
      client.close(ignored);
      server.close(ignored);
    }
  };

  faults current() const {
    std::lock_guard const lock{mutex_};
    return faults_;
  }

  void close_all(bool hard) {
    for (auto& weak : links_) {
      if (auto l = weak.lock()) l->close(hard);
    }
    links_.clear();
  }

  boost::asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) co_return;
      if (current().refuse) continue;  // the socket closes as it goes out of scope
      auto l = std::make_shared<link>(ctx_, std::move(socket));
      links_.remove_if([](auto const& w) { return w.expired(); });
      links_.push_back(l);
      boost::asio::co_spawn(ctx_, start(l), boost::asio::detached);
    }
  }

  boost::asio::awaitable<void> start(std::shared_ptr<link> l) {
    auto [ec] = co_await l->server.async_connect(server_, boost::asio::as_tuple(boost::asio::use_awaitable));
    if (ec) {
      l->close(true);
      co_return;
    }
    boost::asio::co_spawn(ctx_, pump(l, l->client, l->server, to_server), boost::asio::detached);
    boost::asio::co_spawn(ctx_, pump(l, l->server, l->client, to_client), boost::asio::detached);
  }

  boost::asio::awaitable<void> pump(std::shared_ptr<link> l, tcp::socket& from, tcp::socket& to, direction d) {
    using boost::asio::as_tuple;
    using boost::asio::use_awaitable;
    boost::asio::steady_timer pause{ctx_};
    char buffer[16 * 1024];
    for (;;) {
      auto [rec, n] = co_await from.async_read_some(boost::asio::buffer(buffer), as_tuple(use_awaitable));
      if (rec) break;
      auto f = current();
      while ((f.stalled & d) && to.is_open()) {
        pause.expires_after(std::chrono::milliseconds{5});
        co_await pause.async_wait(as_tuple(use_awaitable));
        f = current();
      }
      if (f.latency.count() > 0) {
        pause.expires_after(f.latency);
        co_await pause.async_wait(as_tuple(use_awaitable));
      }
      std::size_t pass = n;
      bool cut = false;
      if (d == to_server && f.cut_after >= 0) {
        auto const room = std::max<std::int64_t>(0, f.cut_after - l->to_server_bytes);
        if (static_cast<std::int64_t>(n) > room) {
          pass = static_cast<std::size_t>(room);
          cut = true;
        }
        l->to_server_bytes += static_cast<std::int64_t>(pass);
      }
      std::size_t done = 0;
      while (done < pass) {
        std::size_t const piece = f.trickle > 0 ? std::min(f.trickle, pass - done) : pass - done;
        auto [wec, w] = co_await boost::asio::async_write(to, boost::asio::buffer(buffer + done, piece),
                                                          as_tuple(use_awaitable));
        if (wec) break;
        done += w;
        if (f.trickle > 0 && done < pass) {
          pause.expires_after(std::chrono::milliseconds{1});
          co_await pause.async_wait(as_tuple(use_awaitable));
        }
      }
      if (cut || done < pass) break;
    }
    l->close(false);
  }

  boost::asio::io_context ctx_;
  tcp::endpoint server_;
  tcp::acceptor acceptor_;
  mutable std::mutex mutex_;
  faults faults_;
  std::list<std::weak_ptr<link>> links_;
  std::thread thread_;
};

}  // namespace redisync::test
