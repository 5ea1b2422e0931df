#include "common/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
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

namespace {

// "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ" (UTC); nullopt when malformed.
std::optional<TimePoint> parseUtc(const std::string& text) {
  struct tm tm {};
  const char* end = nullptr;
  if (text.size() == 10) {
    end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  } else if (text.size() == 20) {
    end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  if (end == nullptr || *end != '\0') return std::nullopt;
  time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return TimePoint(std::chrono::duration_cast<Millis>(std::chrono::seconds(t)));
}

// Applies one optional word after USER (a role or expires=WHEN) to `p`.
Status applyTokenAttribute(const std::string& word, Principal* p) {
  if (word == "admin" || word == "node") {
    if (p->admin || p->node) return invalidArgument("role", "given twice");
    p->admin = word == "admin";
    p->node = word == "node";
    return Status::ok();
  }
  const std::string prefix = "expires=";
  if (word.rfind(prefix, 0) == 0) {
    if (p->expires) return invalidArgument("expires", "given twice");
    p->expires = parseUtc(word.substr(prefix.size()));
    if (!p->expires) {
      return invalidArgument("expires", "'" + word.substr(prefix.size()) +
                                            "' is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)");
    }
    return Status::ok();
  }
  return invalidArgument("role", "'" + word + "': expected 'admin', 'node' or expires=WHEN");
}

}  // namespace

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
    std::string token, user, word;
    if (!(ls >> token)) continue;
    std::string where = path + " line " + std::to_string(n);
    if (!(ls >> user)) {
      return invalidArgument(where, "expected 'TOKEN USER [admin|node] [expires=WHEN]'");
    }
    if (token.size() < 16) return invalidArgument(where, "token must be at least 16 characters");
    if (out.count(token)) return invalidArgument(where, "token is listed twice");
    Principal p{user, false, false, std::nullopt};
    while (ls >> word) {
      Status st = applyTokenAttribute(word, &p);
      if (!st.isOk()) return invalidArgument(where, st.message());
    }
    out[token] = p;
  }
  if (out.empty()) return invalidArgument("token file", "'" + path + "' lists no token");
  return out;
}

}  // namespace morpheus

namespace morpheus {

namespace {

// A plain non-negative decimal integer (no sign, spaces or suffix).
bool parseNonNegative(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

std::string utcString(TimePoint t) {
  std::time_t secs = static_cast<std::time_t>(toEpochMs(t) / 1000);
  std::tm tm{};
  char buf[32];
  if (gmtime_r(&secs, &tm) == nullptr ||
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return "?";
  return buf;
}

}  // namespace

std::string deriveNodeKey(const std::string& master_secret, const NodeId& node) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::string context = "node-key|" + node.value();
  HMAC(EVP_sha256(), master_secret.data(), static_cast<int>(master_secret.size()),
       reinterpret_cast<const unsigned char*>(context.data()), context.size(), mac, &len);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string issueContainerToken(const TokenSigner& signer, const ContainerTokenInfo& info) {
  return signer.sign("c|" + info.container.value() + "|" + info.app.value() + "|" +
                     info.node.value() + "|" + std::to_string(info.resource.memoryMib()) + "|" +
                     std::to_string(info.resource.vcores()) + "|" +
                     std::to_string(toEpochMs(info.expires)) + "|" + info.user);
}

Result<ContainerTokenInfo> verifyContainerToken(const TokenSigner& signer,
                                                const std::string& token) {
  MORPHEUS_ASSIGN_OR_RETURN(std::string payload, signer.verify(token));
  std::vector<std::string> parts;
  std::stringstream ss(payload);
  std::string p;
  while (std::getline(ss, p, '|')) parts.push_back(p);
  if (!payload.empty() && payload.back() == '|') parts.push_back("");
  if (parts.size() != 8 || parts[0] != "c") return permissionDenied("not a container token");
  ContainerTokenInfo info;
  info.container = ContainerId(parts[1]);
  info.app = AppId(parts[2]);
  info.node = NodeId(parts[3]);
  int64_t memory = 0, vcores = 0, expires = 0;
  if (!parseNonNegative(parts[4], &memory) || !parseNonNegative(parts[5], &vcores)) {
    return permissionDenied("malformed container token: resource");
  }
  if (!parseNonNegative(parts[6], &expires)) {
    return permissionDenied("malformed container token: expiry");
  }
  info.resource = Resource(memory, vcores);
  info.expires = fromEpochMs(expires);
  info.user = parts[7];
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

Status checkSecretFile(const std::string& path, const std::string& field, SecretFileCheck check) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return invalidArgument(field, "cannot read '" + path + "': " + std::strerror(errno));
  }
  std::string problem;
  if (!S_ISREG(st.st_mode)) {
    problem = "is not a regular file";
  } else if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    problem = "is owned by uid " + std::to_string(st.st_uid) + ", not by this account (uid " +
              std::to_string(::geteuid()) + ") or root";
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    problem =
        std::string("has mode ") + mode + ": other accounts may read or change it; chmod 600 it";
  }
  if (problem.empty()) return Status::ok();
  if (check == SecretFileCheck::kWarn && S_ISREG(st.st_mode)) {
    spdlog::warn("{}: the secret file '{}' {} (accepted: insecure token files allowed)", field,
                 path, problem);
    return Status::ok();
  }
  return permissionDenied(field + ": the secret file '" + path + "' " + problem);
}

Result<std::string> readSecretTokenFile(const std::string& path, const std::string& field,
                                        SecretFileCheck check) {
  MORPHEUS_RETURN_IF_ERROR(checkSecretFile(path, field, check));
  auto token = readBearerTokenFile(path);
  if (!token.isOk()) return token.status().withContext(field);
  return token;
}

Status checkNotExpired(const ContainerTokenInfo& info, TimePoint now) {
  if (now < info.expires) return Status::ok();
  return permissionDenied("container token for " + info.container.value() + " expired at " +
                          utcString(info.expires) + " (expiry " +
                          std::to_string(toEpochMs(info.expires)) + " ms since the epoch)");
}

Status validateContainerId(const std::string& id) {
  if (id.empty()) return invalidArgument("container_id", "is required");
  if (id.size() > kMaxContainerIdLength) {
    return invalidArgument("container_id",
                           "longer than " + std::to_string(kMaxContainerIdLength) + " characters");
  }
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  auto ok = [&](char c) { return alnum(c) || c == '_' || c == '-'; };
  if (!alnum(id[0]) || !std::all_of(id.begin(), id.end(), ok)) {
    return invalidArgument("container_id",
                           "must be letters, digits, '_' and '-', starting with a letter or digit");
  }
  return Status::ok();
}

}  // namespace morpheus
