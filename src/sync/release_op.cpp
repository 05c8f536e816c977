#include "sync/release_op.hpp"

#include "script/runner.hpp"

#include <algorithm>

namespace redisync::detail::sync {

using io::error_code;

release_op::release_op(std::shared_ptr<wait_host> host, params p) : host_{std::move(host)}, p_{std::move(p)} {}

void release_op::send() {
  auto out = call(retry_, reloads_.by_digest());
  sent_ = host_->now();
  auto on_reply = [self = shared_from_this()](error_code ec, io::response replies) {
    self->on_reply(ec, std::move(replies));
  };
  host_->send(release_script(), p_.slot, std::move(out), {}, std::move(on_reply));
}

void release_op::on_reply(error_code ec, io::response replies) {
  answered();
  if (reloads_.must_reload(ec, replies)) {
    host_->when_loaded(release_script(), p_.slot, [self = shared_from_this()](error_code lec) {
      if (!lec) return self->send();
      self->call_failed();
      self->fail(lec);
    });
    return;
  }
  if (!ec) {
    if (replies.size() != 1) {
      ec = error::unexpected_reply;
    } else if (replies[0].is_error()) {
      ec = server_error_code(replies[0].text());
    } else if (!read(replies[0])) {
      // Like a lost connection; a server that keeps sending them gets the error after a few tries.
      ec = --unreadable_left_ > 0 ? error::ambiguous : error::unexpected_reply;
    }
  }
  if (ec == error::ambiguous && may_repeat()) {
    retry_ = true;
    return send();
  }
  if (ec && ec != error::ambiguous && ask_less()) return send();
  if (ec) {
    call_failed();
    return fail(ec);
  }
  if (retry_) host_->emit(event_kind::outcome_resolved, event_level::info, p_.name, p_.owner, {}, "release");
  succeeded();
}

void release_op::fail(error_code ec) {
  bool const go_on = goes_on_in_background();
  if (!background_) {
    complete(ec);
    if (!go_on) return;
    host_->emit(event_kind::release_failed, event_level::warning, p_.name, p_.owner, ec, {});
    background_ = true;
  }
  if (go_on) retry_later();
}

// A refused release is sent again, in its plain form, until it goes through or the hold ends.
void release_op::retry_later() {
  retry_ = false;
  unreadable_left_ = 3;
  if (!alarm_) {
    alarm_ = host_->make_alarm([this] {
      if (goes_on_in_background()) send();
    });
  }
  alarm_->at(host_->now() + delay_, shared_from_this());
  delay_ = std::min(delay_ * 2, std::chrono::milliseconds{1000});
}

}  // namespace redisync::detail::sync
