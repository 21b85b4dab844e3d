// error_of: runs a parse that must fail and returns the ApiError it threw (status and the field
// it names), for the request parser tests.
#pragma once

#include <gtest/gtest.h>

#include "server/common/api_error.h"

namespace qmlx::server::testing {

template <typename Fn>
ApiError error_of(Fn fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ApiError";
  return ApiError(0, "");
}

}  // namespace qmlx::server::testing
