#define BOOST_TEST_MODULE redisync integration tests
#include <boost/test/unit_test.hpp>
