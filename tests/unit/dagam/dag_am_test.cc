// Driver test: an in-process fake RM (ApplicationMaster service) and fake NM
// (ContainerManager) on loopback; the fake NM runs tasks as real `sh`
// processes and reports their exits to the fake RM.
#include "dagam/dag_am.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"

extern char** environ;

namespace morpheus::dagam {
namespace {

class FakeCluster final : public v1::ApplicationMaster::Service,
                          public v1::ContainerManager::Service {
 public:
  explicit FakeCluster(std::string workdir) : workdir_(std::move(workdir)) {}
  ~FakeCluster() override {
    for (auto& t : threads_) t.join();
  }

  std::string nm_address;  // set once the server has started
  std::string token = "tok";

  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest* req,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    if (req->am_token() != token) return {grpc::StatusCode::PERMISSION_DENIED, "bad am token"};
    std::lock_guard<std::mutex> l(mu_);
    ++registrations;
    // After a simulated RM restart, report the containers still running.
    for (const auto& [id, c] : running_) *resp->add_running_containers() = c;
    resp->mutable_max_container()->set_memory_mib(4096);
    resp->mutable_max_container()->set_vcores(4);
    resp->set_queue("root.adhoc");
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1::AllocateRequest* req,
                        v1::AllocateResponse* resp) override {
    std::lock_guard<std::mutex> l(mu_);
    ++allocate_calls;
    if (resync_when_running && !running_.empty() && !resynced) {
      resynced = true;
      resp->set_resync(true);
      return grpc::Status::OK;
    }
    for (const auto& a : req->asks()) {
      max_ask[a.request_id()] = std::max(max_ask[a.request_id()], a.count());
      for (int i = 0; i < a.count(); ++i) {
        auto* c = resp->add_allocated();
        c->set_container_id("container_" + std::to_string(++next_id_));
        c->set_node_id("node1");
        c->set_node_address(nm_address);
        *c->mutable_resource() = a.capability();
        c->set_priority(a.priority());
        c->set_token("ctok");
        c->set_allocation_request_id(a.request_id());
      }
    }
    for (const auto& id : req->releases()) released.push_back(id);
    for (auto& s : completed_) *resp->add_completed() = s;
    completed_.clear();
    last_progress = req->progress();
    max_stage_reports = std::max(max_stage_reports, req->stages_size());
    resp->set_response_id(req->response_id() + 1);
    return grpc::Status::OK;
  }

  grpc::Status FinishApplicationMaster(grpc::ServerContext*,
                                       const v1::FinishApplicationMasterRequest* req,
                                       v1::FinishApplicationMasterResponse*) override {
    std::lock_guard<std::mutex> l(mu_);
    finish = *req;
    finished = true;
    return grpc::Status::OK;
  }

  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    for (const auto& r : req->requests()) {
      if (r.container().token() != "ctok") {
        auto* f = resp->add_failed();
        f->set_container_id(r.container().container_id());
        f->set_code("PERMISSION_DENIED");
        continue;
      }
      std::vector<std::string> argv{r.launch_context().command()};
      for (const auto& a : r.launch_context().args()) argv.push_back(a);
      std::vector<std::string> env{"PATH=/usr/bin:/bin"};
      for (const auto& [k, v] : r.launch_context().env()) env.push_back(k + "=" + v);
      std::string id = r.container().container_id();
      std::lock_guard<std::mutex> l(mu_);
      running_[id] = r.container();
      launched.push_back(r.launch_context().env().at("MORPHEUS_STAGE") + "/" +
                         r.launch_context().env().at("MORPHEUS_TASK_INDEX"));
      threads_.emplace_back([this, argv, env, id] { runProcess(id, argv, env); });
      resp->add_started(id);
    }
    return grpc::Status::OK;
  }

  std::mutex mu_;
  bool resync_when_running = false;  // answer one Allocate with resync while tasks run
  bool resynced = false;
  int registrations = 0;
  int allocate_calls = 0;
  bool finished = false;
  float last_progress = 0;
  int max_stage_reports = 0;
  v1::FinishApplicationMasterRequest finish;
  std::vector<std::string> launched;
  std::vector<std::string> released;
  std::map<std::string, int> max_ask;

 private:
  void runProcess(const std::string& id, const std::vector<std::string>& argv,
                  const std::vector<std::string>& env) {
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, workdir_.c_str());
    pid_t pid = -1;
    int rc = posix_spawn(&pid, a[0], &fa, nullptr, a.data(), e.data());
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    int code = rc != 0 ? 127 : (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    v1::ContainerStatus s;
    s.set_container_id(id);
    s.set_state(v1::CONTAINER_COMPLETE);
    s.set_exit_status(code);
    s.set_exit_reason(code == 0 ? v1::EXIT_REASON_SUCCESS : v1::EXIT_REASON_FAILURE);
    std::lock_guard<std::mutex> l(mu_);
    running_.erase(id);
    completed_.push_back(s);
  }

  std::string workdir_;
  int next_id_ = 0;
  std::vector<v1::ContainerStatus> completed_;
  std::map<std::string, v1::Container> running_;
  std::vector<std::thread> threads_;
};

struct Harness {
  std::string dir;
  std::unique_ptr<FakeCluster> fake;
  std::unique_ptr<grpc::Server> server;
  std::string address;

  explicit Harness(const std::string& tag) {
    dir = ::testing::TempDir() + "/dagam_" + tag + "_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    fake = std::make_unique<FakeCluster>(dir);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(static_cast<v1::ApplicationMaster::Service*>(fake.get()));
    b.RegisterService(static_cast<v1::ContainerManager::Service*>(fake.get()));
    server = b.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port);
    fake->nm_address = address;
  }
  ~Harness() {
    server->Shutdown();
    fake.reset();
  }
  int run(const std::string& yaml) {
    auto spec = parseJobSpec(yaml);
    EXPECT_TRUE(spec.isOk()) << spec.status().toString();
    RealClock clock;
    DagJob job(std::move(spec).value(), "app_42", clock);
    AmOptions o;
    o.rm_am_address = address;
    o.app_id = "app_42";
    o.am_token = "tok";
    o.heartbeat = Millis(50);
    o.rm_retry_window = Millis(2000);
    std::atomic<bool> stop{false};
    DagAmDriver driver(o, job, stop);
    return driver.run();
  }
};

// A 2-stage job runs end to end: map tasks write files, reduce reads them, the AM finishes
// SUCCEEDED.
TEST(DagAmDriverTest, RunsTwoStageJobEndToEnd) {
  Harness h("e2e");
  int rc = h.run(R"(
name: wc
stages:
  - name: map
    tasks: 3
    command: "echo map-$MORPHEUS_TASK_INDEX-$MORPHEUS_APP_ID > out-$MORPHEUS_TASK_INDEX"
    reads: [/data/in]
  - name: reduce
    depends_on: [map]
    tasks: 1
    command: "cat out-0 out-1 out-2 > result && test $MORPHEUS_STAGE = reduce"
    writes: [/data/out]
)");
  EXPECT_EQ(rc, 0);
  std::ifstream in(h.dir + "/result");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "map-0-app_42\nmap-1-app_42\nmap-2-app_42\n");
  std::lock_guard<std::mutex> l(h.fake->mu_);
  ASSERT_TRUE(h.fake->finished);
  EXPECT_EQ(h.fake->finish.final_status(), v1::FINAL_STATUS_SUCCEEDED);
  ASSERT_EQ(h.fake->finish.files_read_size(), 1);
  EXPECT_EQ(h.fake->finish.files_read(0).path(), "/data/in");
  ASSERT_EQ(h.fake->finish.files_written_size(), 1);
  EXPECT_EQ(h.fake->finish.files_written(0).path(), "/data/out");
  EXPECT_GE(h.fake->finish.files_written(0).time_ms(), h.fake->finish.files_read(0).time_ms());
  EXPECT_EQ(h.fake->launched.back(), "reduce/0");
  EXPECT_EQ(h.fake->max_ask["map"], 3);
  // The final stage reports (Jockey's history at the RM) go with the finish.
  ASSERT_EQ(h.fake->finish.stages_size(), 2);
  EXPECT_EQ(h.fake->finish.stages(1).name(), "reduce");
  EXPECT_EQ(h.fake->finish.stages(1).depends_on(0), "map");
  EXPECT_EQ(h.fake->finish.stages(0).completed(), 3);
  EXPECT_EQ(h.fake->finish.stages(1).completed(), 1);
  EXPECT_EQ(h.fake->finish.stages(1).running_elapsed_ms_size(), 0);
  EXPECT_GT(h.fake->max_stage_reports, 0) << "allocate calls carry the stage reports too";
}

// A task that always exits non-zero is tried max_attempts times and the AM finishes FAILED.
TEST(DagAmDriverTest, FailingTaskFailsJobAfterMaxAttempts) {
  Harness h("fail");
  int rc = h.run(
      "name: bad\nstages: [{name: s, tasks: 1, max_attempts: 2, command: 'echo $MORPHEUS_ATTEMPT "
      ">> attempts; exit 3'}]\n");
  EXPECT_EQ(rc, 1);
  std::ifstream in(h.dir + "/attempts");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "1\n2\n");
  std::lock_guard<std::mutex> l(h.fake->mu_);
  ASSERT_TRUE(h.fake->finished);
  EXPECT_EQ(h.fake->finish.final_status(), v1::FINAL_STATUS_FAILED);
  EXPECT_NE(h.fake->finish.diagnostics().find("exit status 3"), std::string::npos)
      << h.fake->finish.diagnostics();
}

// On resync the AM registers again and keeps the containers the RM reports running.
TEST(DagAmDriverTest, ResyncReRegistersAndKeepsRunningTasks) {
  Harness h("resync");
  h.fake->resync_when_running = true;
  int rc = h.run("name: r\nstages: [{name: s, tasks: 2, command: 'sleep 0.5; echo x >> done'}]\n");
  EXPECT_EQ(rc, 0);
  std::lock_guard<std::mutex> l(h.fake->mu_);
  EXPECT_TRUE(h.fake->resynced);
  EXPECT_EQ(h.fake->registrations, 2);
  // Both tasks ran exactly once: the running containers were kept, not rerun.
  EXPECT_EQ(h.fake->launched.size(), 2u);
  EXPECT_EQ(h.fake->finish.final_status(), v1::FINAL_STATUS_SUCCEEDED);
  EXPECT_TRUE(h.fake->released.empty());
}

// With the RM unreachable, the AM gives up after the retry window with exit code 1.
TEST(DagAmDriverTest, GivesUpWhenRmUnreachablePastRetryWindow) {
  RealClock clock;
  DagJob job(
      std::move(parseJobSpec("name: j\nstages: [{name: s, tasks: 1, command: x}]\n")).value(),
      "app_1", clock);
  AmOptions o;
  o.rm_am_address = "127.0.0.1:1";  // nothing listens on port 1
  o.app_id = "app_1";
  o.rm_retry_window = Millis(600);
  o.rpc_timeout = Millis(300);
  std::atomic<bool> stop{false};
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(DagAmDriver(o, job, stop).run(), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, Millis(600));
}

}  // namespace
}  // namespace morpheus::dagam
