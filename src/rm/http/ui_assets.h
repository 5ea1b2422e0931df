// The web UI's static files (src/rm/http/ui/*.html, *.js, *.css), embedded at
// build time by src/rm/http/ui/embed.cmake: the RM serves them from
// memory, never from disk or the network.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace morpheus::rm {

// File name ("index.html", "app.js", ...) -> contents. Static data; never fails.
const std::map<std::string, std::string_view>& uiAssets();

}  // namespace morpheus::rm
