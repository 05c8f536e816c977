#include "io/connection_group.hpp"

namespace redisync::detail::io {

namespace asio = boost::asio;

namespace {

strand_type make_strand_for(asio::any_io_executor ex) {
  if (auto const* io = ex.target<asio::io_context::executor_type>()) return asio::make_strand(*io);
  return asio::make_strand(std::move(ex));
}

}  // namespace

connection_group::connection_group(asio::any_io_executor ex)
    : strand_{make_strand_for(std::move(ex))},
      executor_{std::visit([](auto const& s) { return asio::any_io_executor{s}; }, strand_)},
      io_executor_{std::visit([](auto const& s) { return asio::any_io_executor{s.get_inner_executor()}; }, strand_)} {}

std::shared_ptr<connection_group> connection_group::make(asio::any_io_executor ex) {
  std::shared_ptr<connection_group> group{new connection_group{std::move(ex)}};
  group->completions_ = std::make_shared<delivery>(group->io_executor_, [weak = group->weak_from_this()] {
    if (auto g = weak.lock()) asio::dispatch(g->executor_, [g] { g->write_unless_waiting(); });
  });
  return group;
}

}  // namespace redisync::detail::io
