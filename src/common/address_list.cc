#include "common/address_list.h"

#include <netdb.h>
#include <sys/socket.h>

#include <arpa/inet.h>

namespace morpheus {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

struct HostPort {
  std::string host;
  std::string port;
};

HostPort splitHostPort(const std::string& addr) {
  size_t colon = addr.rfind(':');
  std::string host = addr.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, addr.substr(colon + 1)};
}

// "a.b.c.d:p" or "[v6]:p" of the first address `hp` resolves to; sets *v6.
Result<std::string> resolve(const HostPort& hp, const std::string& field, bool* v6) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return invalidArgument(field, "cannot resolve '" + hp.host + "': " + ::gai_strerror(rc));
  }
  char buf[INET6_ADDRSTRLEN] = {};
  std::string out;
  if (res->ai_family == AF_INET6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(res->ai_addr);
    ::inet_ntop(AF_INET6, &sa->sin6_addr, buf, sizeof(buf));
    out = "[" + std::string(buf) + "]:" + hp.port;
    *v6 = true;
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(res->ai_addr);
    ::inet_ntop(AF_INET, &sa->sin_addr, buf, sizeof(buf));
    out = std::string(buf) + ":" + hp.port;
    *v6 = false;
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

Result<std::vector<std::string>> splitAddressList(const std::string& list,
                                                  const std::string& field) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string e = trim(list.substr(start, comma - start));
    if (e.rfind("http://", 0) == 0) e = e.substr(7);
    if (e.empty()) return invalidArgument(field, "empty address in list '" + list + "'");
    size_t colon = e.rfind(':');
    if (colon == std::string::npos || colon + 1 == e.size() || colon == 0) {
      return invalidArgument(field, "'" + e + "' is not host:port");
    }
    out.push_back(e);
    start = comma + 1;
  }
  return out;
}

Result<std::string> grpcTargetForList(const std::string& list, const std::string& field) {
  MORPHEUS_ASSIGN_OR_RETURN(auto entries, splitAddressList(list, field));
  if (entries.size() == 1) return entries[0];
  std::string joined;
  bool first_v6 = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    bool v6 = false;
    MORPHEUS_ASSIGN_OR_RETURN(auto a, resolve(splitHostPort(entries[i]), field, &v6));
    if (i == 0) first_v6 = v6;
    if (v6 != first_v6) {
      return invalidArgument(field, "'" + list + "' mixes IPv4 and IPv6 peers");
    }
    joined += (i ? "," : "") + a;
  }
  return (first_v6 ? "ipv6:" : "ipv4:") + joined;
}

}  // namespace morpheus
