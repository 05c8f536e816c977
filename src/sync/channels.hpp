#pragma once

// Pub/sub channels shared by all waiters of a client: one SUBSCRIBE per channel however many
// waiters use it, counted by reference, and kept for a while after the last waiter leaves (the
// next contention on the same lock then costs no SUBSCRIBE/UNSUBSCRIBE pair), unless messages keep
// arriving that nobody waits for. Addressed by slot, through the router.

#include "routing/router.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redisync::detail::sync {

// Keeps the client alive while something it started is pending.
using anchor_fn = std::function<std::shared_ptr<void>()>;

// What the channels need of their client: the strand they run on, and (un)subscribing channels of
// one slot. The client's is its router (router_subscription_io); unit tests confirm by hand.
class subscription_io {
 public:
  virtual ~subscription_io() = default;
  virtual boost::asio::any_io_executor strand() const = 0;
  virtual void subscribe(bool on, routing::slot_type slot, std::vector<std::string> channels,
                         boost::asio::any_completion_handler<void(io::error_code)> handler) = 0;
};

class router_subscription_io final : public subscription_io {
 public:
  explicit router_subscription_io(routing::router& r) : router_{r} {}
  boost::asio::any_io_executor strand() const override { return router_.group().executor(); }
  void subscribe(bool on, routing::slot_type slot, std::vector<std::string> channels,
                 boost::asio::any_completion_handler<void(io::error_code)> handler) override {
    router_.subscribe(on, slot, std::move(channels), std::move(handler));
  }

 private:
  routing::router& router_;
};

class channels {
 public:
  channels(subscription_io& io, std::chrono::milliseconds linger, anchor_fn anchor)
      : io_{io}, linger_{linger}, anchor_{std::move(anchor)} {}

  // Takes a reference on `channel` and calls `confirmed` once Redis has confirmed the subscription
  // (or with the error that prevented it; the reference is held either way).
  void acquire(std::string const& channel, routing::slot_type slot, std::function<void(io::error_code)> confirmed);
  // Drops a reference; the last one starts the linger period.
  void release(std::string const& channel);
  // A message came on `channel` that no waiter wanted. A lingering subscription costs one such
  // message per unlock, so after unwanted_messages_to_drop of them in a row it is dropped rather
  // than at the linger's end. Not at the first: where waiters come and go in rounds (readers that
  // all leave, then a writer), the lock's own unlock message finds the queue empty just before the
  // next round's waiters need the subscription again, and dropping it would cost each round an
  // UNSUBSCRIBE and a SUBSCRIBE, a round trip each, on the path to the lock.
  void drop_unwanted(std::string const& channel);
  static constexpr std::size_t unwanted_messages_to_drop = 16;
  // Unsubscribes every channel without references now; `done` when Redis has confirmed.
  void flush(std::function<void(io::error_code)> done);
  // Ends lingering and tells everyone waiting for a confirmation that there is none.
  void stop();

  // Channels subscribed or lingering; readable from any thread.
  std::size_t count() const noexcept { return count_; }

 private:
  enum class state : std::uint8_t { idle, subscribing, subscribed, unsubscribing };
  struct entry {
    explicit entry(boost::asio::any_io_executor ex) : linger{std::move(ex)} {}
    routing::slot_type slot = 0;
    std::size_t refs = 0;
    state st = state::idle;
    std::uint64_t generation = 0;  // tells a stale (un)subscribe completion from the current one
    std::size_t unwanted = 0;      // messages in a row that no waiter wanted
    io::error_code result;
    boost::asio::steady_timer linger;
    std::vector<std::function<void(io::error_code)>> confirmed;
  };

  void subscribe(std::string const& channel, std::shared_ptr<entry> const& e);
  void unsubscribe(std::string const& channel, std::shared_ptr<entry> const& e);
  void start_linger(std::string const& channel, std::shared_ptr<entry> const& e);
  void erase_if_unused(std::string const& channel, std::shared_ptr<entry> const& e);
  void update_count() { count_ = entries_.size(); }

  subscription_io& io_;
  std::chrono::milliseconds linger_;
  anchor_fn anchor_;
  bool stopped_ = false;
  std::unordered_map<std::string, std::shared_ptr<entry>> entries_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace redisync::detail::sync
