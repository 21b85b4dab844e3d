#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta.glsl"
