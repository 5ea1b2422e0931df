// A throwaway PKI for integration tests that run the daemons with TLS (the
// openssl CLI, as an operator would make one: docs/operator/security.md), and
// a look at what a container process was given (its environment). Header-only:
// shared by tls_test.cc and run_as_test.cc.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace morpheus::testing {

// The openssl CLI from PATH ("" when absent).
inline std::string opensslPath() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::filesystem::path p = std::filesystem::path(dir) / "openssl";
    if (!dir.empty() && std::filesystem::exists(p)) return p.string();
  }
  return "";
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A certificate and its key, as files.
struct Identity {
  std::string cert;
  std::string key;
};

// A throwaway PKI in a fresh temp dir, made the way an operator would (README
// "Security"): a CA, then per identity an EC key, a CSR and a certificate the
// CA signs for 127.0.0.1/localhost, usable as server and client certificate.
class TestPki {
 public:
  explicit TestPki(const std::string& tag) : dir_(freshDir(tag)), openssl_(opensslPath()) {}

  // Makes the CA NAME (NAME.pem, NAME.key); its certificate's path.
  std::string makeCa(const std::string& name) {
    run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "1", "-subj",
         "/CN=" + name});
    return path(name + ".pem");
  }
  // Issues NAME's certificate signed by the CA `ca` (made by makeCa).
  Identity issue(const std::string& ca, const std::string& name) {
    std::ofstream(path("ext.cnf")) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                      "extendedKeyUsage=serverAuth,clientAuth\n";
    run({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=" + name});
    run({"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey",
         path(ca + ".key"), "-CAcreateserial", "-out", path(name + ".pem"), "-days", "1",
         "-extfile", path("ext.cnf")});
    return {path(name + ".pem"), path(name + ".key")};
  }
  std::string path(const std::string& file) const { return dir_ + "/" + file; }
  bool ok() const { return ok_; }
  const std::string& errors() const { return errors_; }

 private:
  void run(std::vector<std::string> args) {
    args.insert(args.begin(), openssl_);
    auto [code, out] = runCommand(args);
    if (code != 0) {
      ok_ = false;
      errors_ += out;
    }
  }
  std::string dir_;
  std::string openssl_;
  bool ok_ = true;
  std::string errors_;
};

// The tls.* settings of a daemon with identity `id` under CA `ca`.
inline std::vector<std::string> tlsArgs(const std::string& ca, const Identity& id) {
  return {"--set", "tls.ca-file=" + ca,     "--set", "tls.cert-file=" + id.cert,
          "--set", "tls.key-file=" + id.key};
}

// A process's environment (/proc/<pid>/environ); empty when unreadable.
inline std::map<std::string, std::string> processEnvironment(const std::string& pid) {
  std::map<std::string, std::string> env;
  std::stringstream in(readFile("/proc/" + pid + "/environ"));
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// The pids of the running processes of application `app` (MORPHEUS_APP_ID in
// their environment) whose command line contains `program` ("" = any).
inline std::vector<std::string> appProcesses(const std::string& app, const std::string& program) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    std::string pid = p.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto env = processEnvironment(pid);
    auto it = env.find("MORPHEUS_APP_ID");
    if (it == env.end() || it->second != app) continue;
    if (readFile("/proc/" + pid + "/cmdline").find(program) == std::string::npos) continue;
    out.push_back(pid);
  }
  return out;
}

}  // namespace morpheus::testing
