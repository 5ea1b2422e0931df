// Signed tokens (HMAC-SHA256): container tokens the RM issues and NMs verify,
// AM tokens, and static bearer tokens for owners. A token is
// "<payload>.<hex hmac>"; the payload is readable (not secret), the MAC makes
// it unforgeable without the key.
//
// Keys: the RM's master secret signs AM tokens and
// never leaves the RM. Each node has its own container-token key derived from
// it (deriveNodeKey); the RM signs a container token with the key of the node
// the container runs on and hands that key only to the authenticated NM of
// that node, so one node's key cannot start containers on another node.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
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

// A static bearer-token file: one "TOKEN USER [admin|node] [expires=WHEN]"
// per line, '#' comments. "admin" grants administration; "node" marks a node
// manager's credential (USER is then the node id it may register as).
// WHEN is a UTC date YYYY-MM-DD (the token is valid until that day starts)
// or YYYY-MM-DDTHH:MM:SSZ; a token past it is refused like an unknown one, so
// operators can hand out credentials that lapse by themselves. INVALID_ARGUMENT
// naming the line on a malformed entry, a token shorter than 16 characters, a
// token listed twice, or a file with no token at all.
struct Principal {
  std::string user;
  bool admin = false;
  bool node = false;
  std::optional<TimePoint> expires = std::nullopt;  // none = until removed from the file
};
Result<std::map<std::string, Principal>> loadTokenFile(const std::string& path);

// A client's own bearer token kept in a file (morpheusctl --token-file, the
// RM's and inference's tokens for each other): the first non-blank line,
// trimmed. INVALID_ARGUMENT when the file cannot be read or holds none.
Result<std::string> readBearerTokenFile(const std::string& path);

// How a file holding secrets must be protected (as ssh checks private keys):
// a regular file owned by the reading account or root, that no other account
// may read or write (mode & 077 == 0). kStrict: PERMISSION_DENIED naming
// `field`, the path, its mode and owner. kWarn: accepted with a warning in
// the log (an operator's explicit choice).
enum class SecretFileCheck { kStrict, kWarn };
Status checkSecretFile(const std::string& path, const std::string& field,
                       SecretFileCheck check = SecretFileCheck::kStrict);
// readBearerTokenFile after checkSecretFile; errors name `field`.
Result<std::string> readSecretTokenFile(const std::string& path, const std::string& field,
                                        SecretFileCheck check = SecretFileCheck::kStrict);

}  // namespace morpheus

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"

namespace morpheus {

// K_node = HMAC-SHA256(master_secret, "node-key|" + node): the 32 raw bytes
// that sign and verify container tokens of `node`. Deterministic, so a
// restarted RM (same master secret in its data dir) re-derives the same keys.
std::string deriveNodeKey(const std::string& master_secret, const NodeId& node);

// What a container token grants: run `container` of `app` on `node` with
// `resource`, if started before `expires`, on behalf of `user` (the
// application's submitting user, as the RM authenticated it: the NM runs the
// container under the local account that user maps to, never one the launch
// request names).
struct ContainerTokenInfo {
  ContainerId container;
  AppId app;
  NodeId node;
  Resource resource;
  TimePoint expires;
  std::string user = "";
};

// Payload "c|<container>|<app>|<node>|<memory MiB>|<vcores>|<expires, epoch
// ms>|<user>", signed with `signer` (the RM passes the key of info.node). A
// user name holding '|' yields a token no verifier accepts (a field too many).
std::string issueContainerToken(const TokenSigner& signer, const ContainerTokenInfo& info);
// PERMISSION_DENIED when the MAC does not verify or the payload is not a
// container token of this format (a field missing or extra, a resource or the
// expiry not a plain non-negative integer). Does not check the expiry.
Result<ContainerTokenInfo> verifyContainerToken(const TokenSigner& signer,
                                                const std::string& token);
// PERMISSION_DENIED naming the expiry (epoch ms and UTC) when `now` is at or
// past info.expires. Starting a container needs an unexpired token; stopping
// one or reading its logs accepts an expired token of the same application
// (the signature still proves the RM issued it for that application).
// `now` is the verifier's (the NM's) clock, the expiry the RM's: their clocks
// must agree to well within rm.container-token-expiry.
Status checkNotExpired(const ContainerTokenInfo& info, TimePoint now);

// Container ids the NM accepts (they become directory names under
// nm.local-dir): 1 to kMaxContainerIdLength characters of [A-Za-z0-9_-],
// starting with a letter or digit. The RM's ids ("<app>_<epoch>_<seq>",
// "<app>_<epoch>_am<attempt>", app "application_<ts>_<seq>") all match; '/',
// '.', ".." and the empty id never do. INVALID_ARGUMENT naming container_id.
inline constexpr size_t kMaxContainerIdLength = 128;
Status validateContainerId(const std::string& id);

}  // namespace morpheus
