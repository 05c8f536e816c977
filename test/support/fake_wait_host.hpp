#pragma once

// A host for the acquire and release loops without sockets or real time: calls are recorded and
// answered by the test, subscriptions are confirmed by the test, alarms ring when the test moves
// the fake clock past them.

#include "sync/acquire_op.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

namespace redisync::test {

namespace sync = redisync::detail::sync;
namespace io = redisync::detail::io;

class fake_wait_host final : public sync::wait_host, public std::enable_shared_from_this<fake_wait_host> {
 public:
  struct attempt {
    io::outgoing out;
    io::late_reply_handler late;
    boost::asio::any_completion_handler<void(io::error_code, io::response)> reply;
    boost::asio::cancellation_type cancelled = boost::asio::cancellation_type::none;
  };

  // A pending wake-up owns its operation, as a pending timer wait does: the host keeps the owners
  // of armed alarms, like an io_context keeps the handlers of pending waits.
  class fake_alarm final : public sync::alarm {
   public:
    fake_alarm(fake_wait_host& host, std::function<void()> ring) : host_{host}, ring_{std::move(ring)} {
      host_.alarms.push_back(this);
    }
    ~fake_alarm() override { std::erase(host_.alarms, this); }
    void at(sync::clock_type::time_point t, std::shared_ptr<void> owner) override {
      due_ = t;
      host_.owners[this] = std::move(owner);
    }
    void cancel() override {
      due_.reset();
      auto const keep = release();
    }
    std::optional<sync::clock_type::time_point> due() const { return due_; }
    void ring() {
      auto const keep = release();
      due_.reset();
      ring_();
    }

   private:
    std::shared_ptr<void> release() {
      auto it = host_.owners.find(this);
      if (it == host_.owners.end()) return nullptr;
      auto owner = std::move(it->second);
      host_.owners.erase(it);
      return owner;
    }
    fake_wait_host& host_;
    std::function<void()> ring_;
    std::optional<sync::clock_type::time_point> due_;
  };

  sync::clock_type::time_point now() const override { return clock; }
  io::error_code closed() const override { return is_stopped ? io::error_code{error::not_connected} : io::error_code{}; }
  std::chrono::milliseconds wait_poll_cap() const override { return std::chrono::seconds{30}; }
  std::chrono::milliseconds refusal_budget(io::error_code const& ec) const override {
    return ec == error::try_again || ec == error::loading ? std::chrono::seconds{10} : std::chrono::milliseconds{0};
  }
  sync::unsettled_keys& unsettled() override { return keys; }
  sync::waiter_queue& queue(std::string const& channel) override { return queues[channel]; }
  bool has_waiters(std::string const& channel) const override {
    auto it = queues.find(channel);
    return it != queues.end() && !it->second.empty();
  }
  void drop_queue_if_empty(std::string const& channel) override {
    if (auto it = queues.find(channel); it != queues.end() && it->second.empty()) queues.erase(it);
  }
  void count_waiter(int delta) override { waiters += delta; }
  void send(detail::script const&, detail::routing::slot_type, io::outgoing out, io::late_reply_handler late,
            boost::asio::any_completion_handler<void(io::error_code, io::response)> done) override {
    auto& a = attempts.emplace_back(attempt{std::move(out), std::move(late), std::move(done)});
    auto slot = boost::asio::get_associated_cancellation_slot(a.reply);
    if (slot.is_connected()) {
      auto const index = attempts.size() - 1;
      slot.assign([this, index](boost::asio::cancellation_type t) { attempts[index].cancelled |= t; });
    }
  }
  void when_loaded(detail::script const&, detail::routing::slot_type, std::function<void(io::error_code)> then) override {
    loads.push_back(std::move(then));
  }
  void subscribe(std::string const& channel, detail::routing::slot_type,
                 std::function<void(io::error_code)> confirmed) override {
    // A channel this client listens to already confirms at once, as the client's channels do.
    if (subscribed[channel]++ > 0 && confirm_at_once) return confirmed({});
    confirmations.push_back(std::move(confirmed));
  }
  void unsubscribe(std::string const& channel) override { --subscribed[channel]; }
  std::unique_ptr<sync::alarm> make_alarm(std::function<void()> ring) override {
    return std::make_unique<fake_alarm>(*this, std::move(ring));
  }
  void defer(std::function<void()> f) override { f(); }
  void emit(redisync::event_kind kind, redisync::event_level, std::string_view, std::string_view, io::error_code,
            std::string_view) const override {
    events.push_back(kind);
  }
  mutable std::vector<redisync::event_kind> events;
  redisync::detail::metrics::metrics_registry& metrics() override { return recorded; }
  redisync::detail::metrics::metrics_registry recorded{"", 0};

  // Answers the oldest unanswered attempt.
  void reply(io::error_code ec, io::response replies = {}) {
    BOOST_TEST_REQUIRE(answered < attempts.size(), "no attempt to answer");
    std::move(attempts[answered++].reply)(ec, std::move(replies));
  }
  std::size_t unanswered() const { return attempts.size() - answered; }
  void confirm_subscriptions(io::error_code ec = {}) {
    for (auto& c : std::exchange(confirmations, {})) c(ec);
  }
  // Moves the clock to `t` and rings every alarm due by then.
  void advance_to(sync::clock_type::time_point t) {
    clock = t;
    for (auto* a : std::vector<fake_alarm*>{alarms}) {
      if (std::find(alarms.begin(), alarms.end(), a) != alarms.end() && a->due() && *a->due() <= t) a->ring();
    }
  }
  // Drops everything pending, as a destroyed io_context does, so that the operations go.
  void drop_pending() {
    auto const pending_owners = std::exchange(owners, {});
    auto const pending_attempts = std::exchange(attempts, {});
    auto const pending_confirmations = std::exchange(confirmations, {});
    auto const pending_loads = std::exchange(loads, {});
  }
  std::optional<sync::clock_type::time_point> next_alarm() const {
    std::optional<sync::clock_type::time_point> next;
    for (auto* a : alarms) {
      if (a->due() && (!next || *a->due() < *next)) next = a->due();
    }
    return next;
  }

  sync::clock_type::time_point clock{std::chrono::seconds{1000}};
  bool is_stopped = false;
  sync::unsettled_keys keys;
  std::map<std::string, sync::waiter_queue> queues;
  int waiters = 0;
  std::deque<attempt> attempts;
  std::size_t answered = 0;
  std::vector<std::function<void(io::error_code)>> loads;
  std::map<std::string, int> subscribed;
  std::vector<std::function<void(io::error_code)>> confirmations;
  bool confirm_at_once = false;  // a second subscription to a channel is confirmed within the call
  std::vector<fake_alarm*> alarms;  // the ops own them
  std::map<fake_alarm*, std::shared_ptr<void>> owners;
};

}  // namespace redisync::test
