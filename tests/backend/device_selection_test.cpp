// The device choice rule of `--device vulkan` / `vulkan:N` on made-up device lists (no Vulkan
// needed), and the requirements a device must meet.
#include "backend/vulkan/device_selection.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qmlx::vulkan {
namespace {

DeviceInfo device(int index, const std::string& name, DeviceType type, bool can_run = true) {
  DeviceInfo d;
  d.index = index;
  d.name = name;
  d.type = type;
  d.can_run = can_run;
  if (!can_run) d.cannot_run_reason = "needs Vulkan 1.2";
  return d;
}

VulkanProbe probe_of(std::vector<DeviceInfo> devices) {
  VulkanProbe p;
  p.status = VulkanProbe::Status::kOk;
  p.devices = std::move(devices);
  return p;
}

std::string error_of(const VulkanProbe& probe, const std::string& spec) {
  try {
    select_device(probe, spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSelection, PrefersDiscreteThenIntegratedThenAnyWithCpuLast) {
  const VulkanProbe all = probe_of(
      {device(0, "llvmpipe", DeviceType::kCpu), device(1, "igpu", DeviceType::kIntegrated),
       device(2, "dgpu", DeviceType::kDiscrete), device(3, "dgpu2", DeviceType::kDiscrete)});
  EXPECT_EQ(select_device(all, "vulkan"), 2);
  EXPECT_EQ(select_device(probe_of({device(0, "llvmpipe", DeviceType::kCpu),
                                    device(1, "igpu", DeviceType::kIntegrated)}),
                          "vulkan"),
            1);
  EXPECT_EQ(select_device(probe_of({device(0, "llvmpipe", DeviceType::kCpu),
                                    device(1, "vgpu", DeviceType::kVirtual)}),
                          "vulkan"),
            1);
  EXPECT_EQ(select_device(probe_of({device(0, "llvmpipe", DeviceType::kCpu)}), "vulkan"), 0);
}

TEST(DeviceSelection, SkipsDevicesThatCannotRun) {
  const VulkanProbe p = probe_of({device(0, "old dgpu", DeviceType::kDiscrete, false),
                                  device(1, "llvmpipe", DeviceType::kCpu)});
  EXPECT_EQ(select_device(p, "vulkan"), 1);
  const std::string why = error_of(p, "vulkan:0");
  EXPECT_NE(why.find("cannot run"), std::string::npos) << why;
  EXPECT_NE(why.find("needs Vulkan 1.2"), std::string::npos) << why;
}

TEST(DeviceSelection, IndexSelectsThatDevice) {
  const VulkanProbe p =
      probe_of({device(0, "dgpu", DeviceType::kDiscrete), device(1, "llvmpipe", DeviceType::kCpu)});
  EXPECT_EQ(select_device(p, "vulkan:1"), 1);
  EXPECT_EQ(select_device(p, "vulkan:0"), 0);
}

TEST(DeviceSelection, ErrorsListWhatWasFound) {
  const VulkanProbe p = probe_of({device(0, "llvmpipe", DeviceType::kCpu)});
  for (const std::string spec : {"vulkan:1", "vulkan:x", "vulkan:", "vulkan:-1", "cuda"}) {
    const std::string why = error_of(p, spec);
    EXPECT_NE(why.find("--device " + spec), std::string::npos) << why;
    EXPECT_NE(why.find("0: llvmpipe [cpu] can run"), std::string::npos) << why;
  }
  const std::string none = error_of(probe_of({}), "vulkan");
  EXPECT_NE(none.find("no Vulkan devices"), std::string::npos) << none;
  const std::string all_bad =
      error_of(probe_of({device(0, "old", DeviceType::kDiscrete, false)}), "vulkan");
  EXPECT_NE(all_bad.find("no Vulkan device can run qmlx"), std::string::npos) << all_bad;
}

TEST(DeviceSelection, NoVulkanAtAllIsAnErrorSayingWhy) {
  VulkanProbe p;
  p.status = VulkanProbe::Status::kNoLoader;
  p.message = "no Vulkan loader (libvulkan.so.1) found";
  const std::string why = error_of(p, "vulkan");
  EXPECT_NE(why.find("no Vulkan loader (libvulkan.so.1) found"), std::string::npos) << why;
}

TEST(DeviceRequirements, JudgesApiVersionAndComputeQueue) {
  DeviceInfo d;
  d.api_version = (1u << 22) | (1u << 12);  // 1.1
  d.has_compute_queue = true;
  d.max_workgroup_invocations = 1024;
  judge_device(d);
  EXPECT_FALSE(d.can_run);
  EXPECT_EQ(d.cannot_run_reason, "needs Vulkan 1.2, the driver offers 1.1.0");
  d.api_version = (1u << 22) | (3u << 12) | 230;
  judge_device(d);
  EXPECT_TRUE(d.can_run);
  d.has_compute_queue = false;
  judge_device(d);
  EXPECT_EQ(d.cannot_run_reason, "no compute queue");
}

}  // namespace
}  // namespace qmlx::vulkan
