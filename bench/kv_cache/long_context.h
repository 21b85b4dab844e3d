// Long contexts for benchmarks without a long prefill: a Session that prefilled a short prompt
// is grown to n positions by repeating the prompt's K/V rows (in the Session's own storage
// dtype) and keeping its recurrent state. What a decode step costs does not depend on the
// values it attends to, so decode speed and checkpoint sizes at 32k tokens are measured in
// seconds instead of the hour a real 32k prefill takes on two cores. Not for accuracy.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/session.h"

namespace qmlx::bench {

inline void repeat_context(Session& session, int64_t n) {
  const StateLayout& l = session.layout();
  const int64_t p = session.position();
  const size_t row = l.kv_row_bytes();
  std::vector<std::vector<uint8_t>> keys, values;
  for (size_t a = 0; a < l.attention_layers.size(); ++a) {
    keys.emplace_back(size_t(p) * row);
    values.emplace_back(size_t(p) * row);
    session.read_kv_rows(int(a), 0, p, keys.back().data(), values.back().data());
  }
  std::vector<std::vector<float>> conv, ssm;
  for (size_t r = 0; r < l.recurrent_layers.size(); ++r) {
    conv.emplace_back(l.conv_state_bytes() / sizeof(float));
    ssm.emplace_back(l.ssm_state_bytes() / sizeof(float));
    session.read_recurrent(int(r), conv.back().data(), ssm.back().data());
  }
  std::vector<float> logits(session.logits().begin(), session.logits().end());
  session.reset(n);
  for (size_t a = 0; a < keys.size(); ++a)
    for (int64_t begin = 0; begin < n; begin += p) {
      const int64_t end = std::min(n, begin + p);
      session.write_kv_rows(int(a), begin, end, keys[a].data(), values[a].data());
    }
  for (size_t r = 0; r < conv.size(); ++r)
    session.write_recurrent(int(r), conv[r].data(), ssm[r].data());
  session.set_logits(logits);
}

}  // namespace qmlx::bench
