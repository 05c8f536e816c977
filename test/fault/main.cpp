#define BOOST_TEST_MODULE redisync fault tests
#include <boost/test/unit_test.hpp>
#include "support/failed_cases_report.hpp"
