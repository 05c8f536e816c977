#pragma once

// Hands the application's completions out of the connections' strand, so that the caller's code
// never runs inside it (a busy or blocking continuation would stall the connection, the watchdog
// and every other caller), without a hop per completion where one can be shared: when the reader
// leaves the strand anyway (polling for a reply that is due), the completions of the replies it
// just read ride along. It queues the reader's next step, runs the first completion and gives each
// other completion a hop of its own, so that a pool's idle threads take them in parallel and a
// slow one holds up no one else.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/dispatch.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace redisync::detail::io {

class delivery : public std::enable_shared_from_this<delivery> {
 public:
  using call = boost::asio::any_completion_handler<void()>;

  // `outside`: the executor under the strand; `uncork`: writes the requests that wait, from any
  // thread (see corked()).
  delivery(boost::asio::any_io_executor outside, std::function<void()> uncork)
      : outside_{std::move(outside)}, uncork_{std::move(uncork)} {}

  // On the strand: `c` runs outside it, after the calls added before it.
  void add(call c);

  // On the strand, while the reader handles replies: their completions wait for its decision.
  void hold() noexcept { held_ = true; }
  // The reader goes to sleep instead of leaving the strand: what waits gets a hop of its own.
  void release_hold();
  // The reader leaves the strand now: `resume` (the reader's continuation, bound to the strand)
  // is queued, and the completions that wait run.
  void leave_with(call resume);

  // Whether a completion handed out may still make a request: one is queued or running, or one
  // has returned since the last look (its request may be on its way to the strand). Strand only.
  bool request_expected();
  // From inside a completion: at least two others wait to run besides the caller's own, enough
  // for their requests to be worth gathering (a release's own completion and the waiter it handed
  // the lock to are not: the new holder's request goes out at once).
  bool others_waiting() const noexcept;

  // The requests that a completion makes on its way back in (hop_in) wait until it returns, or
  // until anything else writes: the calls one task makes between two awaits go out together, as
  // one write and merged script calls.
  bool completion_runs_here() const noexcept { return running_ == this; }
  void begin_cork() noexcept { corking_ = this; }
  void end_cork() noexcept { corking_ = nullptr; }
  bool corking_here() const noexcept { return corking_ == this; }
  // On the strand, for a request just queued: whether it waits for the completion to return.
  bool corked() noexcept {
    if (corking_ != this) return false;
    corked_ = true;
    return true;
  }

 private:
  void schedule();                  // with the mutex held
  void hop_out(call resume);          // outside the strand: the reader's next step and what waits
  void step(call resume);             // runs a reader's next step; continues the leave_with()s in it
  void run(std::vector<call> calls);  // outside the strand
  void run_one(call& c);

  boost::asio::any_io_executor outside_;
  std::function<void()> uncork_;
  std::mutex mutex_;
  std::vector<call> waiting_;
  bool hop_pending_ = false;  // a hop is on its way that takes what waits
  bool held_ = false;         // strand only
  std::atomic<std::uint64_t> added_{0};
  std::atomic<std::uint64_t> finished_{0};
  std::uint64_t finished_seen_ = 0;  // strand only
  // The reader's step that runs on this thread, inside step(): its leave_with() is left to it.
  static thread_local delivery* stepping_;
  // The continuations of those leave_with()s, kept by the step on its own stack: the readers of a
  // group's members share this delivery, and their steps may run on several threads at once. One
  // in the common case; more when another member's reader runs and leaves inside the same step.
  struct leaving_set {
    call first;
    std::vector<call> more;
  };
  static thread_local leaving_set* leaving_;
  static thread_local delivery* running_;  // whose completion runs on this thread
  static thread_local delivery* corking_;  // whose completion's own hop runs on this thread
  static thread_local bool corked_;        // a request of the running completion waits
};

// The way back in: runs `f` on `strand` as an arrival of work that may make requests
// (io::connection::begin_arrival; `target` counts it): at once if the strand is idle and no other
// completion waits to run (a lone task's next call goes out without a hop), else queued behind
// them, so that the requests of the tasks that a burst of replies resumed go out together.
template <class Target, class F>
void hop_in(std::shared_ptr<Target> target, boost::asio::any_io_executor const& strand, delivery& d, F f) {
  target->begin_arrival();
  auto arrive = [target = std::move(target), f = std::move(f)]() mutable {
    f();
    target->end_arrival();
  };
  if (d.others_waiting()) return boost::asio::defer(strand, std::move(arrive));
  // Only a hop that runs here and now, inside the completion, is corked (a queued one runs later,
  // elsewhere).
  bool const cork = d.completion_runs_here();
  if (cork) d.begin_cork();
  boost::asio::dispatch(strand, std::move(arrive));
  if (cork) d.end_cork();
}

}  // namespace redisync::detail::io
