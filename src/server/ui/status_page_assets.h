// The status page's files (status.html, status.js, status.css in this folder), embedded in the
// binary at build time by src/server/CMakeLists.txt: the page needs nothing from outside.
#pragma once

#include <string_view>

namespace qmlx::server {

std::string_view status_page_html();
std::string_view status_page_js();
std::string_view status_page_css();

}  // namespace qmlx::server
