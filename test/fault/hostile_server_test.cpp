// A hostile server: a scripted RESP server answers lock, renewal, release and query calls with
// random error replies, replies of the wrong type, huge numbers, truncated frames, garbage, and
// hang-ups at random points. Over 10,000 exchanges, every operation must complete within its bound
// with success or a typed error, and nothing may crash or leak (run under ASan).

#include <redisync/redisync.hpp>

#include "support/async_test.hpp"
#include "support/fake_redis.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <optional>
#include <random>

namespace asio = boost::asio;
using boost::system::error_code;
using redisync::test::fake_redis;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t exchanges_wanted = 10000;

std::string bulk(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string{s} + "\r\n"; }

// The answers a script call may get: plausible ones, server errors, wrong types, huge numbers,
// garbage. A truncated copy of one of them, or a hang-up, is chosen separately.
std::vector<std::string> const script_answers{
    bulk("1700000000000001"), "*1\r\n:250\r\n", "*2\r\n" + bulk("1700000000000002") + ":2\r\n",
    ":0\r\n", ":1\r\n", ":2\r\n", ":-1\r\n", ":-2\r\n", "*2\r\n:0\r\n" + bulk("1700000000000003"),
    "*2\r\n:0\r\n-NOPERM no channel\r\n", "*3\r\n:1\r\n:0\r\n:1\r\n", "*1\r\n:1\r\n",
    "-NOSCRIPT No matching script\r\n", "-READONLY You can't write against a read only replica.\r\n",
    "-OOM command not allowed\r\n", "-NOPERM no permission\r\n", "-ERR something\r\n",
    "-BUSY Redis is busy\r\n", "-LOADING loading\r\n", "-WRONGTYPE wrong kind\r\n",
    "-TOKENLIMIT at its largest value\r\n", "+OK\r\n", "_\r\n", "#t\r\n", ",3.14\r\n",
    "%1\r\n+a\r\n:1\r\n", "~1\r\n:1\r\n", ":9223372036854775807\r\n", ":-9223372036854775808\r\n",
    bulk("99999999999999999999999"), bulk("-5"), bulk("not a token"), "(123456789012345678901234567890\r\n",
    "*2\r\n" + bulk("abc") + ":-7\r\n", "*2\r\n:0\r\n:0\r\n", "*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
    "*-1\r\n", "$-1\r\n", "*0\r\n", "?garbage\r\n",
};

std::vector<std::string> const query_answers{
    "+hash\r\n", "+none\r\n", "+string\r\n", ":500\r\n", ":-2\r\n", ":-1\r\n", bulk("3"), bulk("x"),
    "_\r\n", "-ERR nope\r\n", "-WRONGTYPE wrong kind\r\n", "*1\r\n:1\r\n", ":99999999999999999\r\n",
};

class hostile_script {
 public:
  explicit hostile_script(unsigned seed) : random_{seed} {}

  std::string answer(std::vector<std::string> const& command) {
    ++exchanges_;
    std::string const& name = command.empty() ? empty_ : command[0];
    if (name == "HELLO") return chance(5) ? fake_redis::hang_up() : fake_redis::hello_reply();
    if (name == "SUBSCRIBE" || name == "UNSUBSCRIBE") return subscription(command);
    if (chance(4)) return fake_redis::hang_up();
    auto const& menu = name == "EVALSHA" || name == "EVAL" ? script_answers : query_answers;
    std::string reply = menu[pick(menu.size())];
    if (name == "TYPE" && chance(50)) reply = "+hash\r\n";
    if (chance(4) && reply.size() > 1) {
      return reply.substr(0, 1 + pick(reply.size() - 1)) + fake_redis::hang_up();  // truncated
    }
    return reply;
  }

  std::size_t exchanges() const { return exchanges_; }

 private:
  std::string subscription(std::vector<std::string> const& command) {
    if (chance(5)) return fake_redis::hang_up();
    if (chance(5)) return "-NOPERM no channel\r\n";
    std::string out;
    std::string const kind = command[0] == "SUBSCRIBE" ? "subscribe" : "unsubscribe";
    for (std::size_t i = 1; i < command.size(); ++i) {
      out += ">3\r\n" + bulk(kind) + bulk(command[i]) + ":1\r\n";
      if (chance(10)) out += ">3\r\n" + bulk("message") + bulk(command[i]) + bulk("0");  // an unlock
    }
    return out;
  }

  bool chance(unsigned percent) { return pick(100) < percent; }
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>{0, n - 1}(random_); }

  std::mt19937 random_;
  std::size_t exchanges_ = 0;
  std::string const empty_;
};

unsigned seed_from_environment() {
  char const* text = std::getenv("REDISYNC_HOSTILE_SEED");
  return text != nullptr ? static_cast<unsigned>(std::strtoul(text, nullptr, 10)) : std::random_device{}();
}

// Success or one of ours: no socket error, exception or foreign code reaches the caller.
bool typed(error_code ec) {
  return !ec || ec.category() == redisync::error_category() || ec == asio::error::operation_aborted;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(hostile_server)

BOOST_AUTO_TEST_CASE(random_replies_hang_ups_and_truncated_frames_end_every_operation_typed_and_in_time) {
  unsigned const seed = seed_from_environment();
  BOOST_TEST_MESSAGE("seed " << seed << " (REDISYNC_HOSTILE_SEED repeats a run)");
  hostile_script script{seed};
  std::size_t operations = 0;
  redisync::test::run_async(
      [&](asio::io_context& ctx) -> asio::awaitable<void> {
        fake_redis server{ctx.get_executor(), [&](auto const& command) { return script.answer(command); }};
        auto cfg = redisync::config::from_url("redis://127.0.0.1:" + std::to_string(server.port()));
        cfg.reconnect_delay_min = 1ms;
        cfg.reconnect_delay_max = 20ms;
        cfg.watchdog_lease = 300ms;
        cfg.health_check_interval = 200ms;
        cfg.subscription_linger = 20ms;
        cfg.transient_retry_budget = 200ms;
        redisync::client c{ctx.get_executor(), cfg};
        c.start();
        std::mt19937 random{seed + 1};
        auto worker = [&](int id) -> asio::awaitable<void> {
          auto me = c.new_owner();
          while (script.exchanges() < exchanges_wanted) {
            auto lock = me.lock("hostile-" + std::to_string(id % 3));
            auto const wait = std::chrono::milliseconds{random() % 100};
            auto const start = std::chrono::steady_clock::now();
            auto bound = [&](std::chrono::milliseconds limit) {
              auto const took = std::chrono::steady_clock::now() - start;
              BOOST_TEST((took < limit), "an operation took "
                                             << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                                             << " ms (seed " << seed << ")");
            };
            ++operations;
            switch (random() % 4) {
              case 0: {
                auto [ec, h] = co_await lock.try_acquire(wait, asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(ec), ec.message());
                bound(wait + 5s);
                if (!h) break;
                auto const held_start = std::chrono::steady_clock::now();
                if (random() % 2 == 0) {
                  auto [rec] = co_await h->release(asio::as_tuple(asio::use_awaitable));
                  BOOST_TEST(typed(rec), rec.message());
                  BOOST_TEST((std::chrono::steady_clock::now() - held_start < 5s));
                }
                break;  // otherwise the guard goes and releases in the background
              }
              case 1: {
                auto [ec, h] = co_await lock.try_acquire(wait, 200ms, asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(ec), ec.message());
                bound(wait + 5s);
                if (h) {
                  auto [rec] = co_await lock.release(asio::as_tuple(asio::use_awaitable));
                  BOOST_TEST(typed(rec), rec.message());
                }
                break;
              }
              case 2: {
                auto [ec, locked] = co_await lock.is_locked(asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(ec), ec.message());
                auto [cec, count] = co_await lock.hold_count(asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(cec), cec.message());
                auto [lec, left] = co_await lock.remaining_lease(asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(lec), lec.message());
                bound(5s);
                break;
              }
              default: {
                auto [ec, was] = co_await lock.force_release(asio::as_tuple(asio::use_awaitable));
                BOOST_TEST(typed(ec), ec.message());
                bound(5s);
                break;
              }
            }
          }
        };
        int running = 8;
        redisync::test::event all_done{ctx.get_executor()};
        for (int i = 0; i < 8; ++i) {
          asio::co_spawn(ctx, worker(i), [&](std::exception_ptr e) {
            BOOST_TEST(!e, "a worker threw (seed " << seed << ")");
            if (--running == 0) all_done.notify();
          });
        }
        BOOST_TEST_REQUIRE(co_await all_done.wait(240s), "seed " << seed);
        c.stop();
        server.close();
      },
      std::chrono::seconds{300});
  BOOST_TEST_MESSAGE(script.exchanges() << " exchanges, " << operations << " operations");
  BOOST_TEST(script.exchanges() >= exchanges_wanted);
}

// A release that would hand the lock to a waiter of this client meets NOSCRIPT, and loading the
// script fails: the release reports the error, and the waiter chosen for the hand-off is given
// back to its queue, where its own wait bound ends it (it once waited for the hand-off for ever).
BOOST_AUTO_TEST_CASE(a_release_whose_script_cannot_be_loaded_leaves_its_hand_off_waiter_bounded) {
  bool granted = false;
  auto script = [&](std::vector<std::string> const& command) -> std::string {
    std::string const& name = command.empty() ? std::string{} : command[0];
    if (name == "HELLO") return fake_redis::hello_reply();
    if (name == "SUBSCRIBE") return ">3\r\n" + bulk("subscribe") + bulk(command.at(1)) + ":1\r\n";
    if (name == "SCRIPT") return "-ERR script loading refused\r\n";
    if (name != "EVALSHA" && name != "EVAL") return "+OK\r\n";
    std::size_t const keys = std::stoul(command.at(2));
    std::string const& op = command.at(3 + keys);
    if (op.starts_with("release")) return "-NOSCRIPT No matching script\r\n";
    if (op.starts_with("acquire") && !std::exchange(granted, true)) return bulk("1700000000000001");
    return "*1\r\n:30000\r\n";  // held by someone for 30 s more
  };
  redisync::test::run_async(
      [&](asio::io_context& ctx) -> asio::awaitable<void> {
        fake_redis server{ctx.get_executor(), script};
        auto cfg = redisync::config::from_url("redis://127.0.0.1:" + std::to_string(server.port()));
        redisync::client c{ctx.get_executor(), cfg};
        c.start();
        auto holder = c.new_owner(), waiter = c.new_owner();
        auto h = co_await holder.lock("handed").acquire(asio::use_awaitable);
        redisync::test::event waited{ctx.get_executor()};
        std::optional<std::chrono::steady_clock::duration> wait_took;
        auto wait = [&]() -> asio::awaitable<void> {
          auto const start = std::chrono::steady_clock::now();
          auto [ec, got] = co_await waiter.lock("handed").try_acquire(1s, asio::as_tuple(asio::use_awaitable));
          BOOST_TEST(typed(ec), ec.message());
          BOOST_TEST(!got.has_value());
          wait_took = std::chrono::steady_clock::now() - start;
          waited.notify();
        };
        asio::co_spawn(ctx, wait, asio::detached);
        auto asleep = [&] {
          auto const stats = c.metrics();
          return stats.waiters == 1 && stats.subscriptions == 1;
        };
        co_await redisync::test::wait_until(asleep, 5s);
        auto [rec] = co_await h.release(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(rec.failed(), "the release cannot have gone through");
        BOOST_TEST(typed(rec), rec.message());
        BOOST_TEST_REQUIRE(co_await waited.wait(10s), "the hand-off waiter never finished");
        BOOST_TEST((*wait_took < 5s));
        c.stop();
        server.close();
      },
      std::chrono::seconds{30});
}

// The connection drops after SCRIPT LOAD was sent, before its reply (a load is idempotent): the
// acquires waiting for the load are not failed as "may have run"; the load goes again once the
// client has reconnected, and they go on (three acquires once failed so under connection kills).
BOOST_AUTO_TEST_CASE(a_script_load_cut_off_by_a_dropped_connection_is_sent_again) {
  int loads = 0;
  bool loaded = false;
  auto script = [&](std::vector<std::string> const& command) -> std::string {
    std::string const& name = command.empty() ? std::string{} : command[0];
    if (name == "HELLO") return fake_redis::hello_reply();
    if (name == "SCRIPT") {
      if (++loads == 1) return fake_redis::hang_up();
      loaded = true;
      return bulk(std::string(40, '0'));
    }
    if (name != "EVALSHA" && name != "EVAL") return "+OK\r\n";
    if (name == "EVALSHA" && !loaded) return "-NOSCRIPT No matching script\r\n";
    return bulk("1700000000000001");  // granted, fencing token
  };
  redisync::test::run_async(
      [&](asio::io_context& ctx) -> asio::awaitable<void> {
        fake_redis server{ctx.get_executor(), script};
        auto cfg = redisync::config::from_url("redis://127.0.0.1:" + std::to_string(server.port()));
        cfg.reconnect_delay_min = 5ms;
        cfg.reconnect_delay_max = 20ms;
        redisync::client c{ctx.get_executor(), cfg};
        c.start();
        auto [ec, h] = co_await c.new_owner().lock("loaded").try_acquire(5s, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST(h.has_value());
        BOOST_TEST(loads == 2);
        c.stop();
        server.close();
      },
      std::chrono::seconds{30});
}

BOOST_AUTO_TEST_SUITE_END()
