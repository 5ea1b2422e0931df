#include "rm/core/access.h"

#include <spdlog/spdlog.h>

#include "common/validate.h"
#include "common/wire.h"

namespace morpheus::rm {

void RmAccess::reload(std::set<std::string> admins, QueueAcls acls) {
  auto next = std::make_shared<const Policy>(Policy{std::move(admins), std::move(acls)});
  MutexLock lk(mu_);
  policy_ = std::move(next);
}

std::shared_ptr<const RmAccess::Policy> RmAccess::policy() const {
  MutexLock lk(mu_);
  return policy_;
}

Status RmAccess::mayOperate(const Principal& who, const std::string& action) {
  if (who.admin) return Status::ok();
  return permissionDenied(who.user + " may not " + action +
                          ": only cluster admins (a token with role admin, or a user in "
                          "rm.admins) may");
}

Result<Principal> RmAccess::asUser(Principal p) const {
  if (p.node) {
    return permissionDenied("node credential of " + p.user +
                            " is not a user: node managers may only call the ResourceTracker");
  }
  if (policy()->admins.count(p.user)) p.admin = true;
  return p;
}

grpc::Status RmAccess::caller(const grpc::ServerContext& ctx, Principal* out) const {
  auto p = auth_.identify(ctx);
  if (!p.isOk()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, p.status().message());
  }
  auto user = asUser(std::move(p).value());
  if (!user.isOk()) return toGrpc(user.status());
  *out = std::move(user).value();
  return grpc::Status::OK;
}

Result<Principal> RmAccess::caller(const HttpRequest& req, int* http_status) const {
  auto p = auth_.identify(req);
  if (!p.isOk()) {
    *http_status = 401;
    return p.status();
  }
  auto user = asUser(std::move(p).value());
  if (!user.isOk()) *http_status = 403;
  return user;
}

Result<std::string> RmAccess::actingUser(const Principal& who, const std::string& stated,
                                         const std::string& action) {
  if (stated.empty() || stated == who.user) return who.user;
  if (who.admin) {
    MORPHEUS_RETURN_IF_ERROR(checkUtf8(stated, "user"));
    return stated;
  }
  return permissionDenied("user: " + who.user + " may not " + action + " as " + stated +
                          ": the credentials are " + who.user +
                          "'s (only an admin may act for another user)");
}

Status RmAccess::maySubmit(const Principal& who, const std::string& queue,
                           const std::string& action) const {
  if (who.admin || policy()->acls.maySubmit(who.user, queue)) return Status::ok();
  return permissionDenied(who.user + " may not " + action + ": no submit permission on queue " +
                          queue + " (rm.queue-acls.submit)");
}

Status RmAccess::mayAdminister(const Principal& who, const std::string& owner,
                               const std::string& queue, const std::string& action) const {
  if (who.admin || who.user == owner || policy()->acls.mayAdminister(who.user, queue)) {
    return Status::ok();
  }
  return permissionDenied(who.user + " may not " + action + " of " + owner + " in queue " + queue +
                          ": only the owner, an administrator of the queue or an admin");
}

Result<std::unique_ptr<Authenticator>> loadRmAuthenticator(const std::string& token_file,
                                                           bool disabled, SecretFileCheck check) {
  if (disabled) {
    spdlog::warn(
        "rm.auth-disabled: true: every caller is the admin 'anonymous' and any caller may register "
        "as any node (tests and single-user "
        "development only)");
    return std::make_unique<Authenticator>(std::map<std::string, Principal>{}, true);
  }
  if (token_file.empty()) {
    return invalidArgument("rm.token-file",
                           "is required (bearer tokens of users, admins and nodes); set "
                           "rm.auth-disabled: true only for tests");
  }
  MORPHEUS_RETURN_IF_ERROR(checkSecretFile(token_file, "rm.token-file", check));
  auto tokens = loadTokenFile(token_file);
  if (!tokens.isOk()) return tokens.status().withContext("rm.token-file");
  return std::make_unique<Authenticator>(std::move(tokens).value(), false);
}

Result<std::string> readBearerToken(const std::string& path, const std::string& key,
                                    SecretFileCheck check) {
  if (path.empty()) return std::string();
  return readSecretTokenFile(path, key, check);
}

}  // namespace morpheus::rm
