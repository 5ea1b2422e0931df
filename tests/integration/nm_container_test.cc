// The NM's ContainerManager end to end: a real morpheus-rm and
// morpheus-nm on loopback; the test plays the AM, issuing container tokens
// with nm1's key as the RM derives it (deriveNodeKey of the RM's master
// secret, <rm data dir>/token-secret) and calling the NM's StartContainers
// directly.
//
// The RM kills running containers of applications it does not know and
// acknowledges completed ones (the NM then forgets them). These containers
// belong to no submitted application, so heartbeats are set a minute apart and
// every check happens after the NM's first heartbeat, before its second.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/token.h"
#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/container_manager.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;

class NmContainerIT : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string rm_dir = freshDir("rm");
    std::vector<std::string> rm_args = {"--set", "rm.heartbeat-interval=60s", "--set",
                                        "rm.node-expiry=300s"};
    for (auto& a : rmAuthArgs()) rm_args.push_back(std::move(a));
    rm_ = Process::startDaemon("rm", rm_dir, rm_args);
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    std::ifstream in(rm_dir + "/token-secret");
    std::getline(in, master_);
    ASSERT_FALSE(master_.empty()) << "the RM keeps its token secret in " << rm_dir
                                  << "/token-secret";
    signer_.emplace(deriveNodeKey(master_, NodeId("nm1")));
    nm_dir_ = freshDir("nm");
    std::vector<std::string> nm_args = {
        "--rm",        rm_.grpcAddress(),      "--node-id", "nm1",
        "--resources", "memory=2048,vcores=2", "--set",     "nm.monitor-interval=100ms",
        "--set",       "nm.kill-grace=500ms",  "--set",     "nm.heartbeat-interval=60s"};
    for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
    nm_ = Process::startDaemon("nm", nm_dir_, nm_args);
    ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
    stub_ = v1::ContainerManager::NewStub(makeChannel(nm_.grpcAddress(), TlsOptions{}));
    ASSERT_TRUE(waitFor(
        [&] {
          auto m = httpRequest(nm_.httpAddress(), "GET", "/metrics");
          return m.body.find("morpheus_nm_heartbeats_total 1") != std::string::npos;
        },
        20s))
        << "the NM registered and sent its first heartbeat\n"
        << nm_.log();
  }

  // A token as the RM issues it for nm1 (expiring in 10 minutes unless
  // `expires` is given).
  std::string token(const std::string& container, const std::string& app,
                    const std::string& node = "nm1", int64_t memory_mib = 128,
                    std::optional<TimePoint> expires = std::nullopt) {
    TimePoint exp = expires.value_or(fromEpochMs(nowMs()) + std::chrono::minutes(10));
    return issueContainerToken(
        *signer_, {ContainerId(container), AppId(app), NodeId(node), Resource(memory_mib, 1), exp});
  }
  // GetContainerLogs of `id` (stdout) presenting `tok`; the status and the data.
  std::pair<grpc::Status, std::string> logs(const std::string& id, const std::string& tok) {
    v1::GetContainerLogsRequest req;
    req.set_container_id(id);
    req.set_stream("stdout");
    req.set_token(tok);
    v1::GetContainerLogsResponse resp;
    auto ctx = makeContext(Millis(5000));
    grpc::Status st = stub_->GetContainerLogs(ctx.get(), req, &resp);
    return {st, resp.data()};
  }
  v1::StartContainersResponse start(const std::string& id, const std::string& tok,
                                    const std::string& command,
                                    const std::vector<std::string>& args) {
    v1::StartContainersRequest req;
    auto* r = req.add_requests();
    r->mutable_container()->set_container_id(id);
    r->mutable_container()->set_node_id("nm1");
    r->mutable_container()->set_token(tok);
    r->mutable_launch_context()->set_command(command);
    for (const auto& a : args) r->mutable_launch_context()->add_args(a);
    v1::StartContainersResponse resp;
    auto ctx = makeContext(Millis(5000));
    grpc::Status st = stub_->StartContainers(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }
  // The status of `id` (of app_it unless `app` is given), asked with a token
  // of its application.
  std::optional<v1::ContainerStatus> status(const std::string& id,
                                            const std::string& app = "app_it") {
    v1::GetContainerStatusesRequest req;
    req.add_container_ids(id);
    req.set_token(token("c_status", app));
    v1::GetContainerStatusesResponse resp;
    auto ctx = makeContext(Millis(5000));
    if (!stub_->GetContainerStatuses(ctx.get(), req, &resp).ok() || resp.statuses_size() != 1)
      return std::nullopt;
    return resp.statuses(0);
  }
  v1::ContainerStatus waitComplete(const std::string& id, std::chrono::milliseconds timeout = 20s) {
    std::optional<v1::ContainerStatus> s;
    EXPECT_TRUE(waitFor(
        [&] {
          s = status(id);
          return s && s->state() == v1::CONTAINER_COMPLETE;
        },
        timeout))
        << id << " did not complete\n"
        << nm_.log();
    return s.value_or(v1::ContainerStatus());
  }

  Process rm_, nm_;
  std::string master_, nm_dir_;
  std::optional<TokenSigner> signer_;
  std::unique_ptr<v1::ContainerManager::Stub> stub_;
};

// A container with a valid token runs as a real process; its completed status
// (exit code 0) and stdout are served; a duplicate id is ALREADY_EXISTS; only
// a token of the same application stops a container, and that stop is KILLED.
TEST_F(NmContainerIT, ContainerRunsAndReportsExitCodeZero) {
  auto resp = start("c_ok", token("c_ok", "app_it"), "sh",
                    {"-c", "echo hello from $MORPHEUS_CONTAINER_ID"});
  ASSERT_EQ(resp.started_size(), 1) << resp.DebugString();
  auto s = waitComplete("c_ok");
  EXPECT_EQ(s.exit_status(), 0) << s.DebugString();
  EXPECT_EQ(s.exit_reason(), v1::EXIT_REASON_SUCCESS) << s.DebugString();
  EXPECT_GT(s.end_ms(), 0);
  EXPECT_GE(s.end_ms(), s.start_ms());
  EXPECT_EQ(s.resource().memory_mib(), 128) << "the allocation comes from the token";
  auto [lst, data] = logs("c_ok", token("c_ok", "app_it"));
  ASSERT_TRUE(lst.ok()) << lst.error_message();
  EXPECT_EQ(data, "hello from c_ok\n");

  auto dup = start("c_ok", token("c_ok", "app_it"), "true", {});
  ASSERT_EQ(dup.failed_size(), 1) << dup.DebugString();
  EXPECT_EQ(dup.failed(0).code(), "ALREADY_EXISTS");

  // The stop below checks SIGTERM-then-status of a command that is running;
  // wait until the command itself has started (it prints), so the stop does
  // not land in the wrapper's fork-to-exec window (a known NM race, see the
  // stop-9 note: there the command would only get the SIGKILL).
  ASSERT_EQ(
      start("c_sleep", token("c_sleep", "app_it"), "sh", {"-c", "echo started; exec sleep 60"})
          .started_size(),
      1);
  ASSERT_TRUE(waitFor(
      [&] {
        auto [st, out] = logs("c_sleep", token("c_sleep", "app_it"));
        return st.ok() && out == "started\n";
      },
      std::chrono::seconds(10)));
  auto stop = [&](const std::string& tok) {
    v1::StopContainersRequest req;
    req.add_container_ids("c_sleep");
    req.set_token(tok);
    v1::StopContainersResponse out;
    auto c = makeContext(Millis(5000));
    EXPECT_TRUE(stub_->StopContainers(c.get(), req, &out).ok());
    return out;
  };
  auto denied = stop(token("c_x", "app_other"));
  ASSERT_EQ(denied.failed_size(), 1) << denied.DebugString();
  EXPECT_EQ(denied.failed(0).code(), "PERMISSION_DENIED");
  EXPECT_EQ(status("c_sleep")->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(stop(token("c_ok", "app_it")).stopped_size(), 1) << "any token of the same application";
  auto k = waitComplete("c_sleep");
  EXPECT_EQ(k.exit_reason(), v1::EXIT_REASON_KILLED) << k.DebugString();
  EXPECT_EQ(k.exit_status(), 128 + 15) << "sleep dies of the SIGTERM within the grace";
}

// Forged, foreign-node and foreign-container tokens are PERMISSION_DENIED and
// nothing starts.
TEST_F(NmContainerIT, BadTokenIsRefused) {
  std::string forged =
      issueContainerToken(TokenSigner("not-the-rm-secret"),
                          {ContainerId("c_bad"), AppId("app_it"), NodeId("nm1"), Resource(128, 1),
                           fromEpochMs(nowMs()) + std::chrono::minutes(10)});
  // What the RM signed before per-node keys: the master secret itself.
  std::string master_signed = issueContainerToken(
      TokenSigner(master_), {ContainerId("c_bad"), AppId("app_it"), NodeId("nm1"), Resource(128, 1),
                             fromEpochMs(nowMs()) + std::chrono::minutes(10)});
  // nm2's key (what nm2's NM learns) signing a token that names nm1.
  std::string other_node_key =
      issueContainerToken(TokenSigner(deriveNodeKey(master_, NodeId("nm2"))),
                          {ContainerId("c_bad"), AppId("app_it"), NodeId("nm1"), Resource(128, 1),
                           fromEpochMs(nowMs()) + std::chrono::minutes(10)});
  struct Case {
    std::string id, tok;
  } cases[] = {{"c_bad", forged},
               {"c_bad", "garbage"},
               {"c_bad", token("c_bad", "app_it", "nm2")},
               {"c_bad", token("c_other", "app_it")},
               {"c_bad", master_signed},
               {"c_bad", other_node_key}};
  for (const auto& c : cases) {
    auto resp = start(c.id, c.tok, "true", {});
    EXPECT_EQ(resp.started_size(), 0) << resp.DebugString();
    ASSERT_EQ(resp.failed_size(), 1) << resp.DebugString();
    EXPECT_EQ(resp.failed(0).code(), "PERMISSION_DENIED") << resp.DebugString();
  }
  EXPECT_FALSE(status("c_bad").has_value()) << "no container was created";
}

// A container touching 300 MiB with a 100 MiB allocation is killed with
// MEMORY_EXCEEDED and a diagnostic naming the limit.
TEST_F(NmContainerIT, MemoryHogIsKilledWithADiagnosticNamingTheLimit) {
  auto resp = start("c_hog", token("c_hog", "app_it", "nm1", 100), "python3",
                    {"-c", "import time\nx = bytearray(b'a') * (300 << 20)\ntime.sleep(60)"});
  ASSERT_EQ(resp.started_size(), 1) << resp.DebugString();
  auto s = waitComplete("c_hog");
  EXPECT_EQ(s.exit_reason(), v1::EXIT_REASON_MEMORY_EXCEEDED) << s.DebugString();
  EXPECT_EQ(s.exit_status(), 128 + 9) << s.DebugString();
  EXPECT_NE(s.diagnostics().find("exceeded its limit of 100 MiB"), std::string::npos)
      << s.DebugString();
}

// A token past its expiry starts nothing
// (PERMISSION_DENIED naming the expiry); an expired token of the same app
// still reads the container's logs and stops it. Old tokens had no expiry.
TEST_F(NmContainerIT, ExpiredTokenStartsNothingButStillStopsAndReadsLogs) {
  TimePoint past = fromEpochMs(nowMs()) - std::chrono::seconds(1);
  auto denied = start("c_late", token("c_late", "app_it", "nm1", 128, past), "sh",
                      {"-c", "echo should not run"});
  EXPECT_EQ(denied.started_size(), 0) << denied.DebugString();
  ASSERT_EQ(denied.failed_size(), 1) << denied.DebugString();
  EXPECT_EQ(denied.failed(0).code(), "PERMISSION_DENIED");
  EXPECT_NE(denied.failed(0).message().find("expired at"), std::string::npos)
      << denied.failed(0).message();
  EXPECT_NE(denied.failed(0).message().find(std::to_string(toEpochMs(past))), std::string::npos)
      << "the message names the expiry: " << denied.failed(0).message();
  EXPECT_FALSE(status("c_late").has_value()) << "no container was created";

  ASSERT_EQ(start("c_live", token("c_live", "app_it"), "sh", {"-c", "echo up; exec sleep 60"})
                .started_size(),
            1);
  std::string expired = token("c_other", "app_it", "nm1", 128, past);
  ASSERT_TRUE(waitFor([&] { return logs("c_live", expired).second == "up\n"; }, 10s))
      << "an expired token of the app reads the logs: "
      << logs("c_live", expired).first.error_message();
  v1::StopContainersRequest req;
  req.add_container_ids("c_live");
  req.set_token(expired);
  v1::StopContainersResponse out;
  auto ctx = makeContext(Millis(5000));
  ASSERT_TRUE(stub_->StopContainers(ctx.get(), req, &out).ok());
  EXPECT_EQ(out.stopped_size(), 1) << out.DebugString();
  EXPECT_EQ(waitComplete("c_live").exit_reason(), v1::EXIT_REASON_KILLED);
}

// A token that expired longer than nm.expired-token-grace ago (1 h by
// default) no longer stops, lists or reads the logs of its app's containers:
// PERMISSION_DENIED naming the option. Before, an expired token did so for
// ever.
TEST_F(NmContainerIT, TokenExpiredBeyondTheGraceStopsAndReadsNothing) {
  ASSERT_EQ(start("c_kept", token("c_kept", "app_it"), "sh", {"-c", "echo up; exec sleep 60"})
                .started_size(),
            1);
  ASSERT_TRUE(
      waitFor([&] { return logs("c_kept", token("c_a", "app_it")).second == "up\n"; }, 10s));
  std::string stale =
      token("c_other", "app_it", "nm1", 128, fromEpochMs(nowMs()) - std::chrono::hours(2));
  auto [lst, data] = logs("c_kept", stale);
  EXPECT_EQ(lst.error_code(), grpc::StatusCode::PERMISSION_DENIED) << lst.error_message();
  EXPECT_NE(lst.error_message().find("nm.expired-token-grace"), std::string::npos)
      << lst.error_message();
  EXPECT_EQ(data, "");
  v1::StopContainersRequest req;
  req.add_container_ids("c_kept");
  req.set_token(stale);
  v1::StopContainersResponse out;
  auto ctx = makeContext(Millis(5000));
  EXPECT_EQ(stub_->StopContainers(ctx.get(), req, &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::GetContainerStatusesRequest sreq;
  sreq.set_token(stale);
  v1::GetContainerStatusesResponse sresp;
  auto sctx = makeContext(Millis(5000));
  EXPECT_EQ(stub_->GetContainerStatuses(sctx.get(), sreq, &sresp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(status("c_kept")->state(), v1::CONTAINER_RUNNING) << "the stale token stopped nothing";
}

// An AM token in the launch environment never reaches the container's
// environment (any process of the same account could read it from
// /proc/<pid>/environ, and every child inherits it): the container gets
// MORPHEUS_AM_TOKEN_FILE naming a 0400 file holding it, and its working dir
// (HOME) is a 0700 work dir of its own.
TEST_F(NmContainerIT, AmTokenIsHandedOverInAFileNotTheEnvironment) {
  v1::StartContainersRequest req;
  auto* r = req.add_requests();
  r->mutable_container()->set_container_id("c_am");
  r->mutable_container()->set_token(token("c_am", "app_it"));
  r->mutable_launch_context()->set_command("sh");
  r->mutable_launch_context()->add_args("-c");
  r->mutable_launch_context()->add_args(
      "echo env=${MORPHEUS_AM_TOKEN:-none} home=$HOME pwd=$(pwd); cat \"$MORPHEUS_AM_TOKEN_FILE\"");
  (*r->mutable_launch_context()->mutable_env())["MORPHEUS_AM_TOKEN"] = "am-secret-0123456789";
  v1::StartContainersResponse resp;
  auto ctx = makeContext(Millis(5000));
  ASSERT_TRUE(stub_->StartContainers(ctx.get(), req, &resp).ok());
  ASSERT_EQ(resp.started_size(), 1) << resp.DebugString();
  waitComplete("c_am");
  std::string dir = nm_dir_ + "/local/containers/c_am";
  auto [st, out] = logs("c_am", token("c_x", "app_it"));
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(out, "env=none home=" + dir + "/work pwd=" + dir + "/work\nam-secret-0123456789\n");
  namespace fs = std::filesystem;
  EXPECT_EQ(fs::status(dir + "/am_token").permissions(), fs::perms::owner_read);
  EXPECT_EQ(fs::status(dir + "/work").permissions(), fs::perms::owner_all);
}

// GetContainerStatuses needs a token of an application and lists only that
// application's containers: without a token PERMISSION_DENIED; with app_b's
// token, app_a's container is left out (as an unknown id is). Before, anyone
// listed every container on the node.
TEST_F(NmContainerIT, ContainerStatusesNeedATokenAndShowOnlyItsApplication) {
  ASSERT_EQ(start("c_a", token("c_a", "app_a"), "sh", {"-c", "exec sleep 60"}).started_size(), 1);
  ASSERT_EQ(start("c_b", token("c_b", "app_b"), "sh", {"-c", "exec sleep 60"}).started_size(), 1);
  auto list = [&](const std::string& tok, std::vector<std::string> ids) {
    v1::GetContainerStatusesRequest req;
    for (const auto& id : ids) req.add_container_ids(id);
    req.set_token(tok);
    v1::GetContainerStatusesResponse resp;
    auto ctx = makeContext(Millis(5000));
    grpc::Status st = stub_->GetContainerStatuses(ctx.get(), req, &resp);
    std::vector<std::string> got;
    for (const auto& c : resp.statuses()) got.push_back(c.container_id());
    return std::make_pair(st, got);
  };
  auto [none_st, none] = list("", {});
  EXPECT_EQ(none_st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(none.empty());
  auto [all_st, all] = list(token("c_x", "app_b"), {});
  ASSERT_TRUE(all_st.ok()) << all_st.error_message();
  EXPECT_EQ(all, std::vector<std::string>{"c_b"});
  auto [named_st, named] = list(token("c_x", "app_b"), {"c_a", "c_b"});
  ASSERT_TRUE(named_st.ok()) << named_st.error_message();
  EXPECT_EQ(named, std::vector<std::string>{"c_b"});
  EXPECT_TRUE(status("c_a", "app_a").has_value());
}

// GetContainerLogs needs a token of the container's
// application; without one, with another application's token, or with a
// token signed by another node's key it is PERMISSION_DENIED. The old NM
// served any container's logs to anyone.
TEST_F(NmContainerIT, ContainerLogsNeedATokenOfTheContainersApplication) {
  ASSERT_EQ(start("c_secret", token("c_secret", "app_it"), "sh", {"-c", "echo secret output"})
                .started_size(),
            1);
  waitComplete("c_secret");
  std::string other_node =
      issueContainerToken(TokenSigner(deriveNodeKey(master_, NodeId("nm2"))),
                          {ContainerId("c_any"), AppId("app_it"), NodeId("nm2"), Resource(128, 1),
                           fromEpochMs(nowMs()) + std::chrono::minutes(10)});
  for (const std::string& tok : {std::string(), token("c_x", "app_other"), other_node}) {
    auto [st, data] = logs("c_secret", tok);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
    EXPECT_EQ(data, "");
  }
  auto [st, data] = logs("c_secret", token("c_any", "app_it"));
  ASSERT_TRUE(st.ok()) << "any token of the app: " << st.error_message();
  EXPECT_EQ(data, "secret output\n");
}

// Container ids are validated before they are used as a
// path: "../../.." and other non-ids are INVALID_ARGUMENT naming container_id
// for logs, start, stop and status, and no directory appears outside
// <nm.local-dir>/containers. The old NM read <local-dir>/containers/../../..
TEST_F(NmContainerIT, ContainerIdsThatAreNotIdsAreRefused) {
  const std::vector<std::string> bad = {
      "../../..", "..", ".", "a/b", "../escape", "", "c_ok/../../x", std::string(129, 'a'),
      "-rf",      "a b"};
  for (const auto& id : bad) {
    auto [st, data] = logs(id, token(id, "app_it"));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "'" << id << "'";
    EXPECT_NE(st.error_message().find("container_id"), std::string::npos) << st.error_message();

    auto resp = start(id, token(id, "app_it"), "sh", {"-c", "echo escaped > ../../../escaped"});
    EXPECT_EQ(resp.started_size(), 0) << "'" << id << "' " << resp.DebugString();
    ASSERT_EQ(resp.failed_size(), 1) << resp.DebugString();
    EXPECT_EQ(resp.failed(0).code(), "INVALID_ARGUMENT") << resp.DebugString();

    v1::StopContainersRequest sreq;
    sreq.add_container_ids(id);
    sreq.set_token(token("c_any", "app_it"));
    v1::StopContainersResponse sresp;
    auto ctx = makeContext(Millis(5000));
    ASSERT_TRUE(stub_->StopContainers(ctx.get(), sreq, &sresp).ok());
    ASSERT_EQ(sresp.failed_size(), 1) << sresp.DebugString();
    EXPECT_EQ(sresp.failed(0).code(), "INVALID_ARGUMENT");

    v1::GetContainerStatusesRequest qreq;
    qreq.add_container_ids(id);
    v1::GetContainerStatusesResponse qresp;
    auto qctx = makeContext(Millis(5000));
    EXPECT_EQ(stub_->GetContainerStatuses(qctx.get(), qreq, &qresp).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_FALSE(std::filesystem::exists(nm_dir_ + "/local/escape"));
  EXPECT_FALSE(std::filesystem::exists(nm_dir_ + "/escaped"));
  int dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(nm_dir_ + "/local/containers"))
    dirs += e.is_directory() ? 1 : 0;
  EXPECT_EQ(dirs, 0) << "no container dir was made";
}

// The harness's teardown reaper: a container a SIGKILLed NM left running is
// stopped by stopContainersUnder (from the NM's record, by session), so test
// runs leave no `sleep` behind. Without the reaper the sleep outlives the test.
TEST_F(NmContainerIT, HarnessStopsContainersAKilledNmLeftRunning) {
  ASSERT_EQ(start("c_orphan", token("c_orphan", "app_it"), "sh", {"-c", "echo up; exec sleep 297"})
                .started_size(),
            1);
  ASSERT_TRUE(
      waitFor([&] { return logs("c_orphan", token("c_orphan", "app_it")).second == "up\n"; }, 10s));
  ASSERT_EQ(nm_.signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  auto sleeping = [] { return runCommand({"/usr/bin/pgrep", "-f", "^sleep 297$"}).first == 0; };
  ASSERT_TRUE(waitFor(sleeping, 5s)) << "the container outlives its NM (by design)";
  EXPECT_EQ(stopContainersUnder(nm_dir_), 1);
  EXPECT_FALSE(sleeping());
  EXPECT_EQ(stopContainersUnder(nm_dir_), 0) << "nothing left to stop";
}

// Before registration there is no token key: StartContainers is UNAVAILABLE.
TEST(NmContainerStartup, UnregisteredNodeAnswersUnavailable) {
  std::vector<std::string> args = {"--rm", "127.0.0.1:1"};
  for (auto& a : nmAuthArgs("nm1")) args.push_back(std::move(a));
  Process nm = Process::startDaemon("nm", freshDir("nm"), args);
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  auto stub = v1::ContainerManager::NewStub(makeChannel(nm.grpcAddress(), TlsOptions{}));
  v1::StartContainersRequest req;
  req.add_requests()->mutable_container()->set_container_id("c1");
  v1::StartContainersResponse resp;
  auto ctx = makeContext(Millis(5000));
  EXPECT_EQ(stub->StartContainers(ctx.get(), req, &resp).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

// An unusable nm.local-dir is a one-line start-up error naming the option.
TEST(NmContainerStartup, UnusableLocalDirRefusesToStart) {
  std::string dir = freshDir("nm-baddir");
  std::ofstream(dir + "/a-file") << "x";
  auto [code, out] = runCommand({binary("morpheus-nm"), "--data-dir", dir + "/data", "--grpc-port",
                                 "0", "--http-port", "0", "--rm", "127.0.0.1:1", "--set",
                                 "nm.local-dir=" + dir + "/a-file/local", "--set",
                                 "nm.token-file=" + nodeTokenFile("nm1")});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("morpheus-nm: nm.local-dir"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
}  // namespace morpheus::testing
