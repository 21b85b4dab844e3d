// DynamicLibrary: opens a shared library at run time and looks up its symbols. The one place
// the backend touches the operating system's loader (dlopen on POSIX, LoadLibrary on Windows),
// so qmlx links no GPU library and starts on machines without one.
#pragma once

#include <string>

namespace qmlx::vulkan {

class DynamicLibrary {
 public:
  // Opens `name` (searched the platform's usual way); on failure returns an object that is not
  // open() and whose error() says why.
  static DynamicLibrary open(const std::string& name);

  DynamicLibrary() = default;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  bool is_open() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  // The address of `symbol`, or nullptr.
  void* symbol(const char* name) const;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace qmlx::vulkan
