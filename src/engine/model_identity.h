// Model identity: a text that changes whenever what a cached K/V byte or recurrent-state value
// means would change: the architecture and every forward-pass hyper-parameter, every weight's
// shape, storage format and quantization, and digests of the weight bytes (sampled pages of
// each matrix, whole small vectors). The cache hashes it (with the state layout) into the
// fingerprint that keys a store, so the same model files give the same identity on any machine
// and a checkpoint is never restored under another model. Cheap: it reads a few pages per
// matrix, not the weights.
#pragma once

#include <string>

#include "model/model.h"

namespace qmlx {

std::string model_identity(const Model& model);

}  // namespace qmlx
