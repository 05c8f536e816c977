// The workers of `redisync stress --kind latch`: a barrier across processes. Iteration i uses the
// latch `<lock>:<i>`, set to --permits N if nobody set it; every worker counts it down once and waits
// (a minute at most) until it opens, which happens when the N-th count-down of all processes comes.
// The history has `counted_down` and `opened` (with the wait in ms) per worker and iteration, so
// that the spread of the wake-ups across processes can be read from it.

#include "cli/lab/stress/stress.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync::cli {

namespace asio = boost::asio;
using boost::system::error_code;

asio::awaitable<void> latch_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                   error_report& report) {
  auto const me = c.new_owner();
  for (int i = 0; i < o.iterations; ++i) {
    auto const l = c.latch(fmt::format("{}:{}", o.lock, i));
    auto [sec, set] = co_await l.try_set_count(o.permits, asio::as_tuple(asio::use_awaitable));
    auto [dec, left] = co_await l.count_down(asio::as_tuple(asio::use_awaitable));
    if (sec || dec) {
      ++t.errors;
      report.add("count down", sec ? sec : dec);
      log.write("error", me.id(), 0, {{"detail", (sec ? sec : dec).message()}});
      continue;
    }
    log.write("counted_down", me.id(), 0, {{"latch", l.name()}, {"left", left}});
    auto const since = monotonic_ns();
    auto [wec, open] = co_await l.wait(std::chrono::minutes{1}, asio::as_tuple(asio::use_awaitable));
    if (wec || !open) {
      ++t.errors;
      report.add("wait", wec ? wec : make_error_code(error::timeout));
      log.write("error", me.id(), 0, {{"latch", l.name()}, {"detail", wec ? wec.message() : "still closed after a minute"}});
      continue;
    }
    ++t.acquired;
    log.write("opened", me.id(), 0, {{"latch", l.name()}, {"waited_ms", double(monotonic_ns() - since) / 1e6}});
  }
}

}  // namespace redisync::cli
