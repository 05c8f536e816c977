#pragma once

// Small pieces the read-write lock's integration tests share.

#include "support/lock_fixture.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace redisync::test {

inline std::int64_t pttl(redisync::process::redis_server const& redis, std::string const& key) {
  return redis.command({"PTTL", key}).integer();
}

// A waiting acquire gets the lock within 3 s, and lets it go.
inline boost::asio::awaitable<void> gets_it_then_releases(background_acquire& waiting) {
  BOOST_TEST_REQUIRE(co_await waiting.wait(std::chrono::seconds{3}));
  BOOST_TEST_REQUIRE(waiting.result().has_value());
  co_await waiting.result()->release(boost::asio::use_awaitable);
}

// Until `n` writers of lock `name` have marked themselves as waiting (within 5 s).
inline boost::asio::awaitable<void> wait_for_marks(redisync::process::redis_server const& redis,
                                                   std::string const& name, std::int64_t n) {
  auto const marked = [&] {
    return redis.command({"ZCARD", "redisync_rwlock_writers:{" + name + "}"}).integer() == n;
  };
  co_await wait_until(marked, std::chrono::seconds{5});
}

}  // namespace redisync::test
