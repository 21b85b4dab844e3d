#version 450
#extension GL_GOOGLE_include_directive : require
#include "rms_norm_gated.glsl"
