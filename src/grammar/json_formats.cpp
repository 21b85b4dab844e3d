#include "grammar/json_formats.h"

namespace qmlx::grammar {
namespace {

// Years divisible by 4, except centuries not divisible by 400.
constexpr const char* kLeapYear =
    R"g(([0-9] [0-9] ("0" [48] | [2468] [048] | [13579] [26]) | ([02468] [048] | [13579] [26]) "00"))g";
constexpr const char* kMonthDay =
    R"g((("01" | "03" | "05" | "07" | "08" | "10" | "12") "-" ("0" [1-9] | [12] [0-9] | "3" [01])))g"
    R"g( | (("04" | "06" | "09" | "11") "-" ("0" [1-9] | [12] [0-9] | "30")))g"
    R"g( | ("02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])))g";
constexpr const char* kTime =
    R"g((([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]+)?)g"
    R"g( ([Zz] | [-+] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])))g";

std::string date() {
  return std::string("([0-9]{4} \"-\" (") + kMonthDay + ") | " + kLeapYear + " \"-02-29\")";
}

}  // namespace

std::optional<std::string> format_expression(std::string_view format) {
  if (format == "date") return date();
  if (format == "time") return std::string(kTime);
  if (format == "date-time") return "(" + date() + " [Tt] " + kTime + ")";
  if (format == "uuid")
    return std::string(
        R"g(([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}))g");
  if (format == "email")
    return std::string(
        R"g(([A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+ ("." [A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+)* "@")g"
        R"g( [A-Za-z0-9] ([A-Za-z0-9\-]* [A-Za-z0-9])? ("." [A-Za-z0-9] ([A-Za-z0-9\-]* [A-Za-z0-9])?)*))g");
  return std::nullopt;
}

}  // namespace qmlx::grammar
