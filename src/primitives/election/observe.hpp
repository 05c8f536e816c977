#pragma once

// An observer's wait for the next change of leader: the core's acquire loop with nothing held (as a
// latch's wait), whose attempt is election_calls.lua's `next` after the last entry seen. Any
// message on the observers' channel wakes every observer of this client; without one, the first
// looks again every second, and a reconnect makes them all look: a change missed meanwhile is
// read from the log.

#include <redisync/election.hpp>

#include "sync/look_op.hpp"

namespace redisync::detail::election_protocol {

using next_signature = election_observer::next_signature;

struct next_args {
  std::string election;
  std::shared_ptr<std::string> seen;  // the id of the last entry delivered; '' before the first
  std::chrono::milliseconds bound{};
};

void start_next(std::shared_ptr<sync::client_core> core, next_args a,
                boost::asio::any_completion_handler<next_signature> h);

class observe_wait final : public sync::look_op {
 public:
  observe_wait(std::shared_ptr<sync::client_core> core, next_args a, pending_handler<next_signature> handler);

 private:
  io::error_code check_arguments() const override;
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void complete(io::error_code ec, bool found) override;

  next_args a_;
  std::string id_;  // of the change found
  leader_change change_;
  pending_handler<next_signature> handler_;
};

}  // namespace redisync::detail::election_protocol
