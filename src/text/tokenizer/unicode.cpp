#include "text/tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include "base/error.h"

namespace qmlx::unicode {
namespace {

const icu::Normalizer2& instance(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNFC:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNFD:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNFKC:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNFKD:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || n == nullptr) {
    throw Error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  }
  return *n;
}

bool is_ascii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

void normalize(NormalForm form, std::string& text) {
  // ASCII is invariant under all four forms; skipping ICU keeps English text fast.
  if (is_ascii(text)) return;
  const icu::Normalizer2& normalizer = instance(form);
  UErrorCode status = U_ZERO_ERROR;
  icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (normalizer.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return;
  std::string out;
  out.reserve(text.size() + 16);
  icu::StringByteSink<std::string> sink(&out);
  status = U_ZERO_ERROR;
  normalizer.normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status))
    throw Error(std::string("Unicode normalization failed: ") + u_errorName(status));
  text = std::move(out);
}

std::string to_lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  icu::CaseMap::utf8ToLower("", 0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())),
                            sink, nullptr, status);
  if (U_FAILURE(status)) throw Error(std::string("lowercasing failed: ") + u_errorName(status));
  return out;
}

bool is_whitespace(char32_t cp) { return u_isUWhiteSpace(static_cast<UChar32>(cp)); }

bool is_numeric(char32_t cp) {
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}

bool is_word_char(char32_t cp) {
  auto c = static_cast<UChar32>(cp);
  uint32_t mask = U_GET_GC_MASK(c);
  return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) ||
         (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0 ||
         u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
}

}  // namespace qmlx::unicode
