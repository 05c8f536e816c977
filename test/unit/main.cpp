#define BOOST_TEST_MODULE redisync unit tests
#include <boost/test/unit_test.hpp>
