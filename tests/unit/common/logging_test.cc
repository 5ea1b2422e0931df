// setupLogging (common/logging.h): UTC timestamps with offset,
// rotation by size and count, reopening after an outside rotation.
#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace morpheus {
namespace {

namespace fs = std::filesystem;

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("morpheus-logging-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    // Back to stderr only, so no sink keeps a file of the removed dir open.
    ASSERT_TRUE(setupLogging("test", "info", "").isOk());
    fs::remove_all(dir_);
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

// A line starts with the UTC time and "+00:00" even when the local zone is not UTC.
TEST_F(LoggingTest, LinesCarryUtcTimestampWithOffset) {
  const char* old_tz = std::getenv("TZ");
  std::string saved = old_tz ? old_tz : "";
  ::setenv("TZ", "Asia/Kolkata", 1);  // UTC+05:30: a local stamp would differ in hour and minute
  ::tzset();
  std::string file = dir_ + "/rm.log";
  ASSERT_TRUE(setupLogging("rm", "info", file).isOk());
  std::time_t before = std::time(nullptr);
  spdlog::info("node nm1 registered");
  std::time_t after = std::time(nullptr);
  if (old_tz) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  std::string text = read(file);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      text, m,
      std::regex(
          R"((\d{4}-\d\d-\d\dT\d\d:\d\d):\d\d\.\d{3}\+00:00 I \[rm\] node nm1 registered\n)")))
      << text;
  // The minute printed is the UTC minute of the call (either side of a minute boundary).
  auto utcMinute = [](std::time_t t) {
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M", &tm);
    return std::string(buf);
  };
  EXPECT_TRUE(m[1] == utcMinute(before) || m[1] == utcMinute(after)) << text;
}

// With log.max-size the file rotates to nm.1.log ... and at most log.max-files are kept.
TEST_F(LoggingTest, RotatesBySizeKeepingMaxFiles) {
  LogOptions o;
  o.file = dir_ + "/nm.log";
  o.max_size_bytes = 2000;
  o.max_files = 2;
  ASSERT_TRUE(setupLogging("nm", o).isOk());
  for (int i = 0; i < 200; i++) spdlog::info("heartbeat {} from node nm1 with nothing new", i);
  EXPECT_TRUE(fs::exists(dir_ + "/nm.log"));
  EXPECT_TRUE(fs::exists(dir_ + "/nm.1.log"));
  EXPECT_TRUE(fs::exists(dir_ + "/nm.2.log"));
  EXPECT_FALSE(fs::exists(dir_ + "/nm.3.log"));
  for (const char* f : {"/nm.log", "/nm.1.log", "/nm.2.log"}) {
    EXPECT_LE(fs::file_size(dir_ + f), 2000u) << f;
  }
  EXPECT_NE(read(dir_ + "/nm.log").find("heartbeat 199 "), std::string::npos);
}

// After the file is moved away (logrotate), reopenLogFile starts a new file at the old path.
TEST_F(LoggingTest, ReopenAfterOutsideRotationWritesTheNewFile) {
  std::string file = dir_ + "/inference.log";
  ASSERT_TRUE(setupLogging("inference", "info", file).isOk());
  spdlog::info("before rotation");
  fs::rename(file, file + ".1");
  spdlog::info("still to the moved file");
  ASSERT_TRUE(reopenLogFile().isOk());
  spdlog::info("after reopen");
  std::string moved = read(file + ".1"), fresh = read(file);
  EXPECT_NE(moved.find("before rotation"), std::string::npos) << moved;
  EXPECT_NE(moved.find("still to the moved file"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("after reopen"), std::string::npos) << moved;
  EXPECT_NE(fresh.find("after reopen"), std::string::npos) << fresh;
  EXPECT_EQ(fresh.find("before rotation"), std::string::npos) << fresh;
}

// Bad options are refused naming the option; the previous logger stays.
TEST_F(LoggingTest, BadOptionsAreRefusedNamingTheOption) {
  std::string file = dir_ + "/rm.log";
  ASSERT_TRUE(setupLogging("rm", "info", file).isOk());
  LogOptions o;
  o.file = dir_ + "/other.log";
  o.max_size_bytes = 1000;
  o.max_files = 0;
  Status st = setupLogging("rm", o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("log.max-files"), std::string::npos) << st.message();
  o.max_files = 2;
  o.level = "loud";
  st = setupLogging("rm", o);
  EXPECT_NE(st.message().find("log.level"), std::string::npos) << st.message();
  o.level = "info";
  o.file = "/proc/version/cannot-be-a-dir/rm.log";
  st = setupLogging("rm", o);
  EXPECT_NE(st.message().find("log.file"), std::string::npos) << st.message();
  spdlog::info("still the first logger");
  EXPECT_NE(read(file).find("still the first logger"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/other.log"));
}

}  // namespace
}  // namespace morpheus
