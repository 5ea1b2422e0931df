// Unit tests for the common core: Resource math, Status/Result, virtual clock, metrics.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/resource.h"
#include "common/status.h"
#include "common/validate.h"

namespace morpheus {
namespace {

// Checked arithmetic reports overflow in any dimension instead of wrapping.
TEST(ValidateTest, CheckedResourceArithmetic) {
  EXPECT_EQ(*checkedSum(Resource(1, 2), Resource(3, 4)), Resource(4, 6));
  EXPECT_FALSE(checkedSum(Resource(INT64_MAX, 1), Resource(1, 1)).has_value());
  EXPECT_EQ(*checkedProduct(Resource(1024, 1), 3), Resource(3072, 3));
  EXPECT_FALSE(checkedProduct(Resource(INT64_MAX / 2, 1), 3).has_value());
  Resource g(1, 1);
  g.setExtended("gpu", INT64_MAX / 2);
  EXPECT_FALSE(checkedProduct(g, 4).has_value());
  EXPECT_FALSE(checkedSum(g, g.operator*(2)).has_value());
}

// UTF-8 validation refuses stray bytes, overlong forms and surrogates; node ids refuse
// separators and "..".
// Names people read: control characters and bidi formatting characters are
// refused naming the field and the code point; other Unicode is fine.
TEST(ValidateTest, DisplayNamesRefuseControlAndBidiCharacters) {
  EXPECT_TRUE(checkDisplayName("nightly etl (ünïcode, 日本)", "name").isOk());
  EXPECT_TRUE(checkDisplayName("", "name").isOk());
  struct Case {
    std::string text, code;
  };
  for (const Case& c : std::vector<Case>{{std::string("a\0b", 3), "U+0000"},
                                         {"tab\there", "U+0009"},
                                         {"del\x7f", "U+007F"},
                                         {"c1\xc2\x85", "U+0085"},
                                         {"invoice\xe2\x80\xae"
                                          "fdp.exe",
                                          "U+202E"},
                                         {"iso\xe2\x81\xa6x", "U+2066"},
                                         {"lrm\xe2\x80\x8e", "U+200E"},
                                         {"line\xe2\x80\xa8", "U+2028"}}) {
    Status st = checkDisplayName(c.text, "name");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.code;
    EXPECT_EQ(st.message().rfind("name: contains " + c.code, 0), 0u) << st.message();
  }
  EXPECT_NE(checkDisplayName("\xff", "tags").message().find("tags: is not valid UTF-8"),
            std::string::npos);
}

TEST(ValidateTest, Utf8AndNodeIds) {
  EXPECT_TRUE(validUtf8("alice \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(validUtf8("al\xffice"));
  EXPECT_FALSE(validUtf8("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(validUtf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(validUtf8("\xe2\x82"));      // truncated
  EXPECT_TRUE(validateNodeId("nm1", "f").isOk());
  EXPECT_TRUE(validateNodeId("127.0.0.1:4567", "f").isOk());
  for (std::string bad :
       std::vector<std::string>{"a|b", "a/b", "..", "x..y", "", "a b", std::string(256, 'a')}) {
    Status st = validateNodeId(bad, "nm.node-id");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message().rfind("nm.node-id:", 0), 0u) << st.message();
  }
}

// Per-dimension fit: one dimension over capacity is enough to not fit.
TEST(ResourceTest, FitsInIsPerDimension) {
  Resource cap(4096, 4);
  EXPECT_TRUE(Resource(4096, 4).fitsIn(cap));
  EXPECT_FALSE(Resource(4097, 1).fitsIn(cap));
  EXPECT_FALSE(Resource(1, 5).fitsIn(cap));
  Resource gpu(1, 1);
  gpu.setExtended("gpu", 1);
  EXPECT_FALSE(gpu.fitsIn(cap));
  cap.setExtended("gpu", 2);
  EXPECT_TRUE(gpu.fitsIn(cap));
}

// Dominant share is the max over dimensions; zero capacity with demand is infinite.
TEST(ResourceTest, DominantShareTakesMaxDimension) {
  Resource cap(1000, 10);
  EXPECT_DOUBLE_EQ(Resource(500, 1).dominantShare(cap), 0.5);
  EXPECT_DOUBLE_EQ(Resource(100, 8).dominantShare(cap), 0.8);
  Resource g(0, 0);
  g.setExtended("gpu", 1);
  EXPECT_TRUE(std::isinf(g.dominantShare(cap)));
  EXPECT_DOUBLE_EQ(Resource().dominantShare(cap), 0.0);
}

// Arithmetic keeps extended dimensions and drops zeroes.
TEST(ResourceTest, ArithmeticHandlesExtendedDimensions) {
  Resource a(10, 1), b(5, 2);
  a.setExtended("gpu", 2);
  b.setExtended("gpu", 2);
  Resource d = a - b;
  EXPECT_EQ(d.memoryMib(), 5);
  EXPECT_EQ(d.vcores(), -1);
  EXPECT_TRUE(d.extended().empty());
  EXPECT_TRUE(d.anyNegative());
  EXPECT_EQ((a + b).extendedValue("gpu"), 4);
  EXPECT_EQ((b * 3).memoryMib(), 15);
  EXPECT_EQ(
      Resource::max(a, b), Resource(10, 2) + Resource() + [] {
        Resource r;
        r.setExtended("gpu", 2);
        return r;
      }());
}

// The inline paths for memory and vcores and the out-of-line ones for
// extended dimensions agree: copies are deep, the list goes with its last
// entry (isZero, ==), and r += r / r -= r read r as it was.
TEST(ResourceTest, ExtendedListIsCopiedDeepAndDroppedWithItsLastEntry) {
  Resource a(10, 1);
  a.setExtended("gpu", 2);
  Resource b = a;
  b.setExtended("gpu", 3);
  EXPECT_EQ(a.extendedValue("gpu"), 2);
  Resource c(1, 1);
  c = a;
  EXPECT_EQ(c, a);
  c.setExtended("fpga", 1);
  EXPECT_FALSE(c == a);
  EXPECT_EQ(a.extendedValue("fpga"), 0);
  c = Resource(10, 1);
  EXPECT_TRUE(c.extended().empty());
  EXPECT_FALSE(c == a);
  EXPECT_EQ(c, Resource(10, 1));

  Resource z;
  z.setExtended("gpu", 1);
  EXPECT_FALSE(z.isZero());
  z.setExtended("gpu", 0);
  EXPECT_TRUE(z.isZero());
  EXPECT_EQ(z, Resource());

  Resource r(4, 2);
  r.setExtended("gpu", 2);
  r += r;
  EXPECT_EQ(r.memoryMib(), 8);
  EXPECT_EQ(r.extendedValue("gpu"), 4);
  r -= r;
  EXPECT_TRUE(r.isZero());

  EXPECT_TRUE(Resource(1, 1).fitsIn(a));
  EXPECT_FALSE(a.fitsIn(Resource(100, 100)));
  EXPECT_TRUE(Resource::min(a, Resource(5, 5)).extended().empty());
  EXPECT_EQ(Resource::min(a, Resource(5, 5)), Resource(5, 1));
  EXPECT_EQ((a * 2).extendedValue("gpu"), 4);
  EXPECT_TRUE((Resource(1, 1) * 0).isZero());
  Resource moved = std::move(b);
  EXPECT_EQ(moved.extendedValue("gpu"), 3);
}

// countFitting is the per-dimension floor minimum.
TEST(ResourceTest, CountFittingUsesScarcestDimension) {
  EXPECT_EQ(Resource(10240, 3).countFitting(Resource(1024, 1)), 3);
  EXPECT_EQ(Resource(2048, 30).countFitting(Resource(1024, 1)), 2);
  EXPECT_EQ(Resource(0, 30).countFitting(Resource(1024, 1)), 0);
  // countCovering is the per-dimension ceiling maximum.
  EXPECT_EQ(Resource(2500, 1).countCovering(Resource(1024, 1)), 3);
  EXPECT_EQ(Resource(1024, 4).countCovering(Resource(1024, 1)), 4);
  EXPECT_EQ(Resource(-1024, 0).countCovering(Resource(1024, 1)), 0);
}

// Parsing names the field and the bad part.
TEST(ResourceTest, ParseReportsFieldOnError) {
  auto ok = Resource::parse("memory=2048,vcores=2,gpu=1", "nm.resources");
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->memoryMib(), 2048);
  EXPECT_EQ(ok->extendedValue("gpu"), 1);
  auto bad = Resource::parse("memory=lots", "nm.resources");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("nm.resources.memory"), std::string::npos);
  EXPECT_FALSE(Resource::parse("memory=-1", "x").isOk());
  EXPECT_FALSE(Resource::parse("memory", "x").isOk());
}

// Result carries either a value or the error; context is prefixed.
TEST(StatusTest, ResultAndContext) {
  Result<int> r = 5;
  EXPECT_TRUE(r.isOk());
  EXPECT_EQ(*r, 5);
  Result<int> e = invalidArgument("deadline", "must be in the future");
  EXPECT_FALSE(e.isOk());
  EXPECT_EQ(e.status().toString(), "INVALID_ARGUMENT: deadline: must be in the future");
  EXPECT_EQ(e.status().withContext("reservation r1").message(),
            "reservation r1: deadline: must be in the future");
}

// Timers run in deadline order, ties in scheduling order, and now() is the deadline inside.
TEST(VirtualClockTest, AdvanceRunsDueTimersInOrder) {
  VirtualClock clock(fromEpochMs(1000));
  std::vector<std::pair<int, int64_t>> ran;
  clock.schedule(fromEpochMs(3000), [&] { ran.push_back({3, toEpochMs(clock.now())}); });
  clock.schedule(fromEpochMs(2000), [&] { ran.push_back({2, toEpochMs(clock.now())}); });
  clock.schedule(fromEpochMs(2000), [&] { ran.push_back({22, toEpochMs(clock.now())}); });
  TimerId late = clock.schedule(fromEpochMs(9000), [&] { ran.push_back({9, 0}); });
  clock.advance(Millis(1500));
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_EQ(ran[0], std::make_pair(2, int64_t{2000}));
  EXPECT_EQ(ran[1], std::make_pair(22, int64_t{2000}));
  EXPECT_EQ(toEpochMs(clock.now()), 2500);
  clock.advance(Millis(1000));
  ASSERT_EQ(ran.size(), 3u);
  EXPECT_TRUE(clock.cancel(late));
  clock.advance(Millis(100000));
  EXPECT_EQ(ran.size(), 3u);
}

// A timer scheduled by a callback inside the window runs in the same advance.
TEST(VirtualClockTest, TimersScheduledDuringAdvanceRun) {
  VirtualClock clock;
  int ticks = 0;
  std::function<void()> tick = [&] {
    ticks++;
    clock.scheduleAfter(Millis(100), tick);
  };
  clock.scheduleAfter(Millis(100), tick);
  clock.advance(Millis(1000));
  EXPECT_EQ(ticks, 10);
  EXPECT_EQ(clock.pendingTimers(), 1u);
}

// cancel() does not wait for a callback already running; cancelAndWait()
// returns only after it has, so an owner's stop() can free what it uses.
TEST(RealClockTest, CancelAndWaitWaitsForARunningCallback) {
  RealClock clock;
  std::atomic<bool> started{false}, release{false}, finished{false};
  TimerId id = clock.scheduleAfter(Millis(0), [&] {
    started = true;
    while (!release) std::this_thread::sleep_for(Millis(1));
    std::this_thread::sleep_for(Millis(20));
    finished = true;
  });
  while (!started) std::this_thread::sleep_for(Millis(1));
  EXPECT_FALSE(clock.cancel(id));  // running: too late, and cancel() returns at once
  std::atomic<bool> returned{false};
  bool finished_when_returned = false;
  std::thread stopper([&] {
    EXPECT_FALSE(clock.cancelAndWait(id));
    finished_when_returned = finished;
    returned = true;
  });
  std::this_thread::sleep_for(Millis(50));
  EXPECT_FALSE(returned) << "cancelAndWait returned while the callback was still running";
  release = true;
  stopper.join();
  EXPECT_TRUE(finished_when_returned);
}

// A pending timer is cancelled at once; from inside its own callback
// cancelAndWait() does not wait for itself.
TEST(RealClockTest, CancelAndWaitPendingOrFromItsOwnCallback) {
  RealClock clock;
  std::atomic<int> ran{0};
  TimerId late = clock.scheduleAfter(Millis(60000), [&] { ran++; });
  EXPECT_TRUE(clock.cancelAndWait(late));
  EXPECT_FALSE(clock.cancelAndWait(0));  // an owner that never armed its timer
  std::atomic<bool> done{false};
  auto self = std::make_shared<TimerId>(0);
  std::atomic<bool> armed{false};
  *self = clock.scheduleAfter(Millis(0), [&, self] {
    while (!armed) std::this_thread::sleep_for(Millis(1));
    EXPECT_FALSE(clock.cancelAndWait(*self));
    done = true;
  });
  armed = true;
  for (int i = 0; i < 5000 && !done; i++) std::this_thread::sleep_for(Millis(1));
  EXPECT_TRUE(done) << "cancelAndWait from its own callback deadlocked";
  EXPECT_EQ(ran, 0);
}

// The virtual clock's callbacks run inside advance(): a stop on another
// thread waits for the one running, and one inside a callback does not.
TEST(VirtualClockTest, CancelAndWaitWaitsForTheAdvancingThread) {
  VirtualClock clock;
  std::atomic<bool> started{false}, release{false}, finished{false};
  TimerId id = clock.scheduleAfter(Millis(10), [&] {
    started = true;
    while (!release) std::this_thread::sleep_for(Millis(1));
    finished = true;
  });
  std::thread advancer([&] { clock.advance(Millis(10)); });
  while (!started) std::this_thread::sleep_for(Millis(1));
  std::atomic<bool> returned{false};
  std::thread stopper([&] {
    clock.cancelAndWait(id);
    returned = true;
  });
  std::this_thread::sleep_for(Millis(50));
  EXPECT_FALSE(returned);
  release = true;
  stopper.join();
  advancer.join();
  EXPECT_TRUE(finished);
  bool inner = false;
  auto self = std::make_shared<TimerId>(0);
  *self = clock.scheduleAfter(Millis(1), [&, self] { inner = !clock.cancelAndWait(*self); });
  clock.advance(Millis(1));
  EXPECT_TRUE(inner);
  EXPECT_FALSE(clock.cancelAndWait(0));  // no timer: returns, nothing running
}

// Prometheus text has HELP/TYPE lines, labels and histogram buckets.
TEST(MetricsTest, RendersPrometheusText) {
  MetricsRegistry reg;
  reg.counter("morpheus_test_total", "A counter", {{"reason", "full"}}).inc(2);
  reg.gauge("morpheus_test_gauge", "A gauge").set(7);
  auto& h = reg.histogram("morpheus_test_latency_seconds", "Latency", {0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  std::string text = reg.render();
  EXPECT_NE(text.find("# TYPE morpheus_test_total counter"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_total{reason=\"full\"} 2"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_gauge 7"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_latency_seconds_bucket{le=\"0.1\"} 1"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_latency_seconds_bucket{le=\"1\"} 2"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_latency_seconds_bucket{le=\"+Inf\"} 3"), std::string::npos);
  EXPECT_NE(text.find("morpheus_test_latency_seconds_count 3"), std::string::npos);
  EXPECT_EQ(reg.valueOf("morpheus_test_gauge"), 7);
  EXPECT_EQ(reg.valueOf("absent"), -1);
}

// process_* metrics come from /proc/self (CPU seconds from the process's CPU
// clock) in base units: CPU seconds grow with work, open fds count a newly
// opened descriptor, start time is the recent past.
TEST(MetricsTest, ProcessMetricsReflectThisProcess) {
  MetricsRegistry reg;
  ASSERT_TRUE(updateProcessMetrics(reg).isOk());
  double cpu0 = reg.valueOf("process_cpu_seconds_total");
  double fds0 = reg.valueOf("process_open_fds");
  // 50 ms of this process's CPU time (not wall time: the machine may be busy).
  auto cpuNow = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  volatile double sink = 0;
  for (double c0 = cpuNow(); cpuNow() - c0 < 0.05;) sink = sink + std::sqrt(sink + 1.0);
  int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(updateProcessMetrics(reg).isOk());
  ::close(fd);
  EXPECT_GT(reg.valueOf("process_cpu_seconds_total"), cpu0);
  EXPECT_EQ(reg.valueOf("process_open_fds"), fds0 + 1);
  EXPECT_GT(reg.valueOf("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(reg.valueOf("process_virtual_memory_bytes"),
            reg.valueOf("process_resident_memory_bytes"));
  EXPECT_GT(reg.valueOf("process_max_fds"), 0);
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double start = reg.valueOf("process_start_time_seconds");
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600);  // a test binary started within the hour
  EXPECT_NE(reg.render().find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
}

// A metric declared once exists from the start: a counter renders at 0 with
// its HELP and TYPE lines before its first increment (a rate() alert has a
// series to watch), each pre-declared label value too.
TEST(MetricsTest, DeclaredCounterIsServedAtZeroWithHelpAndType) {
  MetricsRegistry reg;
  Counter& grants = reg.counter("morpheus_test_grants_total", "Grants");
  reg.counter("morpheus_test_denials_total", "Denials", {{"reason", "budget"}});
  std::string text = reg.render();
  EXPECT_NE(text.find("# HELP morpheus_test_grants_total Grants\n# TYPE morpheus_test_grants_total "
                      "counter\nmorpheus_test_grants_total 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nmorpheus_test_denials_total{reason=\"budget\"} 0\n"), std::string::npos)
      << text;
  grants.inc();
  EXPECT_EQ(reg.valueOf("morpheus_test_grants_total"), 1);
  // Declaring again (a second component instance) yields the same counter.
  EXPECT_EQ(&reg.counter("morpheus_test_grants_total", "Grants"), &grants);
}

// A family whose label values come at run time is listed (HELP and TYPE)
// before it has a child; with() creates children; describe() and
// --print-metrics' format name its keys, values and that more may come.
TEST(MetricsTest, FamiliesAreListedBeforeTheirFirstChildAndDescribed) {
  MetricsRegistry reg;
  GaugeFamily per_queue = reg.gaugeFamily("morpheus_test_queue_bytes", "Per queue", {"queue"});
  std::string text = reg.render();
  EXPECT_NE(text.find("# TYPE morpheus_test_queue_bytes gauge\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("morpheus_test_queue_bytes{"), std::string::npos) << text;
  per_queue.with({{"queue", "root.a"}}).set(2);
  reg.gauge("morpheus_test_plain_seconds", "Plain");
  EXPECT_NE(reg.render().find("morpheus_test_queue_bytes{queue=\"root.a\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(formatDescriptions(reg.describe()),
            "morpheus_test_plain_seconds\tgauge\t-\tPlain\n"
            "morpheus_test_queue_bytes\tgauge\tqueue=root.a,...\tPer queue\n");
}

// replaceAll swaps a family's children as a whole: a queue that is gone
// leaves /metrics.
TEST(MetricsTest, ReplaceAllDropsChildrenThatAreGone) {
  MetricsRegistry reg;
  GaugeFamily f = reg.gaugeFamily("morpheus_test_queue_apps", "Apps", {"queue"});
  f.replaceAll({{{{"queue", "a"}}, 1}, {{{"queue", "b"}}, 2}});
  f.replaceAll({{{{"queue", "b"}}, 3}});
  std::string text = reg.render();
  EXPECT_EQ(text.find("queue=\"a\""), std::string::npos) << text;
  EXPECT_NE(text.find("morpheus_test_queue_apps{queue=\"b\"} 3\n"), std::string::npos) << text;
}

// Collectors run at each render, before the text is built, and stop running
// once their handle is gone.
TEST(MetricsTest, CollectorsRunAtRenderUntilTheirHandleIsGone) {
  MetricsRegistry reg;
  Gauge& g = reg.gauge("morpheus_test_collected", "Collected");
  int runs = 0;
  auto handle = reg.addCollector([&] { g.set(++runs); });
  EXPECT_NE(reg.render().find("morpheus_test_collected 1\n"), std::string::npos);
  EXPECT_NE(reg.render().find("morpheus_test_collected 2\n"), std::string::npos);
  handle.reset();
  reg.render();
  EXPECT_EQ(runs, 2);
}

// HELP text escapes backslash and newline, so one metric is always two
// comment lines (exposition format 0.0.4).
TEST(MetricsTest, HelpTextIsEscaped) {
  MetricsRegistry reg;
  reg.counter("morpheus_test_escaped_total", "a\\b\nc");
  EXPECT_NE(reg.render().find("# HELP morpheus_test_escaped_total a\\\\b\\nc\n"), std::string::npos)
      << reg.render();
}

// Re-declaring a name with another type or other label keys is a
// programming error: it aborts rather than serving two meanings.
TEST(MetricsDeathTest, ConflictingDeclarationsAbort) {
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.counter("morpheus_test_x_total", "x");
        reg.gauge("morpheus_test_x_total", "x");
      },
      "another type");
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.counterFamily("morpheus_test_y_total", "y", {"queue"}).with({{"user", "u"}});
      },
      "other label keys");
}

// A counter advanced to a running total never goes back.
TEST(MetricsTest, CounterAdvanceToNeverLowers) {
  Counter c;
  c.advanceTo(5);
  c.advanceTo(3);
  EXPECT_EQ(c.value(), 5);
  c.advanceTo(7.5);
  EXPECT_EQ(c.value(), 7.5);
}

// ScopedTimer observes its scope's wall time in seconds into the histogram's bucket.
TEST(MetricsTest, ScopedTimerObservesSecondsOfItsScope) {
  MetricsRegistry reg;
  auto& h = reg.histogram("morpheus_test_duration_seconds", "t", latencyBucketsSeconds());
  {
    ScopedTimer t(h);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  ASSERT_EQ(h.count(), 1u);
  EXPECT_GE(h.sum(), 0.003);
  EXPECT_LT(h.sum(), 1.0);
  EXPECT_EQ(h.cumulative()[3], 0u);  // nothing at or under 1 ms
}

}  // namespace
}  // namespace morpheus

#include "common/token.h"

namespace morpheus {
namespace {

// A signed token verifies; a tampered payload or another key does not.
TEST(TokenTest, SignAndVerify) {
  TokenSigner s("secret-1");
  std::string t = s.sign("container_1|app_1|node-a");
  auto ok = s.verify(t);
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(*ok, "container_1|app_1|node-a");
  std::string forged = t;
  forged[10] = forged[10] == 'x' ? 'y' : 'x';
  EXPECT_EQ(s.verify(forged).status().code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(TokenSigner("secret-2").verify(t).isOk());
  EXPECT_FALSE(s.verify("no-dot").isOk());
  EXPECT_EQ(randomHex(16).size(), 32u);
  EXPECT_NE(randomHex(16), randomHex(16));
}

}  // namespace
}  // namespace morpheus

namespace morpheus {
namespace {

std::string hexOf(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

ContainerTokenInfo tokenInfo(const std::string& node, TimePoint expires) {
  return {ContainerId("application_1_0001_17_3"), AppId("application_1_0001"), NodeId(node),
          Resource(256, 2), expires};
}

// K_node = HMAC-SHA256(master, "node-key|" + node): a known answer (Python's
// hmac), deterministic, and different per node and per master secret.
TEST(TokenTest, NodeKeyIsHmacOfTheMasterSecretPerNode) {
  EXPECT_EQ(hexOf(deriveNodeKey("master-secret", NodeId("nm1"))),
            "e867f459c28cd76aea76a84c39d67b786dda2c16b7e86fd3b81444a36a1f0c7b");
  EXPECT_EQ(deriveNodeKey("master-secret", NodeId("nm1")),
            deriveNodeKey("master-secret", NodeId("nm1")));
  EXPECT_NE(deriveNodeKey("master-secret", NodeId("nm1")),
            deriveNodeKey("master-secret", NodeId("nm2")));
  EXPECT_NE(deriveNodeKey("master-secret", NodeId("nm1")),
            deriveNodeKey("other-secret", NodeId("nm1")));
}

// A container token signed with nm1's key verifies with nm1's key only (not
// nm2's, not the master secret's), and carries its expiry to the millisecond.
TEST(TokenTest, ContainerTokenVerifiesOnlyWithItsNodesKeyAndCarriesTheExpiry) {
  TimePoint exp = fromEpochMs(1800000123456);
  TokenSigner nm1(deriveNodeKey("master-secret", NodeId("nm1")));
  std::string tok = issueContainerToken(nm1, tokenInfo("nm1", exp));
  auto info = verifyContainerToken(nm1, tok);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->container.value(), "application_1_0001_17_3");
  EXPECT_EQ(info->app.value(), "application_1_0001");
  EXPECT_EQ(info->node.value(), "nm1");
  EXPECT_EQ(info->resource, Resource(256, 2));
  EXPECT_EQ(info->expires, exp);
  TokenSigner nm2(deriveNodeKey("master-secret", NodeId("nm2")));
  EXPECT_EQ(verifyContainerToken(nm2, tok).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(verifyContainerToken(TokenSigner("master-secret"), tok).status().code(),
            StatusCode::kPermissionDenied);
}

// The expiry field is parsed strictly: a token without one (the format
// before expiry) or with a non-numeric, negative or suffixed one is
// PERMISSION_DENIED even though its signature verifies.
TEST(TokenTest, MalformedOrMissingExpiryIsRefused) {
  TokenSigner s("k");
  const std::string base = "c|application_1_0001_1_1|application_1_0001|nm1|128|1";
  ASSERT_TRUE(verifyContainerToken(s, s.sign(base + "|1800000000000|alice")).isOk());
  for (const std::string& payload :
       {base, base + "|", base + "|abc|alice", base + "|-5|alice", base + "|12x|alice",
        base + "| 12|alice", base + "|99999999999999999999999|alice", base + "|1|a|b"}) {
    auto r = verifyContainerToken(s, s.sign(payload));
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << payload;
  }
  EXPECT_NE(verifyContainerToken(s, s.sign(base + "|abc|alice")).status().message().find("expiry"),
            std::string::npos);
}

// The submitting user travels signed in the token (the NM runs the container
// as that user's account); a token of the format without it (seven fields) is
// refused, and a user name with '|' makes a token no verifier accepts.
TEST(TokenTest, ContainerTokenCarriesTheSubmittingUser) {
  TokenSigner s("k");
  ContainerTokenInfo info = tokenInfo("nm1", fromEpochMs(1800000000000));
  info.user = "alice";
  auto back = verifyContainerToken(s, issueContainerToken(s, info));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->user, "alice");
  EXPECT_EQ(verifyContainerToken(
                s, s.sign("c|application_1_0001_1_1|application_1_0001|nm1|128|1|1800000000000"))
                .status()
                .code(),
            StatusCode::kPermissionDenied);
  info.user = "root|x";
  EXPECT_EQ(verifyContainerToken(s, issueContainerToken(s, info)).status().code(),
            StatusCode::kPermissionDenied);
}

// Token files are checked as ssh checks key files: readable or writable by
// other accounts (mode & 077) is refused naming the field and the mode, or
// only warned about with kWarn; 0600 of this account passes.
TEST(TokenTest, SecretFileOthersMayReadIsRefused) {
  std::string path = ::testing::TempDir() + "/secret-" + std::to_string(::getpid());
  std::ofstream(path) << "0123456789abcdef0123\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Status st = checkSecretFile(path, "nm.token-file");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("nm.token-file"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("0644"), std::string::npos) << st.message();
  EXPECT_EQ(readSecretTokenFile(path, "nm.token-file").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(checkSecretFile(path, "nm.token-file", SecretFileCheck::kWarn).isOk());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(checkSecretFile(path, "x").code(), StatusCode::kPermissionDenied);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(checkSecretFile(path, "x").isOk());
  auto tok = readSecretTokenFile(path, "x");
  ASSERT_TRUE(tok.isOk()) << tok.status().toString();
  EXPECT_EQ(*tok, "0123456789abcdef0123");
  ::unlink(path.c_str());
}

// checkNotExpired: valid strictly before the expiry; at or after it the
// error names the expiry (UTC and epoch ms).
TEST(TokenTest, ExpiryIsCheckedAgainstNow) {
  TimePoint exp = fromEpochMs(1800000000000);  // 2027-01-15T08:00:00Z
  ContainerTokenInfo info = tokenInfo("nm1", exp);
  EXPECT_TRUE(checkNotExpired(info, exp - Millis(1)).isOk());
  Status at = checkNotExpired(info, exp);
  EXPECT_EQ(at.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(at.message().find("expired at 2027-01-15T08:00:00Z"), std::string::npos)
      << at.message();
  EXPECT_NE(at.message().find("1800000000000"), std::string::npos) << at.message();
  EXPECT_FALSE(checkNotExpired(info, exp + Millis(1)).isOk());
}

// Container ids: the RM's forms pass; anything that could leave
// <local-dir>/containers (or is empty or overlong) is INVALID_ARGUMENT naming
// container_id.
TEST(TokenTest, ContainerIdsAreValidatedBeforeUseAsAPath) {
  for (const std::string& ok :
       {std::string("application_1700000000000_0001_1700000000123_7"),
        std::string("application_1700000000000_0001_1700000000123_am1"), std::string("c_ok"),
        std::string("a-b"), std::string(kMaxContainerIdLength, 'a')}) {
    EXPECT_TRUE(validateContainerId(ok).isOk()) << ok;
  }
  for (const std::string& bad :
       {std::string(), std::string("."), std::string(".."), std::string("../../.."),
        std::string("a/b"), std::string("/etc"), std::string("a.b"), std::string("-x"),
        std::string("_x"), std::string("a b"), std::string("a|b"), std::string("a\nb"),
        std::string(kMaxContainerIdLength + 1, 'a')}) {
    Status st = validateContainerId(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.message().rfind("container_id: ", 0), 0u) << st.message();
  }
}

}  // namespace
}  // namespace morpheus
