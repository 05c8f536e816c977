#pragma once

// The entry point: one client per Redis deployment and process. It owns one multiplexed connection,
// the watchdog's timing wheel and the pub/sub subscriptions its waiters share. It is safe to share
// across the threads of an io_context pool: its state lives on its own strand.

#include <redisync/config.hpp>
#include <redisync/connection.hpp>
#include <redisync/owner.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace redisync {

struct client_stats {
  std::size_t holds = 0;          // hold records of this client (one per owner and lock)
  std::size_t waiters = 0;        // acquires waiting for a lock
  std::size_t subscriptions = 0;  // channels subscribed or lingering
  std::uint64_t renewals = 0;     // locks renewed by the watchdog so far
  std::uint64_t renewal_batches = 0;  // script calls that carried them
  std::uint64_t handoffs = 0;     // locks passed to a local waiter inside the release script
};

class client {
 public:
  using executor_type = boost::asio::any_io_executor;

  client(executor_type ex, config cfg);
  client(executor_type ex, std::string_view url) : client{std::move(ex), config::from_url(url)} {}
  ~client();
  client(client const&) = delete;
  client& operator=(client const&) = delete;

  // Runs the connection until stop() (operation_aborted) or a fatal error such as
  // error::auth_failed. start() runs it in the background instead.
  template <class Token = boost::asio::deferred_t>
  auto run(Token&& token = {}) {
    return connection().run(std::forward<Token>(token));
  }
  void start();
  // Stops the connection, wakes every waiter (they fail with error::not_connected) and stops the
  // watchdog. Holds are not released: their leases run out on the server.
  void stop();

  // The client's identity, the first half of every owner id it makes.
  std::string const& id() const noexcept;
  // A fresh owner: `<client id>:<next 64-bit number>`.
  owner new_owner();
  // An owner with an explicit identity, for example one restored after a restart. Throws
  // system_error(error::invalid_argument) for an empty id or one with spaces or control bytes.
  owner make_owner(std::string id);
  // A lock handle with a fresh owner.
  lock make_lock(std::string name) { return new_owner().lock(std::move(name)); }

  // Plain commands on the same connection as the locks.
  template <class Token = boost::asio::deferred_t>
  auto exec(resp::request req, Token&& token = {}) {
    return connection().exec(std::move(req), std::forward<Token>(token));
  }

  // Unsubscribes every channel that no waiter uses any more instead of letting it linger;
  // completes when Redis has confirmed.
  template <class Token = boost::asio::deferred_t>
  auto flush_subscriptions(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto h) {
          start_flush(boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }

  client_stats stats() const;
  redisync::connection& connection() const noexcept;
  executor_type get_executor() const noexcept;
  config const& cfg() const noexcept;
  std::shared_ptr<detail::client_core> const& core() const noexcept { return core_; }

 private:
  void start_flush(boost::asio::any_completion_handler<void(boost::system::error_code)> h);

  std::shared_ptr<detail::client_core> core_;
};

}  // namespace redisync
