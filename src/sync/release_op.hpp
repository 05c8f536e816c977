#pragma once

// The release loop that every primitive shares, as one state machine: one call, completed from its
// reply in the common case; an outcome lost with the connection (or an unreadable reply, a few
// times) sends the call's idempotent form while the hold lasts; NOSCRIPT loads the script and sends
// the same call again; a call the server refuses may be made smaller by the primitive and sent
// again (a lock gives up its hand-off); otherwise the caller learns the error and, while the hold
// lasts and its level is on its way out, the release goes on in the background (50 ms, doubling to
// 1 s) until it goes through. The primitive supplies the call, the reading of its reply and what
// the release changes (the virtual functions below); the host (the client, or a fake in unit
// tests) supplies sending, script loads, alarms and the clock.

#include "sync/acquire_op.hpp"

#include <memory>
#include <string>

namespace redisync::detail::sync {

class release_op : public std::enable_shared_from_this<release_op> {
 public:
  struct params {
    std::string name;
    std::string owner;
    routing::slot_type slot = 0;
  };

  release_op(std::shared_ptr<wait_host> host, params p);
  virtual ~release_op() = default;
  release_op(release_op const&) = delete;
  release_op& operator=(release_op const&) = delete;

 protected:
  // Sends the call: the first, or again.
  void send();
  // The caller has its answer; the release goes on by itself.
  bool in_background() const noexcept { return background_; }
  clock_type::time_point sent() const noexcept { return sent_; }
  params const& args() const noexcept { return p_; }

  // ---- the primitive's part
  virtual script const& release_script() const = 0;
  // The call; `retry`: an earlier one's outcome was lost, so this one must not count twice.
  virtual io::outgoing call(bool retry, bool by_digest) = 0;
  // Reads a reply that is no error; false: unreadable (taken for a lost outcome, a few times).
  virtual bool read(resp::value const& reply) = 0;
  // Whether an outcome lost with the connection is asked again (the hold lasts, the client runs).
  virtual bool may_repeat() const = 0;
  // Whether, after the caller learned of a failure, the release goes on in the background.
  virtual bool goes_on_in_background() const = 0;
  // The server refused the call: true if the primitive asked for more than the release and now
  // asks for the release alone (the call goes again).
  virtual bool ask_less() { return false; }
  // Any reply of the call came.
  virtual void answered() {}
  // The call failed for good: what it set up beyond the release is undone.
  virtual void call_failed() {}
  // The reply read applies: the primitive changes its state and answers the caller (or, in the
  // background, says the release went through).
  virtual void succeeded() = 0;
  // The caller's answer to a failure.
  virtual void complete(io::error_code ec) = 0;

 private:
  void on_reply(io::error_code ec, io::response replies);
  void fail(io::error_code ec);
  void retry_later();

  std::shared_ptr<wait_host> host_;
  params p_;
  bool retry_ = false;
  bool background_ = false;
  int unreadable_left_ = 3;  // unreadable replies taken for lost outcomes
  script_reloads reloads_;
  std::chrono::milliseconds delay_{50};
  clock_type::time_point sent_{};
  std::unique_ptr<alarm> alarm_;
};

}  // namespace redisync::detail::sync
