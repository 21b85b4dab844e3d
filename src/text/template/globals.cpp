// Global functions: jinja2's range / dict / namespace and the two transformers adds to every
// chat template, raise_exception and strftime_now.
#include <ctime>

#include "base/error.h"
#include "text/template/arguments.h"
#include "text/template/builtins.h"

namespace qmlx::jinja {
namespace {

Value global_range(Arguments& args) {
  if (!args.keyword.empty()) throw Error("range() takes no keyword arguments");
  std::vector<int64_t> bounds;
  for (const auto& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) throw Error("range() expects integers");
    bounds.push_back(v.as_int());
  }
  if (bounds.empty() || bounds.size() > 3) throw Error("range() expects 1 to 3 arguments");
  int64_t start = bounds.size() == 1 ? 0 : bounds[0];
  int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
  int64_t step = bounds.size() == 3 ? bounds[2] : 1;
  if (step == 0) throw Error("range() arg 3 must not be zero");
  // In 128 bits: stop - start, and start + k * step past the last item, overflow int64 for
  // bounds near its ends. The count is Python's: ceil((stop - start) / step) when positive.
  const __int128 span = static_cast<__int128>(stop) - start;
  __int128 count = 0;
  if (step > 0 && span > 0) count = (span + step - 1) / step;
  if (step < 0 && span < 0) count = (span + step + 1) / step;
  if (count > 100000) throw Error("range() is too large for a template");
  std::vector<Value> items;
  for (__int128 k = 0; k < count; ++k)
    items.emplace_back(static_cast<int64_t>(start + k * step));  // between start and stop
  return Value::list(std::move(items));
}

// dict(**kwargs) and namespace(**kwargs), optionally seeded from a mapping positional.
void fill_mapping(const char* name, Arguments& args, DictObj& out) {
  if (args.positional.size() > 1) throw Error(std::string(name) + "() takes one positional");
  if (!args.positional.empty()) {
    if (!args.positional[0].is_dict()) throw Error(std::string(name) + "() expects a mapping");
    out = args.positional[0].as_dict();
  }
  for (auto& [key, value] : args.keyword) out.set(key, value);
}

Value global_dict(Arguments& args) {
  Value result = Value::dict();
  fill_mapping("dict", args, result.as_dict());
  return result;
}

Value global_namespace(Arguments& args) {
  auto ns = std::make_shared<NamespaceObj>();
  fill_mapping("namespace", args, ns->attributes);
  return Value(ns);
}

Value global_raise_exception(Arguments& args) {
  BoundArguments a("raise_exception", args, {"message"});
  throw Error("raise_exception: " + (a.get(0).is_string() ? a.get(0).as_string() : "error"));
}

Value global_strftime_now(Arguments& args) {
  BoundArguments a("strftime_now", args, {"format"});
  if (!a.get(0).is_string()) throw Error("strftime_now() expects a format string");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[256];
  size_t n = std::strftime(buffer, sizeof(buffer), a.get(0).as_string().c_str(), &local);
  return Value(std::string(buffer, n));
}

}  // namespace

void add_global_functions(DictObj& globals) {
  globals.set("range", Value::callable("range", global_range));
  globals.set("dict", Value::callable("dict", global_dict));
  globals.set("namespace", Value::callable("namespace", global_namespace));
  globals.set("raise_exception", Value::callable("raise_exception", global_raise_exception));
  globals.set("strftime_now", Value::callable("strftime_now", global_strftime_now));
}

}  // namespace qmlx::jinja
