#include "common/rm_failover.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "common/address_list.h"
#include "common/wire.h"

namespace morpheus {

namespace {

// Whether `st` is a failure the channel handles (UNAVAILABLE, or CANCELLED by
// the server); other statuses are the call's answer.
bool failedOver(const grpc::Status& st) {
  // CANCELLED: this client never cancels its calls, so the server did (a
  // standby front or an active shutting down as the call arrived).
  return st.error_code() == grpc::StatusCode::UNAVAILABLE ||
         st.error_code() == grpc::StatusCode::CANCELLED;
}

}  // namespace

Result<std::shared_ptr<FailoverChannel>> FailoverChannel::create(const std::string& list,
                                                                 const TlsOptions& tls,
                                                                 const std::string& field,
                                                                 FailoverOptions opts) {
  MORPHEUS_ASSIGN_OR_RETURN(auto addresses, splitAddressList(list, field));
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const auto& a : addresses) channels.push_back(makeChannel(a, tls));
  return std::shared_ptr<FailoverChannel>(
      new FailoverChannel(std::move(addresses), std::move(channels), opts));
}

std::string FailoverChannel::current() const {
  MutexLock lk(mu_);
  return addresses_[current_];
}

size_t FailoverChannel::moveOn(size_t from, const std::string& hint) {
  MutexLock lk(mu_);
  if (current_ != from) return current_;  // a concurrent call moved on already
  auto it = std::find(addresses_.begin(), addresses_.end(), hint);
  if (!hint.empty() && it != addresses_.end()) {
    current_ = static_cast<size_t>(it - addresses_.begin());
  } else {
    current_ = (from + 1) % addresses_.size();
  }
  return current_;
}

grpc::Status FailoverChannel::call(Millis timeout, CallKind kind, const Attempt& attempt,
                                   const Prepare& prepare) {
  const auto deadline = std::chrono::system_clock::now() + timeout;
  Millis backoff = opts_.initial_backoff;
  size_t failed_in_round = 0;
  size_t index;
  {
    MutexLock lk(mu_);
    index = current_;
  }
  // The last failover's status and address: the answer if the deadline ends
  // the call before an active RM does.
  std::optional<grpc::Status> failover;
  size_t failover_index = index;
  auto giveUp = [&] {
    return grpc::Status(failover->error_code(),
                        "no active RM in " + std::to_string(addresses_.size()) +
                            " address(es), last " + addresses_[failover_index] + ": " +
                            failover->error_message());
  };
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    if (prepare) prepare(&ctx);
    grpc::Status st = attempt(channels_[index], &ctx);
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && failover) return giveUp();
    if (!failedOver(st)) return st;
    failover = st;
    failover_index = index;
    const std::optional<std::string> hint = leaderHint(ctx);
    if (!hint && !neverSent(st) && kind == CallKind::kNotIdempotent) return st;
    const size_t next = moveOn(index, hint.value_or(""));
    // A hint elsewhere is followed at once; anything else counts toward a round.
    const bool redirected = hint && !hint->empty() && next != index && addresses_[next] == *hint;
    if (!redirected) ++failed_in_round;
    if (failed_in_round >= addresses_.size()) {
      failed_in_round = 0;
      const auto left = deadline - std::chrono::system_clock::now();
      if (left <= backoff) return giveUp();
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, opts_.max_backoff);
    }
    if (std::chrono::system_clock::now() >= deadline) return giveUp();
    index = next;
  }
}

std::optional<std::string> leaderHint(const grpc::ClientContext& ctx) {
  const auto& md = ctx.GetServerTrailingMetadata();
  auto it = md.find(kLeaderMetadataKey);
  if (it == md.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

bool neverSent(const grpc::Status& st) {
  return st.error_code() == grpc::StatusCode::UNAVAILABLE &&
         st.error_message().rfind("failed to connect to all addresses", 0) == 0;
}

}  // namespace morpheus
