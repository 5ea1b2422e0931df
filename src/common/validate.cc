#include "common/validate.h"

#include <cctype>
#include <cstdio>

namespace morpheus {

bool validUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr unsigned kMinForLen[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Status checkUtf8(const std::string& s, const std::string& field) {
  if (validUtf8(s)) return Status::ok();
  return invalidArgument(field, "is not valid UTF-8");
}

namespace {

// The code point starting at s[i] of valid UTF-8 `s`, and its length in *len.
unsigned codePointAt(const std::string& s, size_t i, size_t* len) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  *len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
  unsigned cp = c & (*len == 2 ? 0x1F : *len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < *len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

bool refusedInName(unsigned cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C ||
         cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

Status checkDisplayName(const std::string& s, const std::string& field) {
  MORPHEUS_RETURN_IF_ERROR(checkUtf8(s, field));
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    unsigned cp = codePointAt(s, i, &len);
    if (refusedInName(cp)) {
      char shown[16];
      std::snprintf(shown, sizeof shown, "U+%04X", cp);
      return invalidArgument(field, std::string("contains ") + shown + " at byte " +
                                        std::to_string(i) +
                                        "; control and bidirectional formatting characters are "
                                        "not allowed");
    }
    i += len;
  }
  return Status::ok();
}

Status validateNodeId(const std::string& id, const std::string& field) {
  if (id.empty() || id.size() > 255) {
    return invalidArgument(field, "must be 1-255 characters, got " + std::to_string(id.size()));
  }
  for (char c : id) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
              c == '-' || c == '@' || c == '[' || c == ']';
    if (!ok) {
      char shown[16];
      std::snprintf(
          shown, sizeof shown, std::isprint(static_cast<unsigned char>(c)) ? "'%c'" : "byte 0x%02x",
          std::isprint(static_cast<unsigned char>(c)) ? c : static_cast<unsigned char>(c));
      return invalidArgument(
          field, std::string(shown) + " is not allowed in a node id (use [A-Za-z0-9._:@[]-])");
    }
  }
  if (id.find("..") != std::string::npos) return invalidArgument(field, "must not contain '..'");
  return Status::ok();
}

std::optional<Resource> checkedSum(const Resource& a, const Resource& b) {
  int64_t mem = 0, vcores = 0;
  if (__builtin_add_overflow(a.memoryMib(), b.memoryMib(), &mem) ||
      __builtin_add_overflow(a.vcores(), b.vcores(), &vcores)) {
    return std::nullopt;
  }
  Resource r = a;
  r.setMemoryMib(mem);
  r.setVcores(vcores);
  for (const auto& [n, v] : b.extended()) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a.extendedValue(n), v, &sum)) return std::nullopt;
    r.setExtended(n, sum);
  }
  return r;
}

std::optional<Resource> checkedProduct(const Resource& r, int64_t k) {
  int64_t mem = 0, vcores = 0;
  if (__builtin_mul_overflow(r.memoryMib(), k, &mem) ||
      __builtin_mul_overflow(r.vcores(), k, &vcores)) {
    return std::nullopt;
  }
  Resource out(mem, vcores);
  for (const auto& [n, v] : r.extended()) {
    int64_t prod = 0;
    if (__builtin_mul_overflow(v, k, &prod)) return std::nullopt;
    out.setExtended(n, prod);
  }
  return out;
}

}  // namespace morpheus
