// The demo's fault sections: 3. a holder's process is killed and its lock comes back with its
// lease; 4. a holder is paused past its lease, another takes over, and the paused one's fenced
// write is refused. Both are drawn as one timeline (demo_timeline).

#include "cli/lab/demo/demo_faults.hpp"

#include "cli/lab/demo/demo_children.hpp"
#include "cli/lab/demo/demo_timeline.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <sstream>

#include <sys/wait.h>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

class fault_run {
 public:
  fault_run(client& c, demo_report& report, std::string url, std::string prefix)
      : client_{c}, report_{report}, url_{std::move(url)}, prefix_{std::move(prefix)} {}

  asio::awaitable<void> run() {
    co_await crashed_holder();
    co_await paused_holder();
    say("   a picture of sections 3 and 4 (redisync timeline): {}",
        timeline_.draw("redisync demo: a holder killed (3), a holder paused past its lease (4)"));
  }

 private:
  template <class... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    report_.say(f, std::forward<Args>(args)...);
  }
  asio::awaitable<resp::value> cmd(resp::request req) { co_return co_await command(client_, std::move(req)); }

  asio::awaitable<bool> wait_until_locked(std::string const& name) {
    auto const locked = [&]() -> asio::awaitable<bool> {
      resp::request req;
      req.push("EXISTS", name);
      co_return (co_await cmd(std::move(req))).integer() == 1;
    };
    co_return co_await poll_until(locked, 10s, 5ms);
  }

  // Releases `h` of `me`, logged for the picture.
  asio::awaitable<void> release_logged(owner const& me, held& h) {
    timeline_.releasing(me.id(), h);
    auto const token = h.token();
    co_await h.release(asio::use_awaitable);
    timeline_.released(me.id(), token);
  }

  // Waits until the process writing `history` has logged that it holds its lock: a pause before
  // then could land while the grant's reply is on its way, which the holder would then take as too
  // late (its lease over) and ask again behind the next holder.
  asio::awaitable<bool> wait_until_holder_knows(std::filesystem::path const& history) {
    auto const knows = [&]() -> asio::awaitable<bool> {
      std::ifstream in{history};
      std::string const text{std::istreambuf_iterator<char>{in}, {}};
      co_return text.find("\"event\":\"acquired\"") != std::string::npos;
    };
    co_return co_await poll_until(knows, 10s, 5ms);
  }

  // 3. The holder's process dies; its lease runs out and another owner gets the lock.
  asio::awaitable<void> crashed_holder() {
    auto const name = prefix_ + "crash";
    constexpr auto lease = 1000ms;
    say("3. a separate process takes {} with a {} ms lease and is killed while holding it", name,
        lease.count());
    auto const out = temp_file("crash.json");
    pid_t const child = spawn_stress(url_,
                                     {"--lock", name, "--iterations", "1", "--hold-ms", "60000", "--lease-ms",
                                      std::to_string(lease.count()), "--history", timeline_.child_history("crash")},
                                     out);
    bool const locked = co_await wait_until_locked(name);
    timeline_.signal(child, SIGKILL, "SIGKILL");
    ::waitpid(child, nullptr, 0);
    auto const killed = clock_type::now();
    say("   holder pid {} killed (SIGKILL); waiting for the lock", child);
    auto const me = client_.new_owner();
    timeline_.waits(me.id());
    auto h = co_await me.lock(name).try_acquire(lease + 2s, asio::use_awaitable);
    if (h) timeline_.acquired(me.id(), *h);
    auto const after = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - killed);
    if (h) co_await release_logged(me, *h);
    std::filesystem::remove(out);
    report_.record("a killed holder's lock expires", locked && h && after <= lease + 250ms,
           fmt::format("acquired {} ms after the kill (lease {} ms)", after.count(), lease.count()));
  }

  // 4. The holder is paused past its lease: another owner takes over and writes; the paused one
  //    resumes, its fenced write is rejected and it reports the loss.
  asio::awaitable<void> paused_holder() {
    auto const name = prefix_ + "paused";
    auto const fence = prefix_ + "fence";
    auto const value = prefix_ + "fenced-value";
    constexpr auto lease = 800ms;
    say("4. a separate process takes {} ({} ms lease), reads, and is paused (SIGSTOP) before it writes",
        name, lease.count());
    auto const out = temp_file("pause.json");
    auto const history = timeline_.child_history("pause");
    pid_t const child = spawn_stress(url_, {"--lock", name, "--iterations", "1", "--hold-ms", "1500", "--lease-ms",
                                      std::to_string(lease.count()), "--fence-key", fence, "--counter", value,
                                      "--history", history},
                                     out);
    bool const locked = co_await wait_until_holder_knows(history);
    timeline_.signal(child, SIGSTOP, "SIGSTOP");
    say("   holder pid {} paused; this process waits for the lock", child);
    auto const me = client_.new_owner();
    timeline_.waits(me.id());
    auto h = co_await me.lock(name).try_acquire(lease + 2s, asio::use_awaitable);
    if (h) timeline_.acquired(me.id(), *h);
    bool accepted = false;
    std::uint64_t token = 0;
    if (h) {
      token = h->token();
      resp::request get;
      get.push("GET", value);
      auto const before = co_await cmd(std::move(get));
      redisync::fenced_write w{.fence_key = fence, .key = value, .value = "written-by-the-new-holder",
                               .token = token, .expected = std::string{before.text()}};
      auto [ec, written] = co_await client_.fenced_set(std::move(w), asio::as_tuple(asio::use_awaitable));
      accepted = !ec && written;
      timeline_.wrote(me.id(), token, accepted);
      say("   new holder got token {}; its fenced write was {}", token, accepted ? "accepted" : "rejected");
    }
    timeline_.signal(child, SIGCONT, "SIGCONT");
    say("   paused holder resumed (SIGCONT)");
    int status = 0;
    auto const ex = co_await asio::this_coro::executor;
    auto const give_up = clock_type::now() + 30s;
    while (::waitpid(child, &status, WNOHANG) == 0) {
      if (clock_type::now() > give_up) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        break;
      }
      asio::steady_timer pause{ex, 10ms};
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (h) co_await release_logged(me, *h);
    std::ifstream in{out};
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(out);
    std::int64_t rejected = 0, lost = 0;
    try {
      auto const summary = json::parse(text.str()).as_object();
      rejected = summary.at("rejected").as_int64();
      lost = summary.at("lost").as_int64();
    } catch (std::exception const&) {
    }
    resp::request get;
    get.push("GET", value);
    auto const final_value = co_await cmd(std::move(get));
    bool const kept = final_value.text() == "written-by-the-new-holder";
    report_.record("a paused holder is fenced off", locked && accepted && rejected == 1 && lost == 1 && kept,
           fmt::format("stale write rejected: {}, loss reported: {}, value kept: {}", rejected == 1,
                       lost == 1, kept));
    resp::request cleanup;
    cleanup.push("DEL", fence, value);
    co_await cmd(std::move(cleanup));
  }


  client& client_;
  demo_report& report_;
  std::string url_;
  std::string prefix_;
  demo_timeline timeline_;
};

}  // namespace

asio::awaitable<void> fault_sections(client& c, demo_report& report, std::string const& url,
                                     std::string const& prefix) {
  fault_run run{c, report, url, prefix};
  co_await run.run();
}

}  // namespace redisync::cli
