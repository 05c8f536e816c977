#include "io/delivery.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace redisync::detail::io {

namespace asio = boost::asio;

void delivery::add(call c) {
  ++added_;
  std::lock_guard const guard{mutex_};
  waiting_.push_back(std::move(c));
  if (!held_) schedule();
}

void delivery::release_hold() {
  held_ = false;
  std::lock_guard const guard{mutex_};
  if (!waiting_.empty()) schedule();
}

void delivery::schedule() {
  if (hop_pending_) return;
  hop_pending_ = true;
  asio::defer(outside_, [self = shared_from_this()] {
    std::vector<call> calls;
    {
      std::lock_guard const guard{self->mutex_};
      calls.swap(self->waiting_);
      self->hop_pending_ = false;
    }
    self->run(std::move(calls));
  });
}

thread_local delivery* delivery::stepping_ = nullptr;
thread_local delivery::leaving_set* delivery::leaving_ = nullptr;
thread_local delivery* delivery::running_ = nullptr;
thread_local delivery* delivery::corking_ = nullptr;
thread_local bool delivery::corked_ = false;

void delivery::leave_with(call resume) {
  held_ = false;
  {
    std::lock_guard const guard{mutex_};
    hop_pending_ = true;
  }
  if (stepping_ == this) {
    // Inside step(), which goes on with it when the strand lets go: no hop needed.
    // (Asio 1.26's move assignment of any_completion_handler recurses without end: swap.)
    if (!leaving_->first) {
      leaving_->first.swap(resume);
    } else {
      leaving_->more.push_back(std::move(resume));
    }
    return;
  }
  asio::defer(outside_, [self = shared_from_this(), resume = std::move(resume)]() mutable {
    self->hop_out(std::move(resume));
  });
}

void delivery::hop_out(call resume) {
  std::vector<call> calls;
  {
    std::lock_guard const guard{mutex_};
    calls.swap(waiting_);
    hop_pending_ = false;
  }
  // The reader's next step is posted first, for any thread to take at once (a deferred one would
  // wait for this handler to return), so that no completion holds it up however long it runs; on
  // one thread it runs after the first completion, whose next request meanwhile finds the strand
  // free and goes out at once.
  asio::post(outside_, [self = shared_from_this(), resume = std::move(resume)]() mutable {
    self->step(std::move(resume));
  });
  run(std::move(calls));
}

void delivery::step(call resume) {
  auto strand = asio::get_associated_executor(resume);
  leaving_set leaving;
  auto* const outer = std::exchange(stepping_, this);
  auto* const outer_leaving = std::exchange(leaving_, &leaving);
  asio::dispatch(strand, std::move(resume));
  stepping_ = outer;
  leaving_ = outer_leaving;
  // Only the first takes the completions that wait; the others just go on.
  if (leaving.first) hop_out(std::move(leaving.first));
  for (auto& r : leaving.more) hop_out(std::move(r));
}

// The others are posted before the first runs, for idle threads to take while it runs.
void delivery::run(std::vector<call> calls) {
  for (std::size_t i = 1; i < calls.size(); ++i) {
    asio::post(outside_, [self = shared_from_this(), c = std::move(calls[i])]() mutable { self->run_one(c); });
  }
  if (!calls.empty()) run_one(calls.front());
}

void delivery::run_one(call& c) {
  auto* const outer = std::exchange(running_, this);
  bool const outer_corked = std::exchange(corked_, false);
  std::move(c)();
  running_ = outer;
  if (std::exchange(corked_, outer_corked)) uncork_();
  ++finished_;
}

bool delivery::request_expected() {
  auto const finished = finished_.load();
  bool const returned = std::exchange(finished_seen_, finished) != finished;
  return returned || added_.load() != finished;
}

bool delivery::others_waiting() const noexcept {
  auto const finished = finished_.load();
  return added_.load() - finished > 2;
}

}  // namespace redisync::detail::io
