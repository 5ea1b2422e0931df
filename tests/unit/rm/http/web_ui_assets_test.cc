// The web UI's embedded assets: what index.html loads is compiled
// in, and no asset loads anything from the network.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "rm/http/ui_assets.h"

namespace morpheus::rm {
namespace {

// Every /ui/<file> that index.html loads (src= or href=) is an embedded asset.
TEST(WebUiAssetsTest, IndexLoadsOnlyEmbeddedFiles) {
  const auto& assets = uiAssets();
  ASSERT_TRUE(assets.count("index.html"));
  std::string index(assets.at("index.html"));
  std::regex ref("(?:src|href)=\"([^\"]*)\"");
  int refs = 0;
  for (std::sregex_iterator it(index.begin(), index.end(), ref), e; it != e; ++it, ++refs) {
    std::string target = (*it)[1];
    ASSERT_EQ(target.rfind("/ui/", 0), 0u) << target;
    EXPECT_TRUE(assets.count(target.substr(4))) << target << " is not embedded";
  }
  EXPECT_EQ(refs, 2);  // app.css and app.js
}

// No asset names a network URL other than the SVG namespace identifier.
TEST(WebUiAssetsTest, AssetsNameNoNetworkUrl) {
  std::regex url("(https?:)?//[A-Za-z0-9.-]+");
  for (const auto& [name, body] : uiAssets()) {
    std::string text(body);
    for (std::sregex_iterator it(text.begin(), text.end(), url), e; it != e; ++it) {
      std::string hit = it->str();
      if (hit == "http://www.w3.org") continue;  // SVG's namespace, never fetched
      // "//" starting a JS comment is followed by a space, never a host name.
      ADD_FAILURE() << name << " names " << hit;
    }
  }
}

}  // namespace
}  // namespace morpheus::rm
