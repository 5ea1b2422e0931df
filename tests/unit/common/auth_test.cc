// Bearer-token files and the Authenticator: roles, expiry, malformed lines.
#include "common/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace morpheus {
namespace {

std::string writeTokens(const std::string& text) {
  static int n = 0;
  auto path = std::filesystem::temp_directory_path() /
              ("morpheus-auth-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  std::ofstream(path) << text;
  return path.string();
}

HttpRequest withBearer(const std::string& token) {
  HttpRequest r;
  r.headers["authorization"] = "Bearer " + token;
  return r;
}

// Roles and expiry are read from the file; a date means midnight UTC.
TEST(TokenFileTest, RolesAndExpiryParse) {
  auto t = loadTokenFile(
      writeTokens("aaaaaaaaaaaaaaaa alice\n"
                  "bbbbbbbbbbbbbbbb ops admin expires=2030-01-02\n"
                  "cccccccccccccccc nm1 node expires=2030-01-02T03:04:05Z  # a comment\n"));
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_FALSE((*t)["aaaaaaaaaaaaaaaa"].expires.has_value());
  EXPECT_TRUE((*t)["bbbbbbbbbbbbbbbb"].admin);
  EXPECT_EQ(toEpochMs(*(*t)["bbbbbbbbbbbbbbbb"].expires), 1893542400000);
  EXPECT_TRUE((*t)["cccccccccccccccc"].node);
  EXPECT_EQ(toEpochMs(*(*t)["cccccccccccccccc"].expires), 1893553445000);
}

// Each malformed line is refused naming its line, and no partial map is used.
TEST(TokenFileTest, MalformedLinesAreRefusedNamingTheLine) {
  for (const char* bad :
       {"aaaaaaaaaaaaaaaa alice expires=tomorrow\n", "aaaaaaaaaaaaaaaa alice expires=2030-13-01\n",
        "aaaaaaaaaaaaaaaa alice admin node\n", "aaaaaaaaaaaaaaaa alice superuser\n",
        "aaaaaaaaaaaaaaaa alice expires=2030-01-01 expires=2031-01-01\n", "short alice\n",
        "# only a comment\n"}) {
    auto t = loadTokenFile(writeTokens(bad));
    EXPECT_FALSE(t.isOk()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto t = loadTokenFile(writeTokens("\naaaaaaaaaaaaaaaa alice expires=soon\n"));
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().message();
}

// A token is accepted until its expiry on the injected clock, refused after it.
TEST(AuthenticatorTest, ExpiredTokensAreRefused) {
  auto t = loadTokenFile(writeTokens("aaaaaaaaaaaaaaaa alice expires=2030-01-02\n"));
  ASSERT_TRUE(t.isOk());
  VirtualClock clock(fromEpochMs(1893542400000 - 1));
  Authenticator auth(*t, false, &clock);
  auto ok = auth.identify(withBearer("aaaaaaaaaaaaaaaa"));
  ASSERT_TRUE(ok.isOk()) << ok.status().message();
  EXPECT_EQ(ok->user, "alice");
  clock.advance(Millis(1));
  auto late = auth.identify(withBearer("aaaaaaaaaaaaaaaa"));
  EXPECT_EQ(late.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(late.status().message().find("expired"), std::string::npos);
}

// Missing, malformed and unknown credentials are refused; auth-disabled is anonymous admin.
TEST(AuthenticatorTest, MissingOrUnknownTokensAreRefused) {
  Authenticator auth({{"aaaaaaaaaaaaaaaa", Principal{"alice"}}}, false);
  EXPECT_FALSE(auth.identify(HttpRequest{}).isOk());
  HttpRequest basic;
  basic.headers["authorization"] = "Basic YWxpY2U6eA==";
  EXPECT_FALSE(auth.identify(basic).isOk());
  EXPECT_FALSE(auth.identify(withBearer("bbbbbbbbbbbbbbbb")).isOk());
  Authenticator open({}, true);
  auto anon = open.identify(HttpRequest{});
  ASSERT_TRUE(anon.isOk());
  EXPECT_TRUE(anon->admin);
}

}  // namespace
}  // namespace morpheus
