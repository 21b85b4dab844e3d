// Unit tests of the Jinja interpreter, one construct at a time. Expected strings are what
// Python's jinja2 3.1 renders with Hugging Face's settings (trim_blocks, lstrip_blocks,
// transformers' tojson); the oracle test checks the same and more against jinja2 live.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/template/py_format.h"
#include "text/template/template.h"

namespace qmlx::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string render(const std::string& source, const json& variables = json::object()) {
  return Template(source, "t").render(variables);
}

std::string error_of(const std::string& source, const json& variables = json::object()) {
  try {
    render(source, variables);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JinjaTest, PrintsVariablesAndArithmetic) {
  EXPECT_EQ(render("hello {{ name }}!", {{"name", "world"}}), "hello world!");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} "
                   "{{ 2 ** 10 }} {{ 10 / 5 }} {{ 2 ** -1 }} {{ 1 + 1.5 }} {{ true + 1 }}"),
            "7 3 -4 2 3.5 1024 2.0 0.5 2.5 2");
}

TEST(JinjaTest, PrintsFloatsLikePythonRepr) {
  EXPECT_EQ(render("{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1 / 3 }} {{ 2 ** 0.5 }} "
                   "{{ 1.0 }} {{ -0.0 }} {{ 123456789.125 }} {{ x }}",
                   {{"x", 1e-7}}),
            "1e+16 1000000000000000.0 0.0001 1e-05 0.3333333333333333 1.4142135623730951 1.0 "
            "-0.0 123456789.125 1e-07");
}

TEST(JinjaTest, PrintsContainersLikePythonRepr) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, {'k': 1.5}] }} {{ ('a', 2) }} {{ ('solo',) }} "
                   "{{ [\"it's\", 'say \"hi\"', 'nl\\n'] }}"),
            "[1, 'a', None, True, {'k': 1.5}] ('a', 2) ('solo',) "
            "[\"it's\", 'say \"hi\"', 'nl\\n']");
}

TEST(JinjaTest, OperatorsFollowPython) {
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true ~ missing }}|{{ 'ab' * 3 }}|{{ [1] + [2] }}"),
            "a1NoneTrue|ababab|[1, 2]");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ [1,2] < [1,3] }}"),
            "True True False True");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} "
                   "{{ 'z' not in 'abc' }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ none or [] }}|{{ not missing }}"),
            "x y True []|True");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }}[{{ 'a' if false }}]", {{"x", json::array({1})}}),
            "yes[]");
  EXPECT_EQ(render("{{ '%s-%d' % ('a', 3) }} {{ '%s'|format('x') }}"), "a-3 x");
}

// Python's integers are unbounded, the template's are 64-bit: an overflow is an error, never a
// wrapped value, undefined behaviour (found by the template fuzzer) or, for **, a loop of 2^62
// multiplications.
TEST(JinjaTest, IntegerOverflowIsAnError) {
  EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 1 ** 9223372036854775807 }} "
                   "{{ 0 ** 9223372036854775807 }} {{ 7 // -1 }} {{ 7 % -1 }}"),
            "4611686018427387904 -9223372036854775808 1 0 -7 0");
  for (const char* source : {"{{ 9223372036854775807 + 1 }}", "{{ -9223372036854775807 - 2 }}",
                             "{{ 775807 * 9223372036854775807 }}", "{{ 2 ** 63 }}",
                             "{{ 3 ** 9223372036854775807 }}",
                             "{{ (-9223372036854775807 - 1) // -1 }}",
                             "{{ -(-9223372036854775807 - 1) }}"}) {
    EXPECT_NE(error_of(source).find("integer overflow"), std::string::npos) << source;
  }
  // Floats become integers only where int64 holds them (a cast would be undefined behaviour).
  EXPECT_EQ(render("{{ 1e18|int }} {{ -2.5|int }} {{ '%d' % 3.9 }} {{ 'nan'|float|int }}"),
            "1000000000000000000 -2 3 0");
  for (const char* source : {"{{ 1e19|int }}", "{{ (1e308 * 10)|int }}", "{{ '%d' % 1e300 }}"})
    EXPECT_NE(error_of(source), "(no error)") << source;
  EXPECT_NE(error_of("{{ (-9223372036854775807 - 1)|abs }}").find("overflow"), std::string::npos);
}

TEST(JinjaTest, IfElifElse) {
  const std::string source = "{% if x > 2 %}big{% elif x > 1 %}mid{% else %}small{% endif %}";
  EXPECT_EQ(render(source, {{"x", 3}}), "big");
  EXPECT_EQ(render(source, {{"x", 2}}), "mid");
  EXPECT_EQ(render(source, {{"x", 0}}), "small");
}

TEST(JinjaTest, ForLoopVariables) {
  EXPECT_EQ(render("{% for i in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/"
                   "{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};"
                   "{% endfor %}",
                   {{"items", {"a", "b", "c"}}}),
            "1/0/3/2/True/False/3;2/1/2/1/False/False/3;3/2/1/0/False/True/3;");
  EXPECT_EQ(render("{% for i in items %}[{{ loop.previtem }}|{{ loop.nextitem }}|"
                   "{{ loop.previtem is defined }}]{% endfor %}",
                   {{"items", {1, 2, 3}}}),
            "[|2|False][1|3|True][2||True]");
  EXPECT_EQ(render("{% for i in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "ababa");
}

TEST(JinjaTest, ForElseFilterAndUnpacking) {
  EXPECT_EQ(render("{% for a in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4,5] if x is odd %}{{ x }}:{{ loop.index }}/"
                   "{{ loop.length }} {% endfor %}"),
            "1:1/3 3:2/3 5:3/3 ");
  EXPECT_EQ(render("{% for k in d %}{{ k }},{% endfor %}{% for k, v in d.items() %}{{ k }}={{ v }};"
                   "{% endfor %}",
                   {{"d", {{"z", 1}, {"a", 2}}}}),
            "z,a,z=1;a=2;");
  EXPECT_EQ(render("{% for c in 'héllo' %}[{{ c }}]{% endfor %}"), "[h][é][l][l][o]");
}

TEST(JinjaTest, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
                   "{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "0134");
}

TEST(JinjaTest, ScopingMatchesJinja2) {
  // A set inside a loop body lasts one iteration; an if does not open a scope.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = x + 10 %}{{ x }}"
                   "{% endfor %}|{{ x }}{% if true %}{% set x = 5 %}{% endif %}|{{ x }}"),
            "111111|1|5");
  EXPECT_EQ(render("{% set ns = namespace(a=1, b='x') %}{% for i in [1,2,3] %}"
                   "{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }} {{ ns.b }}"),
            "7 x");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]"
                   "{% set tb | trim | upper %}  shout  {% endset %}[{{ tb }}]"),
            "[  inner 2  ][SHOUT]");
}

TEST(JinjaTest, MacrosWithDefaultsKeywordsAndCaller) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}"),
            "Hi A! Hi B? Hi C.");
  EXPECT_EQ(render("{% macro m() %}{{ y }}{% endmacro %}{% set y = 3 %}{{ m() }}{% set y = 4 %}"
                   "{{ m() }}"),
            "34");
  EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                   "{% call wrap('b') %}body {{ 1 }}{% endcall %}"),
            "<b>body 1</b>");
  EXPECT_EQ(render("{% filter upper %}shout {{ 'it' }}{% endfilter %}"), "SHOUT IT");
}

TEST(JinjaTest, WhitespaceControlAndHuggingFaceDefaults) {
  EXPECT_EQ(render("a  {{- ' b ' -}}  c\n  {%- if true -%}\n  d  \n{%- endif -%}  e"), "a b cde");
  // trim_blocks removes the newline after a block tag, lstrip_blocks the indentation before it.
  EXPECT_EQ(render("x\n    {% if true %}\n    y\n    {% endif %}\nz\n  {# comment #}\nw\n"),
            "x\n    y\nz\nw");
  EXPECT_EQ(render("a\n  {{ 'b' }}\nc\n"), "a\n  b\nc");  // not for {{ }}; one final \n dropped
  EXPECT_EQ(render("a\n    {%+ if true %}b{% endif +%}\nc"), "a\n    b\nc");
  EXPECT_EQ(render("a{# comment {{ x }} #}b{#- strip -#}  c"), "abc");
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
  EXPECT_EQ(render("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n"), "a\nb\nc");
}

TEST(JinjaTest, SubscriptsSlicesAndAttributes) {
  EXPECT_EQ(render("{{ 'abcdef'[::-1] }} {{ 'abcdef'[1:3] }} {{ 'abcdef'[-2:] }} "
                   "{{ [1,2,3,4][::2] }} {{ [1,2,3][5:] }} {{ 'héllo'[1] }} {{ [1,2,3][-1] }} "
                   "{{ 'abcdef'[4:1:-1] }}"),
            "fedcba bc ef [1, 3] [] é 3 edc");
  json variables = {{"d", {{"a", 1}}}, {"l", json::array({{{"x", "X"}}})}};
  EXPECT_EQ(render("{{ d.a }} {{ d['a'] }} {{ d.missing is defined }} {{ l[0].x }} {{ l.0.x }} "
                   "{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}",
                   variables),
            "1 1 False X X 1 dflt None");
}

TEST(JinjaTest, UndefinedBehavesLikeJinja2Default) {
  EXPECT_EQ(render("[{{ missing }}][{{ missing|default('d') }}][{{ missing is defined }}]"
                   "[{{ missing|length }}][{{ missing is none }}][{{ missing == none }}]"),
            "[][d][False][0][False][False]");
  EXPECT_EQ(render("{{ ''|default('e') }}|{{ ''|default('e', true) }}|{{ none|d('n') }}"),
            "|e|None");
}

TEST(JinjaTest, StringMethods) {
  EXPECT_EQ(render("{{ '  hi  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  hi'.lstrip() }}|"
                   "{{ 'hi  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|"
                   "{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|"
                   "{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|"
                   "{{ 'aXa'.replace('a', 'b') }}|{{ 'hello world'.title() }}|{{ 'ABC'.lower() }}|"
                   "{{ 'abc'.upper() }}|{{ 'héllo'.find('l') }}|{{ 'abcabc'.count('bc') }}|"
                   "{{ '{} and {name}'.format(1, name='n') }}|{{ ', '.join(['a', 'b']) }}"),
            "hi|hi|hi|hi|['a', 'b', '', 'c']|['a', 'b']|['a', 'b,c']|['a,b', 'c']|True|True|bXb|"
            "Hello World|abc|ABC|2|2|1 and n|a, b");
  // Python strips all Unicode whitespace, e.g. the ideographic space and no-break space.
  EXPECT_EQ(render("[{{ '\u3000 x \u00a0'.strip() }}]"), "[x]");
}

TEST(JinjaTest, TojsonMatchesTransformers) {
  json variables = {{"d", {{"z", 1}, {"a", {{"nested", {1, 2.5, nullptr, true, "中文"}}}}}}};
  EXPECT_EQ(render("{{ d|tojson }}", variables),
            "{\"z\": 1, \"a\": {\"nested\": [1, 2.5, null, true, \"中文\"]}}");
  EXPECT_EQ(render("{{ d|tojson(indent=2) }}", variables),
            "{\n  \"z\": 1,\n  \"a\": {\n    \"nested\": [\n      1,\n      2.5,\n      null,\n"
            "      true,\n      \"中文\"\n    ]\n  }\n}");
  EXPECT_EQ(render("{{ d|tojson(sort_keys=true) }}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "{\"a\": 2, \"b\": 1}");
  EXPECT_EQ(render("{{ 'q\"\\\\\\n\\t\\u0001é'|tojson }} {{ 1.0|tojson }} {{ 1e20|tojson }}"),
            "\"q\\\"\\\\\\n\\t\\u0001é\" 1.0 1e+20");
}

TEST(JinjaTest, Filters) {
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'hello WORLD'|capitalize }}|"
                   "{{ 'hello-world foo(bar)'|title }}|{{ 'aaa'|replace('a', 'b', 2) }}|"
                   "{{ 'one two  three'|wordcount }}|{{ 'a\nb\n\nc'|indent(2) }}"),
            "x|Hello world|Hello-World Foo(Bar)|bba|3|a\n  b\n\n  c");
  EXPECT_EQ(render("{{ [3,1,2]|sort }} {{ ['b','A','c']|sort }} {{ [1,2,2,'a','A']|unique|list }} "
                   "{{ 'abc'|reverse }} {{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'héllo'|count }} "
                   "{{ [1,2,3]|join('-') }} {{ [1,2,3,4,5]|batch(2)|list }} "
                   "{{ {'b':1,'a':2}|dictsort }}"),
            "[1, 2, 3] ['A', 'b', 'c'] [1, 2, 'a'] cba 1 3 5 1-2-3 [[1, 2], [3, 4], [5]] "
            "[('a', 2), ('b', 1)]");
  json users = {{"users",
                 {{{"name", "a"}, {"active", true}, {"age", 30}},
                  {{"name", "b"}, {"active", false}, {"age", 10}}}}};
  EXPECT_EQ(render("{{ users|selectattr('active')|map(attribute='name')|list }} "
                   "{{ users|rejectattr('active')|map(attribute='name')|join(',') }} "
                   "{{ users|selectattr('age', 'gt', 20)|map(attribute='name')|list }} "
                   "{{ users|sort(attribute='age')|map(attribute='name')|list }}",
                   users),
            "['a'] b ['a'] ['b', 'a']");
  EXPECT_EQ(render("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} "
                   "{{ '2.5'|float }} {{ -3|abs }} {{ 2.5|round }} {{ 2.675|round(2) }} "
                   "{{ 5|string }} {{ 'ab'|list }}"),
            "42 4 7 3 2.5 3 2.0 2.67 5 ['a', 'b']");
}

TEST(JinjaTest, Tests) {
  json variables = {{"x", "s"}, {"d", {{"a", 1}}}};
  EXPECT_EQ(render("{{ x is string }} {{ x is mapping }} {{ d is mapping }} {{ d is sequence }} "
                   "{{ x is sequence }} {{ true is number }} {{ true is integer }} "
                   "{{ 1.0 is float }} {{ true is boolean }} {{ 1 is true }} {{ 3 is odd }} "
                   "{{ 2 is in [1,2] }} {{ 2 is equalto 3 }} {{ 2 is ne 3 }} {{ x is not none }} "
                   "{{ missing is undefined }} {{ missing is iterable }} {{ none is iterable }}",
                   variables),
            "True False True True True True False True True False True True False True True "
            "True True False");
}

TEST(JinjaTest, GenerationBlockRendersItsBody) {
  // transformers' AssistantTracker tag: the body renders unchanged.
  EXPECT_EQ(render("a{% generation %}kept{% endgeneration %}b"), "akeptb");
}

TEST(JinjaTest, ErrorsNameTheTemplateLine) {
  EXPECT_EQ(error_of("line1\n{{ x | nosuchfilter }}"), "t:2: unsupported filter 'nosuchfilter'");
  EXPECT_EQ(error_of("\n\n{% if x is nosuchtest %}{% endif %}"),
            "t:3: unsupported test 'nosuchtest'");
  EXPECT_EQ(error_of("ok\n{% include 'x.html' %}"),
            "t:2: unsupported template statement 'include'");
  EXPECT_EQ(error_of("{% for x in y recursive %}{% endfor %}"),
            "t:1: unsupported: recursive for loops");
  EXPECT_EQ(error_of("{% if true %}\nabc"),
            "t:2: missing '{% endif %}' (unexpected end of template)");
  EXPECT_EQ(error_of("a\n{{ raise_exception('boom') }}"), "t:2: raise_exception: boom");
  EXPECT_EQ(error_of("\n{{ missing.attr }}"), "t:2: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ 'a' + missing }}"), "t:1: 'missing' is undefined");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "t:1: unsupported operand types for +: 'str' and 'int'");
  EXPECT_EQ(error_of("{{ 1 + }}"), "t:1: unexpected '}}' in expression");
  EXPECT_EQ(error_of("{% set d = {} %}\n{% set d.x = 1 %}"),
            "t:2: cannot assign attribute 'x' on 'd': only namespace() objects can be assigned to");
  EXPECT_EQ(error_of("{{ [1].append(2) }}"),
            "t:1: unsupported list method 'append' (templates cannot modify lists)");
}

TEST(PyFormatTest, FloatRepr) {
  EXPECT_EQ(py::float_repr(0.1), "0.1");
  EXPECT_EQ(py::float_repr(1e22), "1e+22");
  EXPECT_EQ(py::float_repr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(py::float_repr(12345.678), "12345.678");
  EXPECT_EQ(py::float_repr(1.0 / 0.0), "inf");
}

}  // namespace
}  // namespace qmlx::jinja
