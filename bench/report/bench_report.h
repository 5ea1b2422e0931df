// The last line of every bench: one JSON object with the bench's
// figures and its targets, so runs can be compared (`jq`, a spreadsheet).
//
// Usage in a bench's main():
//   BenchReport report("planner", &argc, argv);  // strips --json from argv
//   ... human-readable output on stdout, as before ...
//   report.figures()["p50_ms"] = 3.1;
//   report.targets()["p50_ms_max"] = 10;
//   report.emit();  // prints the JSON line last
//
// With --json, everything the bench writes to stdout before emit() is
// discarded (stdout points at /dev/null until then), so the only line on
// stdout is the JSON object; stderr is untouched.
//
// Not thread-safe: construct and emit() on the main thread, with no other
// thread writing to stdout around those calls.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

namespace morpheus::bench {

class BenchReport {
 public:
  BenchReport(std::string name, int* argc, char** argv) : name_(std::move(name)) {
    int out = 1;
    for (int i = 1; i < *argc; i++) {
      if (std::strcmp(argv[i], "--json") == 0) {
        json_only_ = true;
      } else {
        argv[out++] = argv[i];
      }
    }
    *argc = out;
    argv[out] = nullptr;
    if (json_only_) silenceStdout();
  }
  ~BenchReport() { restoreStdout(); }
  BenchReport(const BenchReport&) = delete;
  BenchReport& operator=(const BenchReport&) = delete;

  bool jsonOnly() const { return json_only_; }
  nlohmann::json& figures() { return figures_; }
  nlohmann::json& targets() { return targets_; }

  // Prints {"bench": name, "figures": {...}, "targets": {...}} as the last
  // line of stdout (restoring stdout first under --json).
  void emit() {
    restoreStdout();
    nlohmann::json j = {{"bench", name_}, {"figures", figures_}, {"targets", targets_}};
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }

 private:
  void silenceStdout() {
    std::fflush(stdout);
    saved_stdout_ = ::dup(STDOUT_FILENO);
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_stdout_ < 0 || null < 0) return;  // keep printing rather than lose the line
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  void restoreStdout() {
    if (saved_stdout_ < 0) return;
    std::fflush(stdout);
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::close(saved_stdout_);
    saved_stdout_ = -1;
  }

  std::string name_;
  bool json_only_ = false;
  int saved_stdout_ = -1;
  nlohmann::json figures_ = nlohmann::json::object();
  nlohmann::json targets_ = nlohmann::json::object();
};

}  // namespace morpheus::bench
