#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_gguf.glsl"
