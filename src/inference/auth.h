// Identity of callers of the inference service: a static bearer-token file
// ("TOKEN USER [admin]" per line). A request carries "authorization: Bearer
// TOKEN" metadata. Sign-off needs the job's owner or an admin (DESIGN.md §9).
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>

#include "common/token.h"

namespace morpheus::inference {

class Authenticator {
 public:
  // `tokens` empty and `open` true: authentication disabled (everyone is an
  // admin named "anonymous"), for single-user development only.
  Authenticator(std::map<std::string, Principal> tokens, bool open)
      : tokens_(std::move(tokens)), open_(open) {}

  // PERMISSION_DENIED when the token is missing or unknown.
  Result<Principal> identify(const grpc::ServerContext& ctx) const;
  // PERMISSION_DENIED unless `who` is `owner` or an admin.
  static Status mayActFor(const Principal& who, const std::string& owner, const std::string& what);

 private:
  std::map<std::string, Principal> tokens_;
  bool open_;
};

}  // namespace morpheus::inference
