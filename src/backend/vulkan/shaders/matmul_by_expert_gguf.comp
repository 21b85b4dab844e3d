#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_by_expert_gguf.glsl"
