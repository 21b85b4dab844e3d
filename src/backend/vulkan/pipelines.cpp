#include "backend/vulkan/pipelines.h"

#include "backend/vulkan/embedded_shaders.h"
#include "backend/vulkan/pipeline_cache_file.h"
#include "base/error.h"

namespace qmlx::vulkan {
namespace {

std::string pipeline_name(const PipelineDesc& desc) {
  std::string name = desc.shader;
  for (size_t i = 0; i < desc.specialization.size(); ++i)
    name += (i ? "," : "[") + std::to_string(desc.specialization[i]);
  if (!desc.specialization.empty()) name += "]";
  return name;
}

}  // namespace

Pipelines::Pipelines(VkDevice device, const DeviceFunctions& fn, const DeviceInfo& info,
                     std::string cache_path)
    : device_(device), fn_(fn), cache_path_(std::move(cache_path)) {
  std::vector<uint8_t> initial;
  if (!cache_path_.empty()) initial = read_pipeline_cache(cache_path_, info);
  VkPipelineCacheCreateInfo create{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  create.initialDataSize = initial.size();
  create.pInitialData = initial.empty() ? nullptr : initial.data();
  VkResult result = fn_.vkCreatePipelineCache(device_, &create, nullptr, &cache_);
  if (result != VK_SUCCESS && !initial.empty()) {
    // Data the driver refuses despite our checks: start empty rather than fail.
    create.initialDataSize = 0;
    create.pInitialData = nullptr;
    initial.clear();
    result = fn_.vkCreatePipelineCache(device_, &create, nullptr, &cache_);
  }
  check(result, "vkCreatePipelineCache");
  loaded_bytes_ = initial.size();
}

Pipelines::~Pipelines() {
  save();
  for (auto& [name, p] : pipelines_) {
    fn_.vkDestroyPipeline(device_, p->pipeline, nullptr);
    fn_.vkDestroyPipelineLayout(device_, p->layout, nullptr);
    fn_.vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
  }
  fn_.vkDestroyPipelineCache(device_, cache_, nullptr);
}

bool Pipelines::save() {
  std::lock_guard lock(mutex_);
  if (cache_path_.empty() || created_ == saved_at_) return true;
  size_t size = 0;
  check(fn_.vkGetPipelineCacheData(device_, cache_, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<uint8_t> data(size);
  VkResult result = fn_.vkGetPipelineCacheData(device_, cache_, &size, data.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) check(result, "vkGetPipelineCacheData");
  data.resize(size);
  saved_at_ = created_;
  return write_pipeline_cache(cache_path_, data);
}

const Pipeline& Pipelines::get(const PipelineDesc& desc) {
  const std::string name = pipeline_name(desc);
  std::lock_guard lock(mutex_);
  auto found = pipelines_.find(name);
  if (found != pipelines_.end()) {
    if (found->second->bindings != desc.bindings ||
        found->second->push_constant_bytes != desc.push_constant_bytes)
      throw Error("internal: pipeline " + name + " requested with two interfaces");
    return *found->second;
  }
  const EmbeddedShader* shader = find_embedded_shader(desc.shader);
  if (shader == nullptr) throw Error("internal: no embedded shader " + desc.shader);

  auto p = std::make_unique<Pipeline>();
  p->name = name;
  p->bindings = desc.bindings;
  p->push_constant_bytes = desc.push_constant_bytes;
  // Destroys what was made so far if a later step throws.
  struct Cleanup {
    const DeviceFunctions& fn;
    VkDevice device;
    Pipeline* p;
    VkShaderModule module = VK_NULL_HANDLE;
    ~Cleanup() {
      if (module != VK_NULL_HANDLE) fn.vkDestroyShaderModule(device, module, nullptr);
      if (p == nullptr) return;
      if (p->layout != VK_NULL_HANDLE) fn.vkDestroyPipelineLayout(device, p->layout, nullptr);
      if (p->set_layout != VK_NULL_HANDLE)
        fn.vkDestroyDescriptorSetLayout(device, p->set_layout, nullptr);
    }
  } cleanup{fn_, device_, p.get()};

  std::vector<VkDescriptorSetLayoutBinding> bindings(desc.bindings);
  for (uint32_t i = 0; i < desc.bindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = desc.bindings;
  set_info.pBindings = bindings.data();
  check(fn_.vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &p->set_layout),
        "vkCreateDescriptorSetLayout");

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p->set_layout;
  layout_info.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
  layout_info.pPushConstantRanges = &push;
  check(fn_.vkCreatePipelineLayout(device_, &layout_info, nullptr, &p->layout),
        "vkCreatePipelineLayout");

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = shader->spirv.size_bytes();
  module_info.pCode = shader->spirv.data();
  check(fn_.vkCreateShaderModule(device_, &module_info, nullptr, &cleanup.module),
        "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries(desc.specialization.size());
  for (uint32_t i = 0; i < entries.size(); ++i)
    entries[i] = {i, uint32_t(i * sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo spec{uint32_t(entries.size()), entries.data(),
                            desc.specialization.size() * sizeof(uint32_t),
                            desc.specialization.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = cleanup.module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  info.layout = p->layout;
  check(fn_.vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, &p->pipeline),
        ("vkCreateComputePipelines (" + name + ")").c_str());
  cleanup.p = nullptr;  // the pipeline keeps its layouts; the module alone goes
  ++created_;
  return *pipelines_.emplace(name, std::move(p)).first->second;
}

}  // namespace qmlx::vulkan
