#pragma once

// What the connections of one client share: the strand all their state lives on, and the gate of
// their writes. A request made while writes are held (router::hold_writes) or while work that may
// make more is on its way to the strand (begin_arrival) waits, whichever node it is for; when the
// gate opens, every member writes what waits, so the requests a task makes together go out
// together, one write per node. One server's connection is a group of its own.

#include "io/delivery.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <variant>
#include <vector>

namespace redisync::detail::io {

// On an io_context's own executor the strand is made over that type, not over the type-erased
// executor: Asio 1.26's strand asks its inner executor whether it may block on every hand-off,
// and through any_io_executor that answer is a heap allocation.
using io_strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using any_strand = boost::asio::strand<boost::asio::any_io_executor>;
using strand_type = std::variant<io_strand, any_strand>;

class connection_group : public std::enable_shared_from_this<connection_group> {
 public:
  // A new strand over `ex`.
  static std::shared_ptr<connection_group> make(boost::asio::any_io_executor ex);

  boost::asio::any_io_executor const& executor() const noexcept { return executor_; }
  boost::asio::any_io_executor const& io_executor() const noexcept { return io_executor_; }
  bool on_strand() const noexcept {
    return std::visit([](auto const& s) { return s.running_in_this_thread(); }, strand_);
  }

  // The delivery of the application's completions, shared by every member's reader: whichever
  // node a reply comes from, its completion leaves the strand with that reader when it polls.
  // The gate waits for the requests of a completion that runs (delivery::corked); uncorking writes
  // every member.
  std::shared_ptr<delivery> const& completions() const noexcept { return completions_; }

  // Strand only (or before anything runs): `write` writes what a member has queued, if it can.
  void join(std::function<void()> write) { members_.push_back(std::move(write)); }

  // On the strand: requests made until the matching release_writes() (and until the arrivals on
  // their way, begin_arrival()) wait, and then go out in one write per member, where adjacent
  // calls of one script merge into one command. Holds nest; priority requests (handshake, health
  // checks) and a read's flush of replies' requests do not wait.
  void hold_writes() noexcept { ++writes_held_; }
  void release_writes() {
    --writes_held_;
    write_unless_waiting();
  }
  std::size_t writes_held() const noexcept { return writes_held_; }
  // From any thread, before posting work to the strand that may make requests (the next request
  // of a task whose completion just ran): requests queued before it arrives wait for it, up to a
  // group, and go out together with its own in one write. end_arrival() on the strand, after it.
  void begin_arrival() noexcept { ++arrivals_; }
  void end_arrival() {
    if (--arrivals_ == 0 && !completions_->corking_here()) write_unless_waiting();
  }
  bool arriving() const noexcept { return arrivals_ > 0; }  // work is on its way to the strand
  // Every member writes, unless writes are held or work is on its way.
  void write_unless_waiting() {
    if (writes_held_ != 0 || arrivals_ != 0) return;
    for (auto const& write : members_) write();
  }

 private:
  explicit connection_group(boost::asio::any_io_executor ex);

  strand_type strand_;
  boost::asio::any_io_executor executor_;     // the strand, converted once
  boost::asio::any_io_executor io_executor_;  // the executor under it
  std::shared_ptr<delivery> completions_;
  std::vector<std::function<void()>> members_;
  std::size_t writes_held_ = 0;
  std::atomic<std::size_t> arrivals_{0};
};

}  // namespace redisync::detail::io
