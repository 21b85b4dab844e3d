// The Jinja engine's bounds (issue 17, found by fuzzing the template source): nesting, long
// tags, self-containing namespaces and huge repetitions are a qmlx::Error naming the problem,
// never a stack overflow, an endless print or an exhausted memory.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/template/template.h"

namespace qmlx::jinja {
namespace {

// The error a template fails with, to parse or to render; "" if it renders.
std::string failure(const std::string& source) {
  try {
    Template(source).render(nlohmann::ordered_json::object());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string repeated(const std::string& text, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += text;
  return out;
}

TEST(TemplateLimitsTest, DeepExpressionsAndBlocksFail) {
  EXPECT_NE(failure("{{ " + repeated("(", 20000) + "1" + repeated(")", 20000) + " }}")
                .find("more than 512 tokens"),
            std::string::npos);
  EXPECT_NE(failure("{{ x" + repeated(".a", 20000) + " }}").find("more than 512 tokens"),
            std::string::npos);
  EXPECT_NE(failure(repeated("{% if true %}", 5000) + "x" + repeated("{% endif %}", 5000))
                .find("nested more than 100 deep"),
            std::string::npos);
  // Within the bounds, nesting works as before.
  EXPECT_EQ(failure("{{ " + repeated("(", 100) + "1" + repeated(")", 100) + " }}"), "");
  EXPECT_EQ(failure(repeated("{% if true %}", 50) + "x" + repeated("{% endif %}", 50)), "");
}

TEST(TemplateLimitsTest, MacroRecursionInsideExpressionsIsBounded) {
  std::string message = failure("{% macro f(n) %}{{ (((f(n + 1)))) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(message.find("too deep"), std::string::npos) << message;
}

TEST(TemplateLimitsTest, ANamespaceCannotHoldItself) {
  EXPECT_NE(
      failure("{% set ns = namespace(x=1) %}{% set ns.x = [ns] %}{{ ns }}").find("inside itself"),
      std::string::npos);
  EXPECT_NE(failure("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}")
                .find("inside itself"),
            std::string::npos);
}

TEST(TemplateLimitsTest, DeepValuesFailToPrint) {
  const std::string build =
      "{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}";
  EXPECT_NE(failure(build + "{{ ns.x | tojson }}").find("nested too deeply"), std::string::npos);
  EXPECT_NE(failure(build + "{{ ns.x }}").find("nested too deeply"), std::string::npos);
}

TEST(TemplateLimitsTest, HugeRepetitionsFail) {
  EXPECT_NE(failure("{{ 'ab' * 10000000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(failure("{{ [1] * 10000000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(failure("{{ range(-9223372036854775807, 9223372036854775807) }}").find("too large"),
            std::string::npos);
  EXPECT_EQ(failure("{{ 'ab' * 3 }}{{ [1] * 3 }}"), "");
}

// Empty sequences times anything are empty at once ("" * 10**9 looped 10**9 times, found by the
// template_source fuzzer), as in Python; so are sequences times zero or less.
TEST(TemplateLimitsTest, EmptyRepetitionsAreEmptyAtOnce) {
  auto render = [](const std::string& source) {
    return Template(source).render(nlohmann::ordered_json::object());
  };
  EXPECT_EQ(render("[{{ '' * 1000000000000 }}]"), "[]");
  EXPECT_EQ(render("{{ [] * 1000000000000 }}{{ ([] * 7) | length }}"), "[]0");
  EXPECT_EQ(render("[{{ 'ab' * 0 }}{{ 'ab' * -3 }}]{{ [1, 2] * -1 }}"), "[][]");
  EXPECT_EQ(render("{{ (() * 5) | length }}{{ 'ab' * 2 }}"), "0abab");
}

// Steps that would carry the counter past int64 (found by the template_source fuzzer): Python's
// items, no overflow.
TEST(TemplateLimitsTest, RangeNearTheEndsOfInt64) {
  auto render = [](const std::string& source) {
    return Template(source).render(nlohmann::ordered_json::object());
  };
  EXPECT_EQ(render("{{ range(-9223372036854775803, 775807, 9223372036854775807) | list }}"),
            "[-9223372036854775803, 4]");
  EXPECT_EQ(render("{{ range(9223372036854775807, -9223372036854775807, -9223372036854775807) "
                   "| list }}"),
            "[9223372036854775807, 0]");
  EXPECT_EQ(render("{{ range(10, 0, -3) | list }}{{ range(0, 10, 3) | list }}{{ range(3, 3) | "
                   "list }}"),
            "[10, 7, 4, 1][0, 3, 6, 9][]");
}

}  // namespace
}  // namespace qmlx::jinja
