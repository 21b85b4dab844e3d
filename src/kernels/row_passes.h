// Batched decode GEMVs apply each weight row to several activation rows in one pass, as many as
// their registers hold: this walks B rows in passes of kMax, then one of 2 and one of 1 for what
// is left, so every pass size is a compile-time constant.
#pragma once

namespace qmlx {

// Calls pass.template operator()<NB>(first) for consecutive passes covering rows [0, B).
template <int kMax, typename Pass>
inline void in_row_passes(int B, Pass&& pass) {
  for (int b = 0; b < B;) {
    const int left = B - b;
    if (left >= kMax) {
      pass.template operator()<kMax>(b);
      b += kMax;
    } else if (left >= 2) {
      pass.template operator()<2>(b);
      b += 2;
    } else {
      pass.template operator()<1>(b);
      b += 1;
    }
  }
}

}  // namespace qmlx
