#include "kernels/rope.h"

#include <cmath>

namespace qmlx {

namespace {

// The angles of the rot_dim / 2 frequencies, frequency i at position position_of(i): one
// formula for plain and multimodal RoPE, so they agree bit for bit where the positions do.
template <typename PositionOf>
RopeAngles angles_at(int rot_dim, double theta, PositionOf position_of) {
  int half = rot_dim / 2;
  RopeAngles a;
  a.cos.resize(half);
  a.sin.resize(half);
  for (int i = 0; i < half; ++i) {
    double inv_freq = std::pow(theta, -2.0 * i / rot_dim);
    double angle = double(position_of(i)) * inv_freq;
    a.cos[i] = float(std::cos(angle));
    a.sin[i] = float(std::sin(angle));
  }
  return a;
}

}  // namespace

RopeAngles rope_angles(int64_t pos, int rot_dim, double theta) {
  return angles_at(rot_dim, theta, [pos](int) { return pos; });
}

RopeAngles mrope_angles(int64_t t, int64_t h, int64_t w, int rot_dim, double theta,
                        std::span<const int> sections, bool interleaved) {
  const int sh = sections.size() > 1 ? sections[1] : 0;
  const int sw = sections.size() > 2 ? sections[2] : 0;
  const int st = sections.empty() ? 0 : sections[0];
  return angles_at(rot_dim, theta, [&](int i) {
    if (interleaved) {
      if (i % 3 == 1 && i < 3 * sh) return h;
      if (i % 3 == 2 && i < 3 * sw) return w;
      return t;
    }
    if (i < st) return t;
    return i < st + sh ? h : w;
  });
}

void apply_rope(float* x, int heads, int head_dim, int rot_dim, const RopeAngles& a) {
  int half = rot_dim / 2;
  for (int h = 0; h < heads; ++h) {
    float* v = x + size_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      float lo = v[i], hi = v[i + half];
      v[i] = lo * a.cos[i] - hi * a.sin[i];
      v[i + half] = hi * a.cos[i] + lo * a.sin[i];
    }
  }
}

}  // namespace qmlx
