#include "backend/vulkan/dynamic_library.h"

#include <utility>

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace qmlx::vulkan {

DynamicLibrary DynamicLibrary::open(const std::string& name) {
  DynamicLibrary library;
#if defined(_WIN32)
  library.handle_ = reinterpret_cast<void*>(LoadLibraryA(name.c_str()));
  if (library.handle_ == nullptr) library.error_ = "LoadLibrary failed (" + name + ")";
#else
  // RTLD_LOCAL: the loader's symbols must not satisfy anything else in the process.
  library.handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library.handle_ == nullptr) {
    const char* why = dlerror();
    library.error_ = why != nullptr ? why : "dlopen failed (" + name + ")";
  }
#endif
  return library;
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), error_(std::move(other.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    this->~DynamicLibrary();
    handle_ = std::exchange(other.handle_, nullptr);
    error_ = std::move(other.error_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ == nullptr) return;
#if defined(_WIN32)
  FreeLibrary(reinterpret_cast<HMODULE>(handle_));
#else
  dlclose(handle_);
#endif
}

void* DynamicLibrary::symbol(const char* name) const {
  if (handle_ == nullptr) return nullptr;
#if defined(_WIN32)
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(handle_), name));
#else
  return dlsym(handle_, name);
#endif
}

}  // namespace qmlx::vulkan
