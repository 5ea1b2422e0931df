// Identity of a daemon's callers: a static bearer-token file ("TOKEN USER
// [admin|node]" per line, see loadTokenFile). A gRPC request carries
// "authorization: Bearer TOKEN" metadata; an HTTP request the same header.
// Used by morpheus-inference (sign-off) and morpheus-rm (users, admins and
// node managers). docs/operator/security.md.
//
// Contract: identify*() never trusts a user name the caller states; the
// principal comes only from the token. With authentication disabled (an
// explicit test/development setting) every caller is the admin "anonymous",
// except a gRPC caller on a TLS connection that presented no client
// certificate (a server with tls.client-certs: request, common/tls.h): with
// no token to check, the certificate is the only credential, so such a
// caller is PERMISSION_DENIED.
// Thread-safe: the token table is replaced whole (replaceTokens, a config
// reload) and read as one snapshot per call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/http_server.h"
#include "common/mutex.h"
#include "common/token.h"

namespace morpheus {

class Authenticator {
 public:
  // `open` true: authentication disabled (everyone is an admin named
  // "anonymous"), for tests and single-user development only. `clock` judges
  // tokens' expiry (Principal::expires); nullptr = the wall clock. Not owned.
  Authenticator(std::map<std::string, Principal> tokens, bool open, const Clock* clock = nullptr)
      : tokens_(std::make_shared<const std::map<std::string, Principal>>(std::move(tokens))),
        open_(open),
        clock_(clock) {}

  // The token file was re-read (the RM's config reload): calls from now on
  // are judged by `tokens`; calls already identified keep their principal.
  void replaceTokens(std::map<std::string, Principal> tokens);

  // PERMISSION_DENIED when the token is missing, unknown or expired (open:
  // when the caller came over TLS without a client certificate).
  Result<Principal> identify(const grpc::ServerContextBase& ctx) const;  // sync or callback API
  // The same for an HTTP request's "authorization" header.
  Result<Principal> identify(const HttpRequest& req) const;
  // The principal of a raw "Bearer TOKEN" header value.
  Result<Principal> identifyHeader(const std::string* value) const;
  // PERMISSION_DENIED unless `who` is `owner` or an admin.
  static Status mayActFor(const Principal& who, const std::string& owner, const std::string& what);

  bool open() const { return open_; }

 private:
  std::shared_ptr<const std::map<std::string, Principal>> snapshot() const;

  mutable Mutex mu_;
  std::shared_ptr<const std::map<std::string, Principal>> tokens_ GUARDED_BY(mu_);
  bool open_;
  const Clock* clock_;
};

}  // namespace morpheus
