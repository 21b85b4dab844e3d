// Value: a Jinja runtime value with Python's data model, because Hugging Face chat templates
// are written against Python jinja2 and their output depends on Python semantics (truthiness,
// `1 == 1.0`, bool being an int, insertion-ordered dicts, reference-shared containers that
// `namespace()` mutates). Undefined carries a hint naming what was missing, for error messages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace qmlx::jinja {

// How deep lists, dicts and namespaces may nest when a template prints or serialises them
// (str, repr, tojson): request JSON nests at most kMaxJsonDepth (256) levels and templates wrap
// it a few more; deeper is an Error rather than a stack overflow.
inline constexpr int kMaxValueDepth = 512;

class Value;

struct Undefined {
  std::string hint;  // e.g. "'foo' is undefined", "'dict object' has no attribute 'x'"
};
struct None {};

struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes how it prints: (a, b) instead of [a, b]
};

// Insertion-ordered string-keyed mapping; chat-template dicts are small, so lookup is linear.
struct DictObj {
  std::vector<std::pair<std::string, Value>> entries;

  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

// jinja2's namespace(): the one mutable object templates may assign attributes on.
struct NamespaceObj {
  DictObj attributes;
};

struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct CallableObj {
  std::string name;
  std::function<Value(Arguments&)> call;
};

using ListPtr = std::shared_ptr<ListObj>;
using DictPtr = std::shared_ptr<DictObj>;
using NamespacePtr = std::shared_ptr<NamespaceObj>;
using CallablePtr = std::shared_ptr<CallableObj>;

class Value {
 public:
  using Storage = std::variant<Undefined, None, bool, int64_t, double, std::string, ListPtr,
                               DictPtr, NamespacePtr, CallablePtr>;

  Value() : storage_(Undefined{}) {}
  Value(Undefined u) : storage_(std::move(u)) {}
  Value(None n) : storage_(n) {}
  Value(bool b) : storage_(b) {}
  Value(int i) : storage_(int64_t{i}) {}
  Value(int64_t i) : storage_(i) {}
  Value(double d) : storage_(d) {}
  Value(std::string s) : storage_(std::move(s)) {}
  Value(const char* s) : storage_(std::string(s)) {}
  Value(ListPtr l) : storage_(std::move(l)) {}
  Value(DictPtr d) : storage_(std::move(d)) {}
  Value(NamespacePtr n) : storage_(std::move(n)) {}
  Value(CallablePtr c) : storage_(std::move(c)) {}

  static Value list(std::vector<Value> items = {}, bool is_tuple = false);
  static Value dict();
  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value callable(std::string name, std::function<Value(Arguments&)> call);
  // Objects keep their key order only from ordered_json (nlohmann::json sorts keys), and
  // tojson output depends on that order.
  static Value from_json(const nlohmann::ordered_json& json);
  static Value from_json(const nlohmann::json& json);

  bool is_undefined() const { return std::holds_alternative<Undefined>(storage_); }
  bool is_none() const { return std::holds_alternative<None>(storage_); }
  bool is_bool() const { return std::holds_alternative<bool>(storage_); }
  bool is_int() const { return std::holds_alternative<int64_t>(storage_); }
  bool is_float() const { return std::holds_alternative<double>(storage_); }
  // Python's numbers.Number: bool, int and float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(storage_); }
  bool is_list() const { return std::holds_alternative<ListPtr>(storage_); }
  bool is_dict() const { return std::holds_alternative<DictPtr>(storage_); }
  bool is_namespace() const { return std::holds_alternative<NamespacePtr>(storage_); }
  bool is_callable() const { return std::holds_alternative<CallablePtr>(storage_); }

  bool as_bool() const { return std::get<bool>(storage_); }
  // int value of an int or bool (Python's bool is an int).
  int64_t as_int() const;
  // float value of any number.
  double as_float() const;
  const std::string& as_string() const { return std::get<std::string>(storage_); }
  ListObj& as_list() const { return *std::get<ListPtr>(storage_); }
  DictObj& as_dict() const { return *std::get<DictPtr>(storage_); }
  NamespaceObj& as_namespace() const { return *std::get<NamespacePtr>(storage_); }
  CallableObj& as_callable() const { return *std::get<CallablePtr>(storage_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(storage_).hint; }

  // Python truthiness (Undefined is falsy, like jinja2's default Undefined).
  bool truthy() const;
  // Python's type name, used in error messages ("'dict object' has no attribute ...").
  std::string type_name() const;
  nlohmann::ordered_json to_json() const;

  const Storage& storage() const { return storage_; }

 private:
  Storage storage_;
};

// Python ==: numbers compare by value across int/float/bool, containers element-wise,
// dicts regardless of order; Undefined equals only Undefined.
bool equals(const Value& a, const Value& b);

}  // namespace qmlx::jinja
