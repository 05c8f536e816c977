#define BOOST_TEST_MODULE redisync integration tests
#include <boost/test/unit_test.hpp>
#include "support/failed_cases_report.hpp"
