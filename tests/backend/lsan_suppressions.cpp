// LeakSanitizer's suppressions for this binary (scripts/test.sh's sanitizer run): memory the
// Vulkan loader, lavapipe (Mesa and its LLVM) and the layers allocate and keep until the process
// exits. qmlx's own allocations are still checked. LeakSanitizer asks for this function by name
// at start-up; a build without it never calls it.
extern "C" const char* __lsan_default_suppressions();

extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan.so.1\n"
         "leak:libvulkan_lvp.so\n"
         "leak:libLLVM-15.so.1\n"
         "leak:libVkLayer_khronos_validation.so\n"
         "leak:libVkLayer_MESA_device_select.so\n";
}
