// StateStore conformance tests (SQLite): atomic batches, durability, ordering.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "store/state_store.h"

namespace morpheus::store {
namespace {

std::string tempDb(const std::string& tag) {
  auto dir =
      std::filesystem::temp_directory_path() / ("morpheus-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / (tag + ".db");
  std::filesystem::remove(p);
  return p.string();
}

// Writes, overwrites, deletes and lists sorted by key.
TEST(StateStoreTest, CommitGetListDelete) {
  auto s = openStateStore("sqlite", tempDb("basic"));
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto& st = **s;
  ASSERT_TRUE(st.commit({{"r", "b", "2"}, {"r", "a", "1"}, {"x", "a", "other"}}).isOk());
  ASSERT_TRUE(st.commit({{"r", "b", "22"}}).isOk());
  auto l = st.list("r");
  ASSERT_TRUE(l.isOk());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ((*l)[1].second, "22");
  ASSERT_TRUE(st.commit({{"r", "a", std::nullopt}}).isOk());
  EXPECT_FALSE(st.get("r", "a")->has_value());
  EXPECT_EQ(**st.get("x", "a"), "other");
}

// Binary values survive unchanged.
TEST(StateStoreTest, ValuesAreOpaqueBytes) {
  auto s = openStateStore("sqlite", tempDb("bin"));
  std::string v("a\0b\xff", 4);
  ASSERT_TRUE((*s)->commit({{"n", "k", v}}).isOk());
  EXPECT_EQ(**(*s)->get("n", "k"), v);
}

// A committed batch survives the process being SIGKILLed right after commit returns.
TEST(StateStoreTest, CommitIsDurableAcrossCrash) {
  std::string path = tempDb("crash");
  pid_t pid = ::fork();
  if (pid == 0) {
    auto s = openStateStore("sqlite", path);
    if (!s.isOk() || !(*s)->commit({{"n", "k1", "v1"}, {"n", "k2", "v2"}}).isOk()) _exit(1);
    ::kill(::getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child must die by SIGKILL after committing";
  auto s = openStateStore("sqlite", path);
  ASSERT_TRUE(s.isOk());
  auto l = (*s)->list("n");
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->size(), 2u);
}

// Unknown kinds and unusable locations are INVALID_ARGUMENT naming the key.
TEST(StateStoreTest, BadConfigNamesTheKey) {
  auto k = openStateStore("zookeeper", "x");
  ASSERT_FALSE(k.isOk());
  EXPECT_NE(k.status().message().find("state-store.kind"), std::string::npos);
  auto l = openStateStore("sqlite", "/nonexistent-dir/x/y.db");
  ASSERT_FALSE(l.isOk());
  EXPECT_NE(l.status().message().find("state-store.location"), std::string::npos);
}

// Finding 10: an existing 0-byte database is refused (naming the file and the way out)
// unless init is asked for; a missing file is a fresh start.
TEST(StateStoreTest, EmptyDatabaseFileIsRefusedUnlessInit) {
  std::string path = tempDb("empty");
  { std::ofstream(path).flush(); }
  ASSERT_EQ(std::filesystem::file_size(path), 0u);
  auto s = openStateStore("sqlite", path);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(path), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("state-store.init"), std::string::npos);
  auto init = openStateStore("sqlite", path, {true});
  ASSERT_TRUE(init.isOk()) << init.status().toString();
  EXPECT_TRUE((*init)->commit({{"n", "k", "v"}}).isOk());
  EXPECT_TRUE(openStateStore("sqlite", tempDb("fresh")).isOk()) << "a missing file is fresh";
}

// ":memory:" is SQLite's private in-memory database, not a file: any number of
// stores open at once, and no file named ":memory:" is created or locked.
TEST(StateStoreTest, InMemoryStoresNeedNoFile) {
  auto a = openStateStore("sqlite", ":memory:");
  auto b = openStateStore("sqlite", ":memory:");
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_TRUE(b.isOk()) << b.status().message();
  EXPECT_FALSE(std::filesystem::exists(":memory:"));
}

// Finding 10: two stores on one database file are refused, whichever path reaches it, and the
// lock goes with the store (and with a killed process).
TEST(StateStoreTest, SecondStoreOnTheSameFileIsRefused) {
  std::string path = tempDb("locked");
  auto first = openStateStore("sqlite", path);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  auto link = std::filesystem::path(path).parent_path() / "locked-link.db";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(path, link);
  for (const std::string& other :
       {path, link.string(),
        (std::filesystem::path(path).parent_path() / "." / std::filesystem::path(path).filename())
            .string()}) {
    auto second = openStateStore("sqlite", other);
    ASSERT_FALSE(second.isOk()) << other;
    EXPECT_EQ(second.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(second.status().message().find("locked"), std::string::npos)
        << second.status().message();
  }
  first->reset();
  EXPECT_TRUE(openStateStore("sqlite", link.string()).isOk()) << "released with the store";
  pid_t pid = ::fork();
  if (pid == 0) {
    auto s = openStateStore("sqlite", path);
    if (!s.isOk()) _exit(1);
    ::kill(::getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(openStateStore("sqlite", path).isOk()) << "a killed holder releases the lock";
}

}  // namespace
}  // namespace morpheus::store
