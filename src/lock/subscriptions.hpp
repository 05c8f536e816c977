#pragma once

// Pub/sub subscriptions shared by all waiters of a client: one SUBSCRIBE per channel however many
// waiters use it, counted by reference, and kept for a while after the last waiter leaves (the
// next contention on the same lock then costs no SUBSCRIBE/UNSUBSCRIBE pair), unless an unlock
// message arrives that nobody waits for.

#include <redisync/connection.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redisync::detail {

class subscriptions {
 public:
  subscriptions(connection& conn, std::chrono::milliseconds linger);

  // Takes a reference on `channel` and completes once Redis has confirmed the subscription (or
  // with the error that prevented it; the reference is held either way).
  boost::asio::awaitable<boost::system::error_code> acquire(std::string const& channel);
  // Drops a reference; the last one starts the linger period.
  void release(std::string const& channel);
  // A message came on `channel` that no waiter wanted: a lingering subscription would keep
  // costing one such message per unlock, so it is dropped now rather than at the linger's end.
  void drop_unwanted(std::string const& channel);
  // Unsubscribes every channel without references now; completes when Redis has confirmed.
  boost::asio::awaitable<boost::system::error_code> flush();
  // Ends lingering and wakes everyone waiting for a confirmation.
  void stop();

  // Channels subscribed or lingering; readable from any thread.
  std::size_t count() const noexcept { return count_; }

 private:
  enum class state : std::uint8_t { idle, subscribing, subscribed, unsubscribing };
  struct entry {
    explicit entry(boost::asio::any_io_executor ex) : linger{ex}, confirmed{ex} {}
    std::size_t refs = 0;
    state st = state::idle;
    std::uint64_t generation = 0;  // tells a stale (un)subscribe completion from the current one
    boost::system::error_code result;
    boost::asio::steady_timer linger;
    boost::asio::steady_timer confirmed;  // cancelled when a subscribe completes
  };

  void subscribe(std::string const& channel, std::shared_ptr<entry> const& e);
  void unsubscribe(std::string const& channel, std::shared_ptr<entry> const& e);
  void start_linger(std::string const& channel, std::shared_ptr<entry> const& e);

  connection& conn_;
  std::chrono::milliseconds linger_;
  bool stopped_ = false;
  std::unordered_map<std::string, std::shared_ptr<entry>> entries_;
  std::atomic<std::size_t> count_{0};
  void update_count() { count_ = entries_.size(); }
};

}  // namespace redisync::detail
