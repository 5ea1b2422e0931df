// /healthz latency of a real morpheus-rm on loopback with 0 and with N idle
// HTTP connections held open (idle connections must not delay
// /healthz beyond a few ms). Each run sends R sequential requests,
// each on a fresh connection, and takes their median; the figure printed is
// the median over the runs, with the best and worst run medians.
//
// usage: bench_http_latency [--idle N] [--runs K] [--requests R] [--json]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "report/bench_report.h"

using namespace morpheus::testing;
using Steady = std::chrono::steady_clock;

namespace {

// One GET /healthz on a fresh connection; milliseconds, or -1 on failure.
double healthzMs(int port) {
  auto t0 = Steady::now();
  int fd = connectLoopback(port, "127.0.0.1", true);
  if (fd < 0) return -1;
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const char req[] = "GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
  std::string resp;
  if (::send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof req - 1)) {
    char buf[1024];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (resp.rfind("HTTP/1.1 200", 0) != 0) return -1;
  return std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over `runs` of the median of `requests` requests; prints one line
// and returns that median in ms (-1 when every request failed).
double measure(int port, int idle, int runs, int requests) {
  std::vector<double> run_medians;
  int failed = 0;
  for (int r = 0; r < runs; r++) {
    std::vector<double> ms;
    for (int i = 0; i < requests; i++) {
      double m = healthzMs(port);
      if (m < 0) {
        failed++;
      } else {
        ms.push_back(m);
      }
    }
    if (!ms.empty()) run_medians.push_back(median(ms));
  }
  if (run_medians.empty()) {
    std::printf("idle=%d: every request failed\n", idle);
    return -1;
  }
  std::sort(run_medians.begin(), run_medians.end());
  std::printf(
      "idle=%4d  /healthz median %.3f ms (run medians %.3f..%.3f ms, %d runs x %d, %d failed)\n",
      idle, median(run_medians), run_medians.front(), run_medians.back(), runs, requests, failed);
  return median(run_medians);
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("http_latency", &argc, argv);
  int idle = 200, runs = 7, requests = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--idle")) idle = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--requests")) requests = std::atoi(argv[i + 1]);
  }
  // Idle connections must outlive the measurement (no header timeout) and fit
  // under the caps, with room for the measuring client.
  Process rm = Process::startDaemon(
      "rm", freshDir("bench-http"),
      {"--set", "rm.token-file=" + testTokenFile(), "--set", "http.header-timeout=1h", "--set",
       "http.max-connections=" + std::to_string(idle + 100), "--set",
       "http.max-connections-per-client=" + std::to_string(std::max(idle, 1))});
  if (rm.httpAddress().empty()) {
    std::fprintf(stderr, "morpheus-rm did not start:\n%s\n", rm.log().c_str());
    return 1;
  }
  int port = std::stoi(rm.httpAddress().substr(rm.httpAddress().rfind(':') + 1));
  report.figures()["healthz_median_ms_no_idle"] = measure(port, 0, runs, requests);
  std::vector<int> held;
  for (int i = 0; i < idle; i++) {
    int fd = connectLoopback(port, "127.0.0.2", false);
    if (fd >= 0) held.push_back(fd);
  }
  double open = -1;
  waitFor(
      [&] {
        auto m = httpRequest(rm.httpAddress(), "GET", "/metrics");
        auto at = m.body.find("\nmorpheus_http_connections_open ");
        open = at == std::string::npos ? -1 : std::stod(m.body.substr(at + 32));
        return open >= static_cast<double>(held.size());
      },
      std::chrono::seconds(10));
  std::printf("the RM reports %.0f open HTTP connections\n", open);
  report.figures()["healthz_median_ms_with_idle"] =
      measure(port, static_cast<int>(held.size()), runs, requests);
  report.figures()["idle_connections"] = held.size();
  for (int fd : held) ::close(fd);
  // Idle connections must not delay /healthz beyond a few ms.
  report.targets() = {{"healthz_median_ms_with_idle_max", 5}};
  report.emit();
  return 0;
}
