// `qmlx devices`: the compute devices this machine offers qmlx: the CPU (always) and each
// Vulkan device with its driver, memory, limits, the optional features the backend may use and
// whether the backend can run on it. A machine without Vulkan (no loader, no driver, or a
// build without the backend) is reported, not an error: the command exits 0 either way.
// --device SPEC shows which device `--device SPEC` would take, and fails like it would.
#include <cstdio>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/device_selection.h"
#include "base/error.h"
#include "base/human_bytes.h"
#include "cli/command.h"

namespace qmlx::cli {
namespace {

using ordered_json = nlohmann::ordered_json;
using vulkan::DeviceInfo;
using vulkan::VulkanProbe;

const char* status_name(VulkanProbe::Status s) {
  switch (s) {
    case VulkanProbe::Status::kNoBuildSupport:
      return "not_built";
    case VulkanProbe::Status::kNoLoader:
      return "no_loader";
    case VulkanProbe::Status::kNoInstance:
      return "no_instance";
    case VulkanProbe::Status::kOk:
      break;
  }
  return "ok";
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string features_text(const vulkan::DeviceFeatures& f) {
  return "16-bit storage " + yes_no(f.storage_16bit) + ", 8-bit storage " + yes_no(f.storage_8bit) +
         ", int8 " + yes_no(f.shader_int8) + ", float16 " + yes_no(f.shader_float16) +
         ", float64 " + yes_no(f.shader_float64) + ", integer dot product " +
         yes_no(f.integer_dot_product) + ", subgroup size control " +
         yes_no(f.subgroup_size_control) + ", buffer device address " +
         yes_no(f.buffer_device_address);
}

ordered_json device_json(const DeviceInfo& d) {
  const vulkan::DeviceFeatures& f = d.features;
  return {{"index", d.index},
          {"name", d.name},
          {"type", vulkan::device_type_name(d.type)},
          {"vendor_id", d.vendor_id},
          {"device_id", d.device_id},
          {"driver_name", d.driver_name},
          {"driver_info", d.driver_info},
          {"driver_version", d.driver_version},
          {"api_version", vulkan::api_version_string(d.api_version)},
          {"device_uuid", vulkan::uuid_hex(d.device_uuid)},
          {"device_local_bytes", d.device_local_bytes},
          {"max_storage_buffer_range", d.max_storage_buffer_range},
          {"max_allocation_bytes", d.max_allocation_bytes},
          {"max_shared_memory_bytes", d.max_shared_memory_bytes},
          {"subgroup_size", d.subgroup_size},
          {"min_subgroup_size", d.min_subgroup_size},
          {"max_subgroup_size", d.max_subgroup_size},
          {"features",
           {{"storage_16bit", f.storage_16bit},
            {"storage_8bit", f.storage_8bit},
            {"shader_int8", f.shader_int8},
            {"shader_float16", f.shader_float16},
            {"shader_float64", f.shader_float64},
            {"integer_dot_product", f.integer_dot_product},
            {"subgroup_size_control", f.subgroup_size_control},
            {"buffer_device_address", f.buffer_device_address}}},
          {"can_run", d.can_run},
          {"cannot_run_reason", d.cannot_run_reason}};
}

void print_text(const VulkanProbe& probe, int chosen, const std::string& spec) {
  std::printf("cpu: the default backend (%u hardware threads)\n",
              std::thread::hardware_concurrency());
  if (probe.status != VulkanProbe::Status::kOk) {
    std::printf("vulkan: %s\n", probe.message.c_str());
    return;
  }
  std::printf("vulkan: loader %s (API %s), %zu device%s\n", probe.loader.c_str(),
              probe.loader_api_version.c_str(), probe.devices.size(),
              probe.devices.size() == 1 ? "" : "s");
  for (const DeviceInfo& d : probe.devices) {
    std::printf("vulkan:%d  %s [%s]  can run: %s\n", d.index, d.name.c_str(),
                vulkan::device_type_name(d.type),
                d.can_run ? "yes" : ("no (" + d.cannot_run_reason + ")").c_str());
    std::printf("    driver: %s%s%s, Vulkan %s\n", d.driver_name.c_str(),
                d.driver_info.empty() ? "" : " ", d.driver_info.c_str(),
                vulkan::api_version_string(d.api_version).c_str());
    std::printf("    memory: %s device-local; storage binding up to %s, allocation up to %s\n",
                human_bytes(d.device_local_bytes).c_str(),
                human_bytes(d.max_storage_buffer_range).c_str(),
                human_bytes(d.max_allocation_bytes).c_str());
    std::printf("    subgroup size %u (%u-%u), shared memory %s\n", d.subgroup_size,
                d.min_subgroup_size, d.max_subgroup_size,
                human_bytes(d.max_shared_memory_bytes).c_str());
    std::printf("    features: %s\n", features_text(d.features).c_str());
  }
  if (chosen >= 0) std::printf("--device %s selects vulkan:%d\n", spec.c_str(), chosen);
}

int run_devices(int argc, char** argv) {
  CLI::App app("List the compute devices qmlx can use", "qmlx devices");
  bool json = false;
  std::string spec;
  app.add_flag("--json", json, "print the list as JSON");
  app.add_option("--device", spec,
                 "show which device this --device value selects (vulkan, vulkan:N)");
  CLI11_PARSE(app, argc, argv);

  const VulkanProbe probe = vulkan::probe_vulkan();
  // With --device, a choice that cannot be made fails here as it would in `qmlx serve`.
  int chosen = -1;
  if (!spec.empty()) {
    chosen = vulkan::select_device(probe, spec);
  } else if (probe.status == VulkanProbe::Status::kOk) {
    try {
      chosen = vulkan::select_device(probe, "vulkan");
      spec = "vulkan";
    } catch (const Error&) {
      // No device can run the backend: the listing says why for each.
    }
  }
  if (!json) {
    print_text(probe, chosen, spec);
    return 0;
  }
  ordered_json devices = ordered_json::array();
  for (const DeviceInfo& d : probe.devices) devices.push_back(device_json(d));
  ordered_json out = {{"cpu", {{"threads", std::thread::hardware_concurrency()}}},
                      {"vulkan",
                       {{"built", vulkan::vulkan_built()},
                        {"status", status_name(probe.status)},
                        {"message", probe.message},
                        {"loader", probe.loader},
                        {"loader_api_version", probe.loader_api_version},
                        {"devices", devices},
                        {"selected", chosen >= 0 ? ordered_json(chosen) : ordered_json()}}}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace

QMLX_COMMAND(devices, "devices", "list the CPU and the Vulkan devices qmlx can use", run_devices);

}  // namespace qmlx::cli
