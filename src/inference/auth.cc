#include "inference/auth.h"

namespace morpheus::inference {

Result<Principal> Authenticator::identify(const grpc::ServerContext& ctx) const {
  if (open_) return Principal{"anonymous", true};
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end())
    return permissionDenied("missing credentials: send 'authorization: Bearer TOKEN'");
  std::string value(it->second.data(), it->second.size());
  const std::string prefix = "Bearer ";
  if (value.rfind(prefix, 0) != 0) return permissionDenied("authorization must be 'Bearer TOKEN'");
  auto p = tokens_.find(value.substr(prefix.size()));
  if (p == tokens_.end()) return permissionDenied("unknown token");
  return p->second;
}

Status Authenticator::mayActFor(const Principal& who, const std::string& owner,
                                const std::string& what) {
  if (who.admin || who.user == owner) return Status::ok();
  return permissionDenied(who.user + " may not " + what + ": only the owner " + owner +
                          " or an admin");
}

}  // namespace morpheus::inference
