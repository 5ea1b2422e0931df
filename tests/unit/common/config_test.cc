// Unit tests for the config loader: defaults, nesting, overrides, errors naming the key.
#include <gtest/gtest.h>

#include "common/config.h"

namespace morpheus {
namespace {

struct Opts {
  int64_t port = -1;
  Millis expiry{0};
  std::string agent;
  bool flag = false;
  double alpha = 0;
  Resource res;
  std::map<std::string, std::string> attrs;
  std::vector<std::string> list;
};

ConfigSchema makeSchema(Opts* o) {
  ConfigSchema s("test");
  s.addInt("grpc.port", &o->port, 8030, 0, 65535, "TCP port", "Port.");
  s.addDuration("rm.node-expiry", &o->expiry, Millis(10000), Millis(100), "Expiry.");
  s.addString("planner.agent", &o->agent, "lowcost", "Agent.", {"lowcost", "greedy"});
  s.addBool("dra.enabled", &o->flag, true, "DRA on.");
  s.addDouble("skyline.alpha", &o->alpha, 0.5, 0, 1, "", "Alpha.");
  s.addResource("nm.resources", &o->res, Resource(8192, 8), "Resources.");
  s.addStringMap("nm.attributes", &o->attrs, "Attributes.");
  s.addStringList("queues", &o->list, {"default"}, "Queues.");
  return s;
}

// Declaring an option assigns its default.
TEST(ConfigTest, DefaultsAreAssignedAtDeclaration) {
  Opts o;
  auto s = makeSchema(&o);
  EXPECT_EQ(o.port, 8030);
  EXPECT_EQ(o.expiry, Millis(10000));
  EXPECT_EQ(o.agent, "lowcost");
  EXPECT_EQ(o.res, Resource(8192, 8));
  EXPECT_EQ(o.list, std::vector<std::string>{"default"});
}

// Nested and dotted keys both reach their option.
TEST(ConfigTest, NestedAndDottedKeysLoad) {
  Opts o;
  auto s = makeSchema(&o);
  Status st = s.loadYamlString(
      "grpc:\n  port: 9000\nrm.node-expiry: 2m\nplanner: {agent: greedy}\nnm:\n  resources: "
      "{memory: 1024, vcores: 2}\n  attributes: {rack: r1}\nqueues: [a, b]\nskyline.alpha: 0.25\n",
      "test.yaml");
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(o.port, 9000);
  EXPECT_EQ(o.expiry, Millis(120000));
  EXPECT_EQ(o.agent, "greedy");
  EXPECT_EQ(o.res, Resource(1024, 2));
  EXPECT_EQ(o.attrs.at("rack"), "r1");
  EXPECT_EQ(o.list.size(), 2u);
  EXPECT_DOUBLE_EQ(o.alpha, 0.25);
}

// Errors name the key (and the file) and leave every field unchanged.
TEST(ConfigTest, BadValueNamesKeyAndChangesNothing) {
  Opts o;
  auto s = makeSchema(&o);
  Status st = s.loadYamlString("grpc.port: 9000\nrm.node-expiry: soon\n", "bad.yaml");
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bad.yaml"), std::string::npos);
  EXPECT_NE(st.message().find("rm.node-expiry"), std::string::npos);
  EXPECT_EQ(o.port, 8030) << "partial application of a rejected file";

  EXPECT_NE(s.loadYamlString("grpc.port: 70000\n", "f").message().find("grpc.port"),
            std::string::npos);
  EXPECT_NE(s.loadYamlString("planner.agent: best\n", "f").message().find("planner.agent"),
            std::string::npos);
  EXPECT_NE(s.loadYamlString("dra.enabled: maybe\n", "f").message().find("dra.enabled"),
            std::string::npos);
  EXPECT_NE(s.loadYamlString("skyline.alpha: 2\n", "f").message().find("skyline.alpha"),
            std::string::npos);
  EXPECT_FALSE(s.loadYamlString("grpc: [1\n", "f").isOk());
}

// An unknown key is an error naming the full dotted path.
TEST(ConfigTest, UnknownKeyIsRejected) {
  Opts o;
  auto s = makeSchema(&o);
  Status st = s.loadYamlString("grpc:\n  prot: 1\n", "f.yaml");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("grpc.prot"), std::string::npos);
}

// Command-line overrides use the same parsers.
TEST(ConfigTest, SetOverridesAndValidates) {
  Opts o;
  auto s = makeSchema(&o);
  ASSERT_TRUE(s.set("grpc.port", "0").isOk());
  EXPECT_EQ(o.port, 0);
  ASSERT_TRUE(s.set("nm.attributes", "rack=r2,zone=z").isOk());
  EXPECT_EQ(o.attrs.at("zone"), "z");
  EXPECT_FALSE(s.set("nope", "1").isOk());
  EXPECT_FALSE(s.set("rm.node-expiry", "10ms").isOk()) << "below the minimum";
}

// A list written as a string is refused in YAML, and --set accepts "a,b" or the
// flow form "[a, b]" (not the items "[a" and " b]").
TEST(ConfigTest, ListValuesMustBeLists) {
  Opts o;
  auto s = makeSchema(&o);
  Status st = s.loadYamlString("queues: \"a, b\"\n", "f.yaml");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("queues"), std::string::npos);
  EXPECT_NE(st.message().find("expected a list"), std::string::npos) << st.message();
  ASSERT_TRUE(s.set("queues", "[a, b]").isOk());
  EXPECT_EQ(o.list, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(s.set("queues", "c,d").isOk());
  EXPECT_EQ(o.list, (std::vector<std::string>{"c", "d"}));
  st = s.set("queues", "x,[y");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("queues"), std::string::npos);
  EXPECT_EQ(o.list, (std::vector<std::string>{"c", "d"})) << "a refused value changes nothing";
  EXPECT_FALSE(s.set("queues", "[a, [b]]").isOk());
}

// Durations accept unit suffixes and reject unknown units.
TEST(ConfigTest, DurationParsing) {
  EXPECT_EQ(*parseDuration("500ms", "k"), Millis(500));
  EXPECT_EQ(*parseDuration("1.5s", "k"), Millis(1500));
  EXPECT_EQ(*parseDuration("1d", "k"), Millis(86400000));
  EXPECT_FALSE(parseDuration("3 weeks", "k").isOk());
  EXPECT_EQ(formatDuration(Millis(120000)), "2m");
}

// Fuzz finding (config): a duration beyond int64 milliseconds is an error
// naming the key. The old parser converted the double with undefined
// behaviour (on x86 to INT64_MIN, accepted as a negative duration).
// Compound durations as README writes them ("5h30m") are the sum of their
// terms; a unit-less number inside a compound and unknown units are refused.
TEST(ConfigTest, CompoundDurationParsing) {
  EXPECT_EQ(*parseDuration("5h30m", "k"), Millis(5 * 3600000 + 30 * 60000));
  EXPECT_EQ(*parseDuration("1d2h", "k"), Millis(86400000 + 2 * 3600000));
  EXPECT_EQ(*parseDuration("1m30s500ms", "k"), Millis(90500));
  EXPECT_EQ(*parseDuration("250", "k"), Millis(250));
  EXPECT_FALSE(parseDuration("1h30", "--deadline").isOk());
  EXPECT_FALSE(parseDuration("h30m", "--deadline").isOk());
  auto bad = parseDuration("5h3x", "--deadline");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("--deadline"), std::string::npos);
}

TEST(ConfigTest, DurationBeyondInt64IsRejected) {
  auto huge = parseDuration("99999999999999999999d", "rm.node-expiry");
  ASSERT_FALSE(huge.isOk()) << huge->count();
  EXPECT_EQ(huge.status().message(), "rm.node-expiry: '99999999999999999999d' is too large");
  EXPECT_FALSE(parseDuration("106751991168d", "k").isOk()) << "just above 2^63 ms";
  EXPECT_EQ(*parseDuration("1000000d", "k"), Millis(int64_t{1000000} * 86400000));
}

}  // namespace
}  // namespace morpheus
