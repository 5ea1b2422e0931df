// Signed tokens (HMAC-SHA256): container tokens the RM issues and NMs verify,
// AM tokens, and static bearer tokens for owners. A token is
// "<payload>.<hex hmac>"; the payload is readable (not secret), the MAC makes
// it unforgeable without the key.
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace morpheus {

class TokenSigner {
 public:
  explicit TokenSigner(std::string secret) : secret_(std::move(secret)) {}
  std::string sign(const std::string& payload) const;
  // Returns the payload when the MAC is valid; PERMISSION_DENIED otherwise.
  Result<std::string> verify(const std::string& token) const;
  const std::string& secret() const { return secret_; }

 private:
  std::string secret_;
};

// `bytes` random bytes from the OS CSPRNG, hex-encoded.
std::string randomHex(size_t bytes);

// A static bearer-token file: one "TOKEN USER [admin|node]" per line, '#'
// comments. "admin" grants administration; "node" marks a node manager's
// credential (USER is then the node id it may register as). INVALID_ARGUMENT
// naming the line on a malformed entry, a token shorter than 16 characters,
// a token listed twice, or a file with no token at all.
struct Principal {
  std::string user;
  bool admin = false;
  bool node = false;
};
Result<std::map<std::string, Principal>> loadTokenFile(const std::string& path);

// A client's own bearer token kept in a file (morpheusctl --token-file, the
// RM's and inference's tokens for each other): the first non-blank line,
// trimmed. INVALID_ARGUMENT when the file cannot be read or holds none.
Result<std::string> readBearerTokenFile(const std::string& path);

}  // namespace morpheus

#include "common/ids.h"
#include "common/resource.h"

namespace morpheus {

// What a container token grants: run `container` of `app` on `node` with `resource`.
struct ContainerTokenInfo {
  ContainerId container;
  AppId app;
  NodeId node;
  Resource resource;
};

std::string issueContainerToken(const TokenSigner& signer, const ContainerTokenInfo& info);
// PERMISSION_DENIED when the MAC or the payload is bad.
Result<ContainerTokenInfo> verifyContainerToken(const TokenSigner& signer,
                                                const std::string& token);

}  // namespace morpheus
