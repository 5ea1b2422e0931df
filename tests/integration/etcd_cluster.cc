#include "etcd_cluster.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

namespace morpheus::testing {

namespace {

std::string etcdBinary() {
  const char* env = std::getenv("MORPHEUS_ETCD");
  return env ? env : "/usr/bin/etcd";
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// An etcd member answers when its /health says so (plain HTTP on the client port).
bool healthy(int port) {
  auto r = httpRequest("127.0.0.1:" + std::to_string(port), "GET", "/health");
  return r.status == 200 && r.body.find("\"true\"") != std::string::npos;
}

}  // namespace

bool EtcdCluster::available() { return ::access(etcdBinary().c_str(), X_OK) == 0; }

EtcdCluster::EtcdCluster(int members, int heartbeat_ms, int election_ms,
                         const std::vector<std::string>& extra_args) {
  // A port found free can be taken by another test before etcd binds it
  // (seen in CI: "bind: address already in use" under ctest -j2): a member
  // that exited is a failed start, and the cluster is started again on new
  // ports, up to three times.
  for (int attempt = 0; attempt < 3 && !ok_; ++attempt) {
    if (attempt > 0) {
      failed_starts_ += "start " + std::to_string(attempt) + " failed:\n" + log();
      procs_.clear();  // SIGKILLs and reaps the members still running
      client_ports_.clear();
      peer_ports_.clear();
    }
    ok_ = start(members, heartbeat_ms, election_ms, extra_args);
  }
}

bool EtcdCluster::start(int members, int heartbeat_ms, int election_ms,
                        const std::vector<std::string>& extra_args) {
  std::string token = "morpheus-test-" + std::to_string(::getpid()) + "-" + std::to_string(nowMs());
  std::string initial;
  const std::vector<int> ports = freeLoopbackPorts(2 * members);  // distinct
  for (int i = 0; i < members; ++i) {
    client_ports_.push_back(ports[static_cast<size_t>(2 * i)]);
    peer_ports_.push_back(ports[static_cast<size_t>(2 * i + 1)]);
    initial += (i ? "," : "") + ("m" + std::to_string(i)) +
               "=http://127.0.0.1:" + std::to_string(peer_ports_[i]);
  }
  for (int i = 0; i < members; ++i) {
    std::string dir = freshDir("etcd-m" + std::to_string(i));
    std::string c = "http://127.0.0.1:" + std::to_string(client_ports_[i]);
    std::string p = "http://127.0.0.1:" + std::to_string(peer_ports_[i]);
    // setpriv --pdeathsig: the member dies with the test process, even one that crashes.
    std::vector<std::string> args = {"--pdeathsig",
                                     "KILL",
                                     etcdBinary(),
                                     "--name",
                                     "m" + std::to_string(i),
                                     "--data-dir",
                                     dir + "/data",
                                     "--listen-client-urls",
                                     c,
                                     "--advertise-client-urls",
                                     c,
                                     "--listen-peer-urls",
                                     p,
                                     "--initial-advertise-peer-urls",
                                     p,
                                     "--initial-cluster",
                                     initial,
                                     "--initial-cluster-state",
                                     "new",
                                     "--initial-cluster-token",
                                     token,
                                     "--heartbeat-interval",
                                     std::to_string(heartbeat_ms),
                                     "--election-timeout",
                                     std::to_string(election_ms),
                                     "--log-level",
                                     "warn"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    procs_.push_back(Process::start("/usr/bin/setpriv", args, dir + ".log"));
  }
  // Healthy ports are not enough: another test's etcd on a port ours failed
  // to bind would answer; our members must be running too.
  bool exited = false;
  bool ok = waitFor(
      [&] {
        for (auto& p : procs_) {
          exited = exited || !p.running();
        }
        if (exited) return true;  // a failed start: no use waiting for health
        for (int port : client_ports_) {
          if (!healthy(port)) return false;
        }
        return true;
      },
      std::chrono::seconds(20));
  for (auto& p : procs_) ok = ok && p.running();
  return ok && !exited;
}

std::string EtcdCluster::log() const {
  std::string out = failed_starts_;
  for (const auto& p : procs_) out += p.log() + "\n";
  return out;
}

std::string EtcdCluster::endpoints() const {
  std::string out;
  for (size_t i = 0; i < client_ports_.size(); ++i) {
    out += (i ? "," : "") + endpoint(static_cast<int>(i));
  }
  return out;
}

void EtcdCluster::kill(int i) { procs_[i].signalAndWait(SIGKILL, std::chrono::seconds(10)); }

int EtcdCluster::leaderIndex() const {
  for (int i = 0; i < size(); ++i) {
    auto r = httpRequest(endpoint(i), "POST", "/v3/maintenance/status", "{}");
    if (r.status != 200) continue;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.contains("header") || !j.contains("leader")) continue;
    // uint64 ids, as JSON strings in etcd's gateway.
    if (j["header"].value("member_id", "") == j.value("leader", "-")) return i;
  }
  return -1;
}

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = loopback(0);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::listen(listen_fd_, 64);
  socklen_t len = sizeof(a);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

void TcpProxy::run() {
  std::map<int, int> peer;  // fd -> the fd it forwards to (both directions listed)
  while (!stop_) {
    std::vector<pollfd> fds;
    if (!frozen_) {
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const auto& [fd, other] : peer) fds.push_back({fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 20);
    for (const auto& p : fds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR)) || frozen_) continue;
      if (p.fd == listen_fd_) {
        int in = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        int out = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in t = loopback(target_port_);
        if (in < 0 || ::connect(out, reinterpret_cast<sockaddr*>(&t), sizeof(t)) != 0) {
          if (in >= 0) ::close(in);
          ::close(out);
          continue;
        }
        peer[in] = out;
        peer[out] = in;
        continue;
      }
      auto it = peer.find(p.fd);
      if (it == peer.end()) continue;
      char buf[16384];
      ssize_t n = ::read(p.fd, buf, sizeof(buf));
      if (n <= 0 || ::send(it->second, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) {
        int other = it->second;
        ::close(p.fd);
        ::close(other);
        peer.erase(p.fd);
        peer.erase(other);
      }
    }
  }
  for (const auto& [fd, other] : peer) ::close(fd);
}

}  // namespace morpheus::testing
