#pragma once

// A private redis-server and a running client for lock tests, plus checks that a test left no lock
// keys and no subscriptions behind.

#include <redisync/client.hpp>

#include "testbed/redis_server.hpp"
#include "support/async_test.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace redisync::test {

// A client of `url` (any topology) that reconnects soon and lets go of channels soon.
inline config fast_config(std::string const& url) {
  auto cfg = config::from_url(url);
  cfg.reconnect_delay_min = std::chrono::milliseconds{10};
  cfg.reconnect_delay_max = std::chrono::milliseconds{100};
  cfg.subscription_linger = std::chrono::milliseconds{50};
  return cfg;
}

inline config fast_config(process::redis_server const& redis) { return fast_config(redis.url()); }

// One round trip on the client's connection: whatever it sent before has had its reply.
inline boost::asio::awaitable<void> round_trip(redisync::client& c) {
  redisync::resp::request ping;
  ping.push("PING");
  co_await c.exec(std::move(ping), boost::asio::use_awaitable);
}

// Runs a client for the length of a test body; stop() ends it and waits for run() to complete.
class running_client {
 public:
  running_client(asio::io_context& ctx, config cfg) : client_{ctx.get_executor(), std::move(cfg)}, done_{ctx.get_executor()} {
    client_.run([this](boost::system::error_code) { done_.notify(); });
  }
  redisync::client& operator*() { return client_; }
  redisync::client* operator->() { return &client_; }
  asio::awaitable<void> stop() {
    client_.stop();
    BOOST_TEST_REQUIRE(co_await done_.wait(std::chrono::seconds{10}));
  }

 private:
  redisync::client client_;
  event done_;
};

using client_body = std::function<asio::awaitable<void>(asio::io_context&, client&)>;

// An io_context with a client of `cfg` running on it, the body, then the client stopped and no
// work left behind (see run_async).
inline void run_client(config const& cfg, client_body body, std::chrono::seconds limit = std::chrono::seconds{60}) {
  run_async(
      [&](asio::io_context& ctx) -> asio::awaitable<void> {
        running_client c{ctx, cfg};
        co_await body(ctx, *c);
        co_await c.stop();
      },
      limit);
}

// A test case's private redis-server, and run(): run_client with a client of that server.
struct lock_env {
  process::redis_server redis;

  lock_env() = default;
  explicit lock_env(process::redis_options options) : redis{std::move(options)} {}

  using body_type = client_body;
  // `tune` changes the test configuration (fast_config) before the client is made.
  void run(body_type body, std::function<void(config&)> tune = {}, std::chrono::seconds limit = std::chrono::seconds{60}) {
    auto cfg = fast_config(redis);
    if (tune) tune(cfg);
    run_client(cfg, std::move(body), limit);
  }
};

// Keys other than fencing counters (which live on by design: a lock's, a semaphore's), clients' liveness keys (which
// expire a liveness period after their last fair waiter: a few seconds at most in any test) and the
// test's own data keys.
inline std::vector<std::string> lock_keys(process::redis_server const& redis,
                                          std::vector<std::string> const& allowed = {}) {
  std::vector<std::string> out;
  auto const keys = redis.command({"KEYS", "*"});
  for (auto const& k : keys.elements()) {
    std::string key{k.text()};
    if (key.starts_with("redisson_lock_token:") || key.starts_with("redisync_permits_token:")) continue;
    // A semaphore call's trace: kept a minute, so that a call whose outcome was lost is asked again.
    if (key.starts_with("redisync_sc_trace:") && redis.command({"PTTL", key}).integer() <= 60000) continue;
    if (key.starts_with("redisync_alive:")) {
      auto const pttl = redis.command({"PTTL", key}).integer();
      if (pttl == -2 || (pttl > 0 && pttl <= 5000)) continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    out.push_back(key);
  }
  return out;
}

inline std::int64_t subscribers_of(process::redis_server const& redis, std::string const& channel) {
  return redis.command({"PUBSUB", "NUMSUB", channel}).elements()[1].integer();
}

inline std::size_t subscribed_channels(process::redis_server const& redis) {
  return redis.command({"PUBSUB", "CHANNELS", "*"}).elements().size();
}

// The end state of every lock test: no lock keys besides the fencing counters and the test's own
// `allowed` data keys, and no channel subscribed.
inline void expect_nothing_left(process::redis_server const& redis,
                                std::vector<std::string> const& allowed = {}) {
  for (auto const& key : lock_keys(redis, allowed)) BOOST_TEST(false, "left behind: " << key);
  BOOST_TEST(subscribed_channels(redis) == 0u);
}

// Calls of one command since the server started (INFO commandstats).
inline std::int64_t command_calls(process::redis_server const& redis, std::string const& command) {
  std::string const stats{redis.command({"INFO", "commandstats"}).text()};
  auto const pos = stats.find("cmdstat_" + command + ":calls=");
  if (pos == std::string::npos) return 0;
  return std::stoll(stats.substr(pos + command.size() + 15));
}

inline constexpr std::array<lock_kind, 4> all_lock_kinds{lock_kind::reentrant, lock_kind::fair, lock_kind::read,
                                                         lock_kind::write};

// The handle of `kind` on `name` for `me`.
inline lock lock_of_kind(owner const& me, lock_kind kind, std::string const& name) {
  switch (kind) {
    case lock_kind::fair: return me.fair_lock(name);
    case lock_kind::read: return me.read_write_lock(name).read();
    case lock_kind::write: return me.read_write_lock(name).write();
    case lock_kind::reentrant: break;
  }
  return me.lock(name);
}

inline std::int64_t hget_count(process::redis_server const& redis, std::string const& name,
                               std::string const& owner) {
  auto const v = redis.command({"HGET", name, owner});
  std::int64_t n = 0;
  if (!v.is_null()) v.as_integer(n);
  return n;
}

// An acquire of a lock started in the background; `done` is notified once it completed.
class background_acquire {
 public:
  background_acquire(asio::io_context& ctx, lock l) : state_{std::make_shared<state>(ctx.get_executor())} {
    asio::co_spawn(ctx, run(state_, std::move(l)), asio::detached);
  }
  // The hold, once the acquire succeeded; error() tells why it did not.
  std::optional<held>& result() { return state_->result; }
  boost::system::error_code error() const { return state_->error; }
  asio::awaitable<bool> wait(std::chrono::milliseconds limit) { return state_->done.wait(limit); }

 private:
  struct state {
    explicit state(asio::any_io_executor ex) : done{std::move(ex)} {}
    std::optional<held> result;
    boost::system::error_code error;
    event done;
  };
  static asio::awaitable<void> run(std::shared_ptr<state> s, lock l) {
    auto [ec, h] = co_await l.acquire(asio::as_tuple(asio::use_awaitable));
    s->error = ec;
    if (!ec) s->result = std::move(h);
    s->done.notify();
  }
  std::shared_ptr<state> state_;
};

// The names every lock test uses: `using namespace redisync::test::lock_names;`.
namespace lock_names {
using boost::system::error_code;
using redisync::error;
using redisync::held;
using redisync::hold_status;
using redisync::process::redis_server;
using redisync::test::fast_config;
using redisync::test::lock_env;
using redisync::test::run_async;
using redisync::test::run_client;
using redisync::test::running_client;
using namespace std::chrono_literals;
inline constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
}  // namespace lock_names

}  // namespace redisync::test
