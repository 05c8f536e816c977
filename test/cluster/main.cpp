#define BOOST_TEST_MODULE redisync cluster and sentinel tests
#include <boost/test/unit_test.hpp>
#include "support/failed_cases_report.hpp"
