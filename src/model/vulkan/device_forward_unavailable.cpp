// make_device_forward in a build without the Vulkan backend (no headers or glslc at build time,
// or -DQMLX_VULKAN=OFF): every device is an error that says so.
#include "base/error.h"
#include "model/device_forward.h"

namespace qmlx {

std::unique_ptr<DeviceForward> make_device_forward(const std::string& device, const ModelConfig&,
                                                   const ModelWeights&, int,
                                                   const std::function<void(uint64_t, uint64_t)>&) {
  throw Error("--device " + device +
              ": this qmlx was built without the Vulkan backend (it needs libvulkan-dev and "
              "glslc at build time); use --device cpu");
}

}  // namespace qmlx
