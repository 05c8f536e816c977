#pragma once

// Names the failed test cases just before a test binary's summary: a CI log that keeps only
// its tail still says which cases failed, not just how many.

#include <boost/test/framework.hpp>
#include <boost/test/tree/observer.hpp>
#include <boost/test/unit_test_suite.hpp>

#include <iostream>
#include <set>
#include <string>

namespace redisync::test {

class failed_cases_report : public boost::unit_test::test_observer {
 public:
  failed_cases_report() { boost::unit_test::framework::register_observer(*this); }
  failed_cases_report(failed_cases_report const&) = delete;
  failed_cases_report& operator=(failed_cases_report const&) = delete;

  ~failed_cases_report() override {
    boost::unit_test::framework::deregister_observer(*this);
    for (auto const& name : failed_) std::cerr << "failed test case: " << name << '\n';
  }

  void assertion_result(boost::unit_test::assertion_result result) override {
    if (result == boost::unit_test::AR_FAILED) note_current();
  }
  void exception_caught(boost::execution_exception const&) override { note_current(); }
  void test_unit_aborted(boost::unit_test::test_unit const& unit) override { failed_.insert(unit.full_name()); }

 private:
  void note_current() {
    if (boost::unit_test::framework::test_in_progress()) {
      failed_.insert(boost::unit_test::framework::current_test_case().full_name());
    }
  }

  std::set<std::string> failed_;
};

BOOST_TEST_GLOBAL_FIXTURE(failed_cases_report);

}  // namespace redisync::test
