// Who is calling the RM's user-facing surfaces (ClientService,
// ReservationService, reservation REST) and what they may do
// (docs/operator/security.md).
//
// Contract:
//  - The caller is the principal of its bearer token (Authenticator), never a
//    user named in the request. Node credentials (role "node") are not users
//    and are refused here. A user listed in rm.admins is an admin like a
//    token with role "admin".
//  - A request that states a user acts as that user only when it is the
//    caller or the caller is an admin; an empty stated user means the caller.
//  - Submitting needs submit on the queue (QueueAcls); changing, killing or
//    reading the logs of someone's work needs the owner, an administrator of
//    its queue, or an admin. Errors name the user, the action and the queue.
// Thread-safety: the admins and ACLs are replaced whole (reload, a config
// reload) and read as one snapshot per check; `auth` must outlive this.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/auth.h"
#include "common/http_server.h"
#include "common/mutex.h"
#include "rm/core/queue_acls.h"

namespace morpheus::rm {

class RmAccess {
 public:
  RmAccess(const Authenticator& auth, std::set<std::string> admins, QueueAcls acls)
      : auth_(auth),
        policy_(std::make_shared<const Policy>(Policy{std::move(admins), std::move(acls)})) {}

  // rm.admins and the queue ACLs as re-read by a config reload: checks from
  // now on use them.
  void reload(std::set<std::string> admins, QueueAcls acls);
  // PERMISSION_DENIED naming the caller and `action` unless `who` is a
  // cluster admin (token role admin, or rm.admins; see caller()).
  static Status mayOperate(const Principal& who, const std::string& action);

  // The caller of a gRPC request. UNAUTHENTICATED for a missing or unknown
  // token, PERMISSION_DENIED for a node credential (grpc codes: the edge).
  grpc::Status caller(const grpc::ServerContext& ctx, Principal* out) const;
  // The caller of an HTTP request; *http_status is 401 for missing or unknown
  // credentials and 403 for a node credential.
  Result<Principal> caller(const HttpRequest& req, int* http_status) const;

  // The user a request acts as. PERMISSION_DENIED naming both users when
  // `stated` is neither empty nor the caller and the caller is no admin.
  static Result<std::string> actingUser(const Principal& who, const std::string& stated,
                                        const std::string& action);
  // PERMISSION_DENIED unless `who` is an admin or may submit to `queue`.
  Status maySubmit(const Principal& who, const std::string& queue, const std::string& action) const;
  // PERMISSION_DENIED unless `who` owns the object, administers its queue,
  // or is an admin. `action` names the action and the object ("kill application X").
  Status mayAdminister(const Principal& who, const std::string& owner, const std::string& queue,
                       const std::string& action) const;

 private:
  // Node credentials refused; rm.admins upgraded to admin.
  Result<Principal> asUser(Principal p) const;

  struct Policy {
    std::set<std::string> admins;
    QueueAcls acls;
  };
  std::shared_ptr<const Policy> policy() const;

  const Authenticator& auth_;
  mutable Mutex mu_;
  std::shared_ptr<const Policy> policy_ GUARDED_BY(mu_);
};

// The RM's Authenticator from rm.token-file. Secure by default: without a
// token file the RM refuses to start (INVALID_ARGUMENT naming rm.token-file)
// unless `disabled` (rm.auth-disabled), which accepts everyone as the admin
// "anonymous" and logs a warning. The file must pass checkSecretFile under
// `check` (PERMISSION_DENIED naming rm.token-file otherwise).
Result<std::unique_ptr<Authenticator>> loadRmAuthenticator(
    const std::string& token_file, bool disabled, SecretFileCheck check = SecretFileCheck::kStrict);

// The bearer token in `path` (its first non-empty line, trimmed); "" for an
// empty `path`. INVALID_ARGUMENT naming `key` when unreadable or empty,
// PERMISSION_DENIED when it fails checkSecretFile under `check`.
Result<std::string> readBearerToken(const std::string& path, const std::string& key,
                                    SecretFileCheck check = SecretFileCheck::kStrict);

}  // namespace morpheus::rm
