// Containers run as their submitters' local accounts (nm.run-as: mapped):
// a real RM and NM on loopback, the real DAG AM, and two real local accounts
// made for the test (useradd; removed afterwards if this test made them). The
// test users alice and bob map to them through nm.run-as-map.
//
// Needs root (it creates accounts, and only root can switch to them): skipped
// otherwise. CI runs as root.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "harness.h"
#include "test_pki.h"

namespace morpheus::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json = nlohmann::json;

const char* kAlice = "morpheus-it-alice";
const char* kBob = "morpheus-it-bob";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uid_t uidOf(const std::string& account) {
  struct passwd* pw = getpwnam(account.c_str());
  return pw ? pw->pw_uid : static_cast<uid_t>(-1);
}

// The uid a process runs as (the real uid, /proc/<pid>/status "Uid:").
uid_t processUid(const std::string& pid) {
  std::istringstream in(slurp("/proc/" + pid + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) == 0) return static_cast<uid_t>(std::stoul(line.substr(4)));
  }
  return static_cast<uid_t>(-1);
}

class RunAsIT : public ClusterTest {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) return;
    for (const char* name : {kAlice, kBob}) {
      if (getpwnam(name) != nullptr) continue;  // a fixed test account, reused
      auto [code, out] = runCommand({"/usr/sbin/useradd", "--no-create-home", "--shell",
                                     "/usr/sbin/nologin", "--user-group", name});
      ASSERT_EQ(code, 0) << "useradd " << name << ": " << out;
      created().push_back(name);
    }
  }
  static void TearDownTestSuite() {
    for (const auto& name : created()) runCommand({"/usr/sbin/userdel", name});
    created().clear();
  }
  static std::vector<std::string>& created() {
    static std::vector<std::string> names;
    return names;
  }
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: it creates local accounts and switches to them";
  }

  // The NM's container dirs of application `app` (from its records).
  std::vector<fs::path> containerDirs(const std::string& app) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(nm_dirs_[0] + "/local/containers", ec)) {
      // Acknowledged (completed and recorded by the RM) or not.
      for (const char* name : {"container.json", "container.acked.json"}) {
        auto j = json::parse(slurp(d.path() / name), nullptr, false);
        if (!j.is_discarded() && j.value("app", "") == app) {
          out.push_back(d.path());
          break;
        }
      }
    }
    return out;
  }
};

// Bob's task tries what an attacker's job did against the NM that ran every
// container as one account: read alice's task's data and list its directory,
// read her AM's token file, and find her containers' /proc/<pid>/environ. All
// are refused (bob's own environ, the control, is readable); alice's and
// bob's containers run as their own accounts, in 0700 work dirs, and alice's
// AM gets its token from a 0400 file of hers (not its environment) and
// finishes her app. With nm.run-as: nm-user (every container as one account)
// bob's reads succeed and this test fails.
TEST_F(RunAsIT, BobsContainerCannotReadAlicesDirTokenOrEnvironment) {
  std::string gate = freshDir("gate");
  ::chmod(gate.c_str(), 0755);
  ASSERT_NO_FATAL_FAILURE(
      startCluster(1, {}, "memory=4096,vcores=4",
                   {"--set", "nm.run-as=mapped", "--set",
                    std::string("nm.run-as-map=alice=") + kAlice + ",bob=" + kBob}));
  std::string alice_job = writeJob(
      "name: alice-private\n"
      "stages:\n"
      "  - name: hold\n"
      "    tasks: 1\n"
      "    command: \"echo alice-private-data > data; while [ ! -e " +
      gate +
      "/go ]; do sleep 0.1; done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctlAs("alice", {"app", "submit", alice_job});
  ASSERT_EQ(code, 0) << out;
  std::string alice_app = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitRunning(alice_app, 2, 60s)) << app(alice_app).dump() << nms_[0].log();
  // Her AM and her task, each in its own dir; the task has written its data.
  fs::path am_dir, task_dir;
  ASSERT_TRUE(waitFor(
      [&] {
        for (const auto& d : containerDirs(alice_app)) {
          if (fs::exists(d / "am_token")) am_dir = d;
          if (fs::exists(d / "work/data")) task_dir = d;
        }
        return !am_dir.empty() && !task_dir.empty();
      },
      30s))
      << nms_[0].log();
  uid_t alice_uid = uidOf(kAlice), bob_uid = uidOf(kBob);
  struct stat st {};
  ASSERT_EQ(::stat((task_dir / "work").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, alice_uid);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((am_dir / "am_token").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, alice_uid);
  EXPECT_EQ(st.st_mode & 07777, 0400u);
  std::string alice_token = slurp(am_dir / "am_token");
  ASSERT_GT(alice_token.size(), 16u);
  alice_token.resize(alice_token.find_last_not_of("\n") + 1);
  // Every process of her containers runs as her account, none has the token
  // in its environment.
  int alice_processes = 0;
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::string pid = p.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env = slurp(p.path() / "environ");
    if (env.find("MORPHEUS_APP_ID=" + alice_app) == std::string::npos) continue;
    alice_processes++;
    EXPECT_EQ(processUid(pid), alice_uid) << "pid " << pid;
    EXPECT_EQ(env.find(alice_token), std::string::npos) << "pid " << pid << " has the token";
    EXPECT_EQ(env.find("MORPHEUS_AM_TOKEN="), std::string::npos) << "pid " << pid;
  }
  EXPECT_GE(alice_processes, 2) << "her AM and her task";

  // Bob's attempt, as a task of his own app. (His control reads
  // /proc/self/environ with cat: a shell's redirect opens it in the forked
  // shell, whose memory is gone once the command is exec'd.)
  std::string script =
      "cat " + (task_dir / "work/data").string() + " && echo LEAK-data || echo DENIED-data; ls " +
      (task_dir / "work").string() + " && echo LEAK-list || echo DENIED-list; cat " +
      (am_dir / "am_token").string() +
      " && echo LEAK-token || echo DENIED-token; "
      "for p in /proc/[0-9]*; do "
      "if tr '\\\\0' '\\\\n' < $p/environ 2>/dev/null | grep -q "
      "'MORPHEUS_APP_ID=" +
      alice_app +
      "$'; then echo LEAK-environ $p; fi; done; "
      "cat /proc/self/environ | tr '\\\\0' '\\\\n' | grep -q MORPHEUS_APP_ID= && "
      "echo SELF-OK; id -u";
  std::string bob_job = writeJob(
      "name: bob-snoops\n"
      "stages:\n"
      "  - name: snoop\n"
      "    tasks: 1\n"
      "    command: \"" +
      script +
      "\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  std::tie(code, out) = ctlAs("bob", {"app", "submit", bob_job});
  ASSERT_EQ(code, 0) << out;
  std::string bob_app = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFinal(bob_app, 90s)) << app(bob_app).dump();
  std::string bob_out;
  for (const auto& d : containerDirs(bob_app)) {
    if (!fs::exists(d / "am_token")) bob_out += slurp(d / "stdout");
  }
  EXPECT_NE(bob_out.find("SELF-OK"), std::string::npos) << "control: bob reads his own\n"
                                                        << bob_out;
  EXPECT_NE(bob_out.find(std::to_string(bob_uid)), std::string::npos) << bob_out;
  for (const char* what : {"data", "list", "token"}) {
    EXPECT_NE(bob_out.find(std::string("DENIED-") + what), std::string::npos) << bob_out;
  }
  EXPECT_EQ(bob_out.find("LEAK"), std::string::npos) << bob_out;
  EXPECT_EQ(bob_out.find("alice-private-data"), std::string::npos) << bob_out;
  EXPECT_EQ(bob_out.find(alice_token), std::string::npos) << bob_out;

  // Alice's AM read its token from the file: her app finishes.
  std::ofstream(gate + "/go") << "go\n";
  ASSERT_TRUE(waitFinal(alice_app, 60s));
  EXPECT_EQ(app(alice_app)["state"], "FINISHED") << app(alice_app).dump() << nms_[0].log();
  EXPECT_EQ(app(bob_app)["state"], "FINISHED") << app(bob_app).dump();
}

// Under TLS in mapped mode alice's DAG job runs to FINISHED: her AM, as her
// account, cannot read the NM's TLS files (0600, root's) and is given none of
// them; it verifies the RM and the NM with the copy of the CA bundle in its
// container directory and authenticates by its tokens (tls.client-certs:
// request on the RM and the NM). Her task, as the same account, cannot open
// the node's key (its certificate, public, is the control). Before, the NM
// named its own certificate and key to the AM, which a mapped account could
// not read, so no AM reached the RM under TLS.
TEST_F(RunAsIT, DagJobRunsUnderTlsAsTheSubmittersAccount) {
  ASSERT_FALSE(opensslPath().empty()) << "the openssl CLI is needed (deploy/install-deps.sh)";
  TestPki pki("pki");
  std::string ca = pki.makeCa("ca");
  Identity rm_id = pki.issue("ca", "rm"), nm_id = pki.issue("ca", "nm1");
  ASSERT_TRUE(pki.ok()) << pki.errors();
  // As an operator keeps them: the directory public, the keys the daemons' own.
  ::chmod(pki.path("").c_str(), 0755);
  for (const auto& f : {ca, rm_id.cert, nm_id.cert}) ::chmod(f.c_str(), 0644);
  for (const auto& f : {rm_id.key, nm_id.key, pki.path("ca.key")}) ::chmod(f.c_str(), 0600);
  // morpheusctl verifies the RM with the CA alone (and authenticates by token).
  ::setenv("MORPHEUS_TLS_CA", ca.c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("MORPHEUS_TLS_CA"); }
  } unset;
  std::string gate = freshDir("gate");
  ::chmod(gate.c_str(), 0755);
  std::vector<std::string> nm_args = {"--set", "nm.run-as=mapped", "--set",
                                      std::string("nm.run-as-map=alice=") + kAlice};
  for (const auto& a : tlsArgs(ca, nm_id)) nm_args.push_back(a);
  ASSERT_NO_FATAL_FAILURE(startCluster(1, tlsArgs(ca, rm_id), "memory=4096,vcores=4", nm_args));
  std::string job = writeJob(
      "name: alice-tls\n"
      "stages:\n"
      "  - name: probe\n"
      "    tasks: 1\n"
      "    command: \"cat " +
      nm_id.key + " && echo LEAK-key || echo DENIED-key; cat " + nm_id.cert +
      " > /dev/null && echo CERT-READABLE; while [ ! -e " + gate +
      "/go ]; do sleep 0.1; done\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctlAs("alice", {"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  std::vector<std::string> am_pids;
  ASSERT_TRUE(waitFor(
      [&] {
        am_pids = appProcesses(id, "morpheus-dag-am");
        return !am_pids.empty() && !appProcesses(id, "sleep 0.1").empty();
      },
      60s))
      << app(id).dump() << rm_.log() << nms_[0].log();
  uid_t alice_uid = uidOf(kAlice);
  bool am_as_alice = false;
  for (const auto& pid : am_pids) {
    auto env = processEnvironment(pid);
    EXPECT_EQ(env.count("MORPHEUS_TLS_CERT"), 0u) << "AM pid " << pid;
    EXPECT_EQ(env.count("MORPHEUS_TLS_KEY"), 0u) << "AM pid " << pid;
    ASSERT_EQ(env.count("MORPHEUS_TLS_CA"), 1u) << "AM pid " << pid;
    EXPECT_EQ(readFile(env["MORPHEUS_TLS_CA"]), readFile(ca));
    am_as_alice = am_as_alice || processUid(pid) == alice_uid;  // the launcher is root's
  }
  EXPECT_TRUE(am_as_alice) << "her AM runs as her account";
  std::ofstream(gate + "/go") << "go\n";
  ASSERT_TRUE(waitFinal(id, 60s)) << app(id).dump();
  EXPECT_EQ(app(id)["state"], "FINISHED") << app(id).dump() << rm_.log() << nms_[0].log();
  std::string task_out;
  for (const auto& d : containerDirs(id)) {
    if (!fs::exists(d / "am_token")) task_out += slurp(d / "stdout");
  }
  EXPECT_NE(task_out.find("DENIED-key"), std::string::npos) << task_out;
  EXPECT_NE(task_out.find("CERT-READABLE"), std::string::npos) << "control\n" << task_out;
  EXPECT_EQ(task_out.find("LEAK"), std::string::npos) << task_out;
  EXPECT_EQ(task_out.find("PRIVATE KEY"), std::string::npos) << task_out;
}

// A submitter with no local account here (mallory: no map entry, no account
// of that name) gets no container at all: her AM is refused and her app fails.
TEST_F(RunAsIT, SubmitterWithoutALocalAccountIsRefused) {
  ASSERT_NO_FATAL_FAILURE(startCluster(
      1, {"--set", "rm.max-am-attempts=1"}, "memory=4096,vcores=4",
      {"--set", "nm.run-as=mapped", "--set", std::string("nm.run-as-map=alice=") + kAlice}));
  ASSERT_EQ(getpwnam("mallory"), nullptr) << "the test needs no local account mallory";
  std::string job = writeJob(
      "name: nobody-here\n"
      "stages:\n"
      "  - name: s\n"
      "    tasks: 1\n"
      "    command: \"true\"\n"
      "    resources: {memory_mib: 256, vcores: 1}\n");
  auto [code, out] = ctlAs("mallory", {"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFinal(id, 60s)) << app(id).dump();
  EXPECT_EQ(app(id)["state"], "FAILED");
  EXPECT_TRUE(containerDirs(id).empty()) << "no directory was made for her";
  std::string logs = rm_.log() + nms_[0].log();
  EXPECT_NE(logs.find("user 'mallory': no local account 'mallory'"), std::string::npos) << logs;
}

// As root the NM refuses nm.run-as: nm-user (containers as root) unless
// nm.allow-root-containers is set, and then warns; the default (auto) is
// mapped. Before, it ran every container as root without a word.
TEST_F(RunAsIT, NmRefusesRootContainersWithoutTheExplicitOption) {
  std::string dir = freshDir("nm-root");
  auto [code, out] = runCommand({binary("morpheus-nm"), "--data-dir", dir + "/data", "--grpc-port",
                                 "0", "--http-port", "0", "--rm", "127.0.0.1:1", "--set",
                                 "nm.auth-disabled=true", "--set", "nm.run-as=nm-user"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("nm.allow-root-containers"), std::string::npos) << out;

  Process nm =
      Process::startDaemon("nm", freshDir("nm-root-allowed"),
                           {"--rm", "127.0.0.1:1", "--set", "nm.auth-disabled=true", "--set",
                            "nm.run-as=nm-user", "--set", "nm.allow-root-containers=true"});
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  EXPECT_NE(nm.log().find("SECURITY WARNING: containers run as root"), std::string::npos)
      << nm.log();

  Process dflt =
      Process::startDaemon("nm", freshDir("nm-default"),
                           {"--rm", "127.0.0.1:1", "--set", "nm.auth-disabled=true", "--set",
                            "nm.run-as=auto", "--set", "nm.allow-root-containers=false"});
  ASSERT_FALSE(dflt.grpcAddress().empty()) << dflt.log();
  EXPECT_NE(dflt.log().find("as each submitter's local account"), std::string::npos) << dflt.log();
}

// The privileged launcher checks everything it is given and runs nothing on
// any doubt (exit 126): an account below the minimum uid or unknown, a
// container root through a symlink, a cwd outside the root, a work dir of
// another account, an env file others may read, a relative command. The
// well-formed call runs the command as the account.
TEST_F(RunAsIT, LauncherRefusesEveryUncheckedInput) {
  std::string base = freshDir("launch");
  ::chmod(base.c_str(), 0755);
  std::string root = base + "/containers", dir = root + "/c_1";
  fs::create_directories(dir + "/work");
  ::chmod(root.c_str(), 0711);
  ::chmod(dir.c_str(), 0711);
  uid_t alice = uidOf(kAlice);
  ASSERT_EQ(::chown((dir + "/work").c_str(), alice, alice), 0);
  ::chmod((dir + "/work").c_str(), 0700);
  std::string env = std::string("PATH=/usr/bin:/bin") + '\0' + "MARK=ran";
  std::ofstream(dir + "/env", std::ios::binary) << env;
  ::chmod((dir + "/env").c_str(), 0600);
  fs::create_directory_symlink(root, base + "/link");
  std::string launcher = binary("morpheus-container-launch");
  auto run = [&](const std::string& cwd, std::vector<std::string> args) {
    std::string cmd = "cd '" + cwd + "' && exec '" + launcher + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    fs::remove(dir + "/work/out");
    return runCommand({"/bin/sh", "-c", cmd});
  };
  const std::string out_cmd = "echo $MARK $(id -u) > out";
  auto good = [&](const std::string& user, const std::string& min, const std::string& r) {
    return std::vector<std::string>{"--run-as", user, "--min-uid", min,  "--container-root",
                                    r,          "--", "/bin/sh",   "-c", out_cmd};
  };
  struct Case {
    const char* what;
    std::string cwd;
    std::vector<std::string> args;
  };
  std::vector<Case> bad = {
      {"root", dir, good("root", "1000", root)},
      {"below the minimum uid", dir, good("daemon", "1000", root)},
      {"min-uid 0", dir, good(kAlice, "0", root)},
      {"unknown account", dir, good("no-such-account-x", "1000", root)},
      {"not an account name", dir, good("../etc", "1000", root)},
      {"symlinked root", base + "/link/c_1", good(kAlice, "1000", base + "/link")},
      {"cwd outside the root", base, good(kAlice, "1000", root)},
      {"work dir of another account", dir, good(kBob, "1000", root)},
      {"relative command",
       dir,
       {"--run-as", kAlice, "--min-uid", "1000", "--container-root", root, "--", "sh", "-c",
        out_cmd}},
      {"missing --",
       dir,
       {"--run-as", kAlice, "--min-uid", "1000", "--container-root", root, "/bin/sh", "-c",
        out_cmd}},
  };
  for (const auto& c : bad) {
    auto [code, out] = run(c.cwd, c.args);
    EXPECT_EQ(code, 126) << c.what << ": " << out;
    EXPECT_FALSE(fs::exists(dir + "/work/out")) << c.what;
  }
  ::chmod((dir + "/env").c_str(), 0644);
  auto [code, out] = run(dir, good(kAlice, "1000", root));
  EXPECT_EQ(code, 126) << "env readable by others: " << out;
  ::chmod((dir + "/env").c_str(), 0600);

  std::tie(code, out) = run(dir, good(kAlice, "1000", root));
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(slurp(dir + "/work/out"), "ran " + std::to_string(alice) + "\n");
  EXPECT_EQ(slurp(dir + "/exit_status"), "0\n");
}

}  // namespace
}  // namespace morpheus::testing
