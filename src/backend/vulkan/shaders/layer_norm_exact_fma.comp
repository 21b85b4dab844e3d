#version 450
#extension GL_GOOGLE_include_directive : require
#define QMLX_EXACT_FMA
#include "layer_norm.glsl"
