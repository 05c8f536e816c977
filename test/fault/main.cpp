#define BOOST_TEST_MODULE redisync fault tests
#include <boost/test/unit_test.hpp>
