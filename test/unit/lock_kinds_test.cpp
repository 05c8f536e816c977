// The rows of the lock kinds on Redisson's lock hash (lock_protocol/kinds.hpp): each kind's folder
// defines its own, and facts_of finds it by the kind, with Redisson's channels and fields.

#include "primitives/lock_protocol/kinds.hpp"

#include <boost/test/unit_test.hpp>

#include <array>

namespace lp = redisync::detail::lock_protocol;
using redisync::lock_kind;

BOOST_AUTO_TEST_SUITE(lock_kinds)

BOOST_AUTO_TEST_CASE(each_kind_finds_its_own_row) {
  for (auto const kind : {lock_kind::reentrant, lock_kind::fair, lock_kind::read, lock_kind::write}) {
    BOOST_TEST((lp::facts_of(kind).kind == kind));
  }
}

BOOST_AUTO_TEST_CASE(the_rows_keep_redissons_channels_and_fields) {
  BOOST_TEST(lp::facts_of(lock_kind::reentrant).channel_of("a") == "redisson_lock__channel:{a}");
  BOOST_TEST(lp::facts_of(lock_kind::fair).channel_of("a") == "redisson_lock__channel:{a}");
  BOOST_TEST(lp::facts_of(lock_kind::read).channel_of("{a}x") == "redisson_rwlock:{a}x");
  BOOST_TEST(lp::facts_of(lock_kind::write).field_of("o:1") == "o:1:write");
  BOOST_TEST(lp::facts_of(lock_kind::read).field_of("o:1") == "o:1");
}

BOOST_AUTO_TEST_CASE(only_exclusive_kinds_join_a_multi_lock_and_only_reads_share_token_zero) {
  BOOST_TEST(lp::facts_of(lock_kind::read).multi_operation.empty());
  BOOST_TEST(!lp::facts_of(lock_kind::read).own_token);
  for (auto const kind : {lock_kind::reentrant, lock_kind::fair, lock_kind::write}) {
    BOOST_TEST(!lp::facts_of(kind).multi_operation.empty());
    BOOST_TEST(lp::facts_of(kind).own_token);
  }
}

BOOST_AUTO_TEST_SUITE_END()
