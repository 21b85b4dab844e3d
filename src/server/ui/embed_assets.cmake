# Writes OUTPUT, a C++ file defining status_page_html/js/css() over the bytes of the files
# named in HTML, JS and CSS (run by src/server/CMakeLists.txt at build time, so an edit to a
# file rebuilds it). Bytes as hex numbers: no escaping rules to get wrong.
function(embed name file out_var)
  file(READ ${file} hex HEX)
  string(LENGTH "${hex}" length)
  math(EXPR bytes "${length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," numbers "${hex}")
  set(${out_var} "const unsigned char k_${name}[] = {${numbers}0};
std::string_view status_page_${name}() {
  return {reinterpret_cast<const char*>(k_${name}), ${bytes}};
}
" PARENT_SCOPE)
endfunction()
embed(html ${HTML} html_code)
embed(js ${JS} js_code)
embed(css ${CSS} css_code)
file(WRITE ${OUTPUT} "// Generated from src/server/ui by embed_assets.cmake; do not edit.
#include \"server/ui/status_page_assets.h\"

namespace qmlx::server {
${html_code}${js_code}${css_code}}  // namespace qmlx::server
")
