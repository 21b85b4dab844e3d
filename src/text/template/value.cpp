#include "text/template/value.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx::jinja {

const Value* DictObj::find(const std::string& key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void DictObj::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto list = std::make_shared<ListObj>();
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  return Value(std::move(list));
}

Value Value::dict() { return Value(std::make_shared<DictObj>()); }

Value Value::callable(std::string name, std::function<Value(Arguments&)> call) {
  return Value(std::make_shared<CallableObj>(CallableObj{std::move(name), std::move(call)}));
}

template <typename Json>
static Value value_from_json(const Json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return Value(None{});
    case nlohmann::json::value_t::boolean:
      return Value(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(json.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(json.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return Value(json.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(value_from_json(item));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value result = Value::dict();
      for (const auto& [key, item] : json.items()) {
        result.as_dict().entries.emplace_back(key, value_from_json(item));
      }
      return result;
    }
    default:
      throw Error("template input: unsupported JSON value (binary or discarded)");
  }
}

Value Value::from_json(const nlohmann::ordered_json& json) { return value_from_json(json); }
Value Value::from_json(const nlohmann::json& json) { return value_from_json(json); }

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(storage_);
}

double Value::as_float() const {
  if (is_float()) return std::get<double>(storage_);
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  struct Visitor {
    bool operator()(const Undefined&) const { return false; }
    bool operator()(const None&) const { return false; }
    bool operator()(bool b) const { return b; }
    bool operator()(int64_t i) const { return i != 0; }
    bool operator()(double d) const { return d != 0.0; }
    bool operator()(const std::string& s) const { return !s.empty(); }
    bool operator()(const ListPtr& l) const { return !l->items.empty(); }
    bool operator()(const DictPtr& d) const { return !d->entries.empty(); }
    bool operator()(const NamespacePtr&) const { return true; }
    bool operator()(const CallablePtr&) const { return true; }
  };
  return std::visit(Visitor{}, storage_);
}

std::string Value::type_name() const {
  struct Visitor {
    std::string operator()(const Undefined&) const { return "Undefined"; }
    std::string operator()(const None&) const { return "NoneType"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(int64_t) const { return "int"; }
    std::string operator()(double) const { return "float"; }
    std::string operator()(const std::string&) const { return "str"; }
    std::string operator()(const ListPtr& l) const { return l->is_tuple ? "tuple" : "list"; }
    std::string operator()(const DictPtr&) const { return "dict"; }
    std::string operator()(const NamespacePtr&) const { return "Namespace"; }
    std::string operator()(const CallablePtr&) const { return "function"; }
  };
  return std::visit(Visitor{}, storage_);
}

nlohmann::ordered_json Value::to_json() const {
  struct Visitor {
    nlohmann::ordered_json operator()(const Undefined& u) const {
      throw Error("template value is undefined (" + u.hint + ") and has no JSON form");
    }
    nlohmann::ordered_json operator()(const None&) const { return nullptr; }
    nlohmann::ordered_json operator()(bool b) const { return b; }
    nlohmann::ordered_json operator()(int64_t i) const { return i; }
    nlohmann::ordered_json operator()(double d) const { return d; }
    nlohmann::ordered_json operator()(const std::string& s) const { return s; }
    nlohmann::ordered_json operator()(const ListPtr& l) const {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& item : l->items) out.push_back(item.to_json());
      return out;
    }
    nlohmann::ordered_json operator()(const DictPtr& d) const {
      nlohmann::ordered_json out = nlohmann::ordered_json::object();
      for (const auto& [k, v] : d->entries) out[k] = v.to_json();
      return out;
    }
    nlohmann::ordered_json operator()(const NamespacePtr&) const {
      throw Error("a template namespace has no JSON form");
    }
    nlohmann::ordered_json operator()(const CallablePtr& c) const {
      throw Error("template function '" + c->name + "' has no JSON form");
    }
  };
  return std::visit(Visitor{}, storage_);
}

static bool dicts_equal(const DictObj& a, const DictObj& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& [key, value] : a.entries) {
    const Value* other = b.find(key);
    if (!other || !equals(value, *other)) return false;
  }
  return true;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.storage().index() != b.storage().index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    if (x.size() != y.size() || a.as_list().is_tuple != b.as_list().is_tuple) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!equals(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_dict()) return dicts_equal(a.as_dict(), b.as_dict());
  if (a.is_namespace()) return &a.as_namespace() == &b.as_namespace();
  return &a.as_callable() == &b.as_callable();
}

}  // namespace qmlx::jinja
