#include "common/auth.h"

namespace morpheus {

void Authenticator::replaceTokens(std::map<std::string, Principal> tokens) {
  auto next = std::make_shared<const std::map<std::string, Principal>>(std::move(tokens));
  MutexLock lk(mu_);
  tokens_ = std::move(next);
}

std::shared_ptr<const std::map<std::string, Principal>> Authenticator::snapshot() const {
  MutexLock lk(mu_);
  return tokens_;
}

Result<Principal> Authenticator::identifyHeader(const std::string* value) const {
  if (open_) return Principal{"anonymous", true};
  if (value == nullptr)
    return permissionDenied("missing credentials: send 'authorization: Bearer TOKEN'");
  const std::string prefix = "Bearer ";
  if (value->rfind(prefix, 0) != 0) return permissionDenied("authorization must be 'Bearer TOKEN'");
  const auto tokens = snapshot();
  auto p = tokens->find(value->substr(prefix.size()));
  if (p == tokens->end()) return permissionDenied("unknown token");
  if (p->second.expires) {
    TimePoint now = clock_ ? clock_->now()
                           : std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
    if (now >= *p->second.expires) {
      return permissionDenied("the token of " + p->second.user + " expired at " +
                              std::to_string(toEpochMs(*p->second.expires)) +
                              " ms since the epoch");
    }
  }
  return p->second;
}

namespace {

// True when the call came over TLS and its client presented no certificate
// (a verified one is in the auth context as x509_pem_cert).
bool tlsWithoutClientCertificate(const grpc::ServerContextBase& ctx) {
  auto auth = ctx.auth_context();
  if (!auth) return false;
  auto transport = auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  bool tls =
      !transport.empty() && std::string(transport.front().data(), transport.front().size()) ==
                                GRPC_SSL_TRANSPORT_SECURITY_TYPE;
  return tls && auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
}

}  // namespace

Result<Principal> Authenticator::identify(const grpc::ServerContextBase& ctx) const {
  if (open_ && tlsWithoutClientCertificate(ctx)) {
    return permissionDenied(
        "authentication is disabled, so only callers with a client certificate signed by "
        "tls.ca-file are admitted, and this caller presented none");
  }
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return identifyHeader(nullptr);
  std::string value(it->second.data(), it->second.size());
  return identifyHeader(&value);
}

Result<Principal> Authenticator::identify(const HttpRequest& req) const {
  auto it = req.headers.find("authorization");
  return identifyHeader(it == req.headers.end() ? nullptr : &it->second);
}

Status Authenticator::mayActFor(const Principal& who, const std::string& owner,
                                const std::string& what) {
  if (who.admin || who.user == owner) return Status::ok();
  return permissionDenied(who.user + " may not " + what + ": only the owner " + owner +
                          " or an admin");
}

}  // namespace morpheus
