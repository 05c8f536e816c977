// Error codes of server replies: typed by the reply's first word, carrying its words, and equal
// to the plain code of that type whichever server text made them.

#include <redisync/error.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

using redisync::error;

BOOST_AUTO_TEST_SUITE(server_error_codes)

BOOST_AUTO_TEST_CASE(a_server_error_keeps_its_words_and_compares_as_its_type) {
  auto const ec = redisync::server_error_code("OOM command not allowed when used memory > 'maxmemory'.");
  BOOST_TEST((ec == error::out_of_memory));
  BOOST_TEST((ec != error::server_error));
  BOOST_TEST((ec.category() == redisync::error_category()));
  BOOST_TEST((ec == make_error_code(error::out_of_memory)));
  BOOST_TEST(ec.message() ==
             "the server is out of memory (server: OOM command not allowed when used memory > 'maxmemory'.)");
  // The same text again: the same words, and no new category.
  auto const again = redisync::server_error_code("OOM command not allowed when used memory > 'maxmemory'.");
  BOOST_TEST((&again.category() == &ec.category()));
}

BOOST_AUTO_TEST_CASE(an_unknown_prefix_is_a_server_error_with_its_words) {
  auto const ec = redisync::server_error_code("ERR unknown command 'FOO', with args beginning with: ");
  BOOST_TEST((ec == error::server_error));
  BOOST_TEST(ec.message().find("ERR unknown command 'FOO'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(texts_past_the_bound_still_give_their_type) {
  // A server that makes a new text per call (data in its messages) cannot grow memory for ever.
  boost::system::error_code last;
  for (int i = 0; i < 1000; ++i) last = redisync::server_error_code("WRONGTYPE number " + std::to_string(i));
  BOOST_TEST((last == error::wrong_type));
  BOOST_TEST(!last.message().empty());
}

BOOST_AUTO_TEST_SUITE_END()
