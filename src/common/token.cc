#include "common/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace morpheus {

namespace {
std::string hex(const unsigned char* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; i++) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}
}  // namespace

std::string TokenSigner::sign(const std::string& payload) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), mac, &len);
  return payload + "." + hex(mac, len);
}

Result<std::string> TokenSigner::verify(const std::string& token) const {
  auto dot = token.rfind('.');
  if (dot == std::string::npos) return permissionDenied("malformed token");
  std::string payload = token.substr(0, dot);
  std::string expected = sign(payload);
  if (expected.size() != token.size() ||
      CRYPTO_memcmp(expected.data(), token.data(), token.size()) != 0) {
    return permissionDenied("token signature does not verify");
  }
  return payload;
}

std::string randomHex(size_t bytes) {
  std::string buf(bytes, '\0');
  MORPHEUS_CHECK(
      RAND_bytes(reinterpret_cast<unsigned char*>(buf.data()), static_cast<int>(bytes)) == 1,
      "RAND_bytes failed");
  return hex(reinterpret_cast<const unsigned char*>(buf.data()), bytes);
}

Result<std::map<std::string, Principal>> loadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument("token file", "cannot read '" + path + "'");
  std::map<std::string, Principal> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    n++;
    auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::istringstream ls(line);
    std::string token, user, role, extra;
    if (!(ls >> token)) continue;
    if (!(ls >> user)) {
      return invalidArgument(path + " line " + std::to_string(n), "expected 'TOKEN USER [admin]'");
    }
    std::string where = path + " line " + std::to_string(n);
    if (token.size() < 16) return invalidArgument(where, "token must be at least 16 characters");
    if (out.count(token)) return invalidArgument(where, "token is listed twice");
    Principal p{user, false, false};
    if (ls >> role) {
      if (role != "admin" && role != "node") {
        return invalidArgument(where, "role must be 'admin', 'node' or absent");
      }
      p.admin = role == "admin";
      p.node = role == "node";
    }
    if (ls >> extra) {
      return invalidArgument(path + " line " + std::to_string(n), "unexpected '" + extra + "'");
    }
    out[token] = p;
  }
  if (out.empty()) return invalidArgument("token file", "'" + path + "' lists no token");
  return out;
}

}  // namespace morpheus

namespace morpheus {

std::string issueContainerToken(const TokenSigner& signer, const ContainerTokenInfo& info) {
  return signer.sign("c|" + info.container.value() + "|" + info.app.value() + "|" +
                     info.node.value() + "|" + std::to_string(info.resource.memoryMib()) + "|" +
                     std::to_string(info.resource.vcores()));
}

Result<ContainerTokenInfo> verifyContainerToken(const TokenSigner& signer,
                                                const std::string& token) {
  MORPHEUS_ASSIGN_OR_RETURN(std::string payload, signer.verify(token));
  std::vector<std::string> parts;
  std::stringstream ss(payload);
  std::string p;
  while (std::getline(ss, p, '|')) parts.push_back(p);
  if (parts.size() != 6 || parts[0] != "c") return permissionDenied("not a container token");
  ContainerTokenInfo info;
  info.container = ContainerId(parts[1]);
  info.app = AppId(parts[2]);
  info.node = NodeId(parts[3]);
  try {
    info.resource = Resource(std::stoll(parts[4]), std::stoll(parts[5]));
  } catch (const std::exception&) {
    return permissionDenied("malformed container token");
  }
  return info;
}

Result<std::string> readBearerTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument(path, "cannot read the token file");
  for (std::string line; std::getline(in, line);) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    return line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
  }
  return invalidArgument(path, "holds no token");
}

}  // namespace morpheus
