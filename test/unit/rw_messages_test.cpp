// What the read-write lock's client reads of the server's words: a grant message, which names the
// writer that a release gave the lock to, and a waiting writer's mark. Anything else is not one.

#include "primitives/rw_lock/protocol.hpp"

#include <boost/test/unit_test.hpp>

#include <string_view>

namespace rw = redisync::detail::rw_protocol;

BOOST_AUTO_TEST_SUITE(rw_messages)

BOOST_AUTO_TEST_CASE(a_grant_names_its_token_and_writer) {
  auto const g = rw::read_grant("grant 1732000000123456 c1:owner:7:write");
  BOOST_TEST_REQUIRE(g.has_value());
  BOOST_TEST(g->token == 1732000000123456u);
  BOOST_TEST(g->writer == "c1:owner:7:write");
}

BOOST_AUTO_TEST_CASE(redissons_messages_and_malformed_grants_are_no_grants) {
  for (std::string_view const text : {"0", "1", "", "grant", "grant ", "grant 12", "grant 12 ", "grant x1 a:write",
                                      "grant 12 reader", "grant -1 a:write", "grant 99999999999999999999 a:write",
                                      " grant 12 a:write"}) {
    BOOST_TEST(!rw::read_grant(text).has_value(), "'" << text << "'");
  }
}

BOOST_AUTO_TEST_CASE(a_mark_after_its_client_names_the_grants_lease_and_the_writer) {
  auto const m = rw::read_mark("2000:c1:owner:7:write");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->lease_ms == 2000);
  BOOST_TEST(m->writer == "c1:owner:7:write");
}

BOOST_AUTO_TEST_CASE(a_member_of_another_form_is_no_mark) {
  for (std::string_view const text : {"", "c1:owner:write", "2000:", "2000:reader", "x:a:write", ":a:write"}) {
    BOOST_TEST(!rw::read_mark(text).has_value(), "'" << text << "'");
  }
}

BOOST_AUTO_TEST_SUITE_END()
