// The life of a connection: connect, handshake, health checks, reconnect with backoff, and the
// story of each attempt told to the event sink.

#include "io/connection_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/core.h>

namespace redisync::detail::io {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto tuple_token = asio::as_tuple(asio::deferred);

asio::awaitable<error_code> sleep_for(std::chrono::milliseconds d, error_code result) {
  asio::steady_timer timer{co_await asio::this_coro::executor, d};
  co_await timer.async_wait(tuple_token);
  co_return result;
}

}  // namespace

asio::awaitable<error_code> connection::impl::resolve_target(std::string& failure) {
  if (!node_.resolve) co_return error_code{};
  auto [ec, host, port] = co_await node_.resolve();
  if (ec) {
    failure = std::move(host);
  } else {
    cfg_.host = std::move(host);
    cfg_.port = port;
  }
  co_return ec;
}

asio::awaitable<void> connection::impl::run_loop() {
  auto self = shared_from_this();
  backoff delays{cfg_.reconnect_delay_min, cfg_.reconnect_delay_max};
  error_code final_ec;
  while (!stopping_) {
    ++connect_attempts_;
    std::string failure;
    error_code ec = co_await resolve_target(failure);
    std::string const where = cfg_.endpoint();
    {
      std::lock_guard const lock{failure_mutex_};
      address_ = where;
    }
    bool timed_out = false;
    if (!ec) {
      emit(event_kind::connecting, event_level::debug, {}, where);
      auto connected = co_await (stream_.connect(cfg_) || sleep_for(cfg_.connect_timeout, asio::error::timed_out));
      timed_out = connected.index() == 1;
      ec = std::visit([](error_code e) { return e; }, connected);
    }
    std::string_view const step = stream_.step();
    bool established = false;
    if (!failure.empty()) {
      // The resolver's own words.
    } else if (timed_out) {
      failure = fmt::format("{}: {}: no answer within {} ms{}", where, step, cfg_.connect_timeout.count(),
                            hint(step, ec));
    } else if (ec) {
      failure = fmt::format("{}: {}: {}{}", where, step, ec.message(), hint(step, ec));
    } else if (!stopping_) {
      health_ = health_check{cfg_.health_check_interval, clock_type::now()};
      session_open_ = true;
      handshake_failure_.clear();
      auto ended = co_await (reader() || supervisor(delays));
      ec = write_error_ ? write_error_ : std::visit([](error_code e) { return e; }, ended);
      established = ready_;
      if (!established) {
        failure = fmt::format("{}: handshake: {}", where,
                              handshake_failure_.empty() ? ec.message() + hint("handshake", ec) : handshake_failure_);
      }
    }
    teardown();
    if (stopping_) {
      final_ec = asio::error::operation_aborted;
      break;
    }
    bool const fatal = ec == error::auth_failed || ec == error::handshake_failed;
    if (events_.down) events_.down();
    if (auto why = std::exchange(reconnect_reason_, {}); !why.empty()) {
      // Closed on purpose (the master changed), whether or not its handshake had completed.
      emit(event_kind::disconnected, event_level::warning, error::connection_closed, fmt::format("{}: {}", where, why));
    } else if (established) {
      emit(event_kind::disconnected, event_level::warning, ec, where);
    } else {
      set_last_failure(failure);
      mux_.on_connect_failed(clock_type::now());
      arm_timer();
      emit(event_kind::connect_failed, fatal ? event_level::error : event_level::warning, ec, failure);
    }
    if (fatal) {
      final_ec = ec;
      break;
    }
    auto const delay = delays.next();
    emit(event_kind::reconnect_scheduled, event_level::info, {}, fmt::format("{} in {} ms", where, delay.count()));
    backoff_timer_.expires_after(delay);
    co_await backoff_timer_.async_wait(tuple_token);
  }
  stop_for_good(final_ec);
}

// A likely reason for a failure that says little by itself: a certificate refused either way, TLS
// spoken to a plain port, or plain text to a TLS port.
std::string connection::impl::hint(std::string_view step, error_code ec) const {
  auto const said = ec.message();
  if (said.find("certificate required") != std::string::npos) {
    return cfg_.tls_cert_file.empty()
               ? " (the server asks for a client certificate: set tls_cert_file and tls_key_file)"
               : " (the server took none: is tls_cert_file for this server?)";
  }
  if (said.find("unknown ca") != std::string::npos || said.find("bad certificate") != std::string::npos) {
    return " (the server refused the client certificate: is it signed by a CA the server trusts?)";
  }
  if (said.find("certificate verify failed") != std::string::npos) {
    return cfg_.tls_ca_file.empty()
               ? " (the server's certificate is not signed by a CA of this system: set tls_ca_file)"
               : " (the server's certificate is not signed by a CA in tls_ca_file, or names another host)";
  }
  if (step == "TLS handshake") {
    bool const not_tls = ec == asio::error::timed_out || ec == asio::error::eof ||
                         said.find("wrong version number") != std::string::npos ||
                         said.find("packet length too long") != std::string::npos;
    return not_tls ? " (is it a plain port? redis:// does not use TLS)" : "";
  }
  bool const ended_by_server = ec == asio::error::eof || ec == asio::error::connection_reset ||
                               ec == error::ambiguous || ec == asio::error::operation_aborted;
  if (!cfg_.tls && step == "handshake" && ended_by_server) {
    return " (the server closed the connection; if it expects TLS, use rediss://)";
  }
  if (cfg_.tls && step == "handshake" && ended_by_server) {
    // Under TLS 1.3 a server checks the client certificate after the TLS handshake; its alert is
    // lost when its reset comes first.
    return cfg_.tls_cert_file.empty()
               ? " (the server ended the connection after the TLS handshake: does it ask for a client "
                 "certificate? set tls_cert_file and tls_key_file)"
               : " (the server ended the connection after the TLS handshake: does it refuse the client "
                 "certificate? is it signed by a CA the server trusts?)";
  }
  return {};
}

void connection::impl::emit(event_kind kind, event_level level, error_code ec, std::string_view detail) const {
  if (events_.event) events_.event(kind, level, ec, detail);
}

void connection::impl::set_last_failure(std::string text) {
  std::lock_guard const lock{failure_mutex_};
  last_failure_ = std::move(text);
}

void connection::impl::stop_for_good(error_code ec) {
  run_state_ = run_state::stopped;
  mux_.stop(ec);
  retry_timer_.cancel();
  for (auto& h : std::exchange(resubscribe_waiters_, {})) h.complete(ec);
  run_handler_.complete(ec);
}

void connection::impl::teardown() {
  // A write still in flight belongs to the old socket; its completion is ignored.
  session_open_ = false;
  writing_ = false;
  write_error_ = {};
  ++session_;
  ready_ = false;
  stream_.close();
  read_begin_ = read_end_ = 0;
  mux_.on_disconnect(clock_type::now());
  arm_timer();
}

resp::request connection::impl::handshake_request() const {
  resp::request req;
  std::string_view const user =
      cfg_.username.empty() ? std::string_view{"default"} : std::string_view{cfg_.username};
  if (cfg_.password.empty()) {
    req.push("HELLO", "3", "SETNAME", cfg_.client_name);
  } else {
    req.push("HELLO", "3", "AUTH", user, cfg_.password, "SETNAME", cfg_.client_name);
  }
  if (cfg_.database != 0) req.push("SELECT", cfg_.database);
  if (node_.must_be_master) req.push("ROLE");
  if (!channels_.empty()) {
    std::vector<std::string> const channels{channels_.begin(), channels_.end()};
    push_subscription(req, true, channels);
  }
  return req;
}

// The codes of the HELLO and SELECT replies (and ROLE's answer); subscriptions are not checked.
// A refusal's words are kept for the failure's description.
error_code connection::impl::check_handshake(response const& replies) {
  std::size_t const checked = cfg_.database != 0 ? 2 : 1;
  if (node_.must_be_master && checked < replies.size()) {
    // A failover demoted it since the Sentinel said otherwise: ask again after a pause.
    auto const role = replies[checked].elements();
    if (role.empty() || !role[0].is_string() || role[0].text() != "master") {
      handshake_failure_ = fmt::format("ROLE says {}, not master (a failover is under way?)",
                                       role.empty() ? resp::debug_string(replies[checked]) : std::string{role[0].text()});
      return error::read_only;
    }
  }
  for (std::size_t i = 0; i < checked && i < replies.size(); ++i) {
    if (!replies[i].is_error()) continue;
    handshake_failure_ = fmt::format("{} refused: {}", i == 0 ? "HELLO" : "SELECT", replies[i].text());
    auto const code = error_from_server_text(replies[i].text());
    if (code == error::loading || code == error::busy) return code;
    return (code == error::auth_failed || code == error::no_permission ||
            replies[i].text().starts_with("ERR AUTH"))
               ? error::auth_failed
               : error::handshake_failed;
  }
  return {};
}

// Handshake, then health checks until the session ends.
asio::awaitable<error_code> connection::impl::supervisor(backoff& delays) {
  asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
  auto outcome = co_await (exec_priority(handshake_request()) || sleep_for(cfg_.connect_timeout, error::timeout));
  if (outcome.index() == 1) {
    handshake_failure_ = fmt::format("no reply within {} ms (is it a Redis server?)", cfg_.connect_timeout.count());
    co_return error::timeout;
  }
  auto& [ec, replies] = std::get<0>(outcome);
  if (ec) co_return ec;
  if (auto hec = check_handshake(replies)) co_return hec;
  ready_ = true;
  mux_.set_ready(true);
  ++connects_;
  delays.reset();
  set_last_failure({});
  emit(event_kind::connected, event_level::info, {}, cfg_.endpoint());
  start_write();
  for (auto& h : std::exchange(resubscribe_waiters_, {})) h.complete({});
  if (events_.connected) events_.connected();

  for (;;) {
    health_timer_.expires_at(health_.enabled() ? health_.next_check() : asio::steady_timer::time_point::max());
    co_await health_timer_.async_wait(tuple_token);
    if (cs.cancelled() != asio::cancellation_type::none) co_return asio::error::operation_aborted;
    switch (health_.on_timer(clock_type::now())) {
      case health_check::action::ping: send_ping(); break;
      case health_check::action::fail: co_return error::health_check_failed;
      case health_check::action::none: break;
    }
  }
}

void connection::impl::send_ping() {
  ++health_pings_;
  resp::request req;
  req.push("PING");
  auto on_pong = [weak = weak_from_this(), session = session_](error_code ec, response) {
    auto self = weak.lock();
    if (self && !ec && session == self->session_) self->health_.on_pong();
  };
  submit(make_entry(outgoing::from(std::move(req)), {}, std::move(on_pong)), true);
}

}  // namespace redisync::detail::io
