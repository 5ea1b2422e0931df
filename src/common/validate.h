// Checks on untrusted text shared by the daemons (docs/design/conventions.md "Errors":
// untrusted input is validated before anything is stored).
#pragma once

#include <optional>
#include <string>

#include "common/resource.h"
#include "common/status.h"

namespace morpheus {

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF). Strings that reach JSON encoding must pass this.
bool validUtf8(const std::string& s);

// INVALID_ARGUMENT naming `field` unless `s` is valid UTF-8.
Status checkUtf8(const std::string& s, const std::string& field);

// Names people read (reservation and application names, recurrence keys,
// tags) end up in terminals, logs and the web UI: INVALID_ARGUMENT naming
// `field` unless `s` is valid UTF-8 without control characters (U+0000-U+001F,
// U+007F-U+009F, U+2028, U+2029) or bidirectional formatting characters
// (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which could make a
// name display as another.
Status checkDisplayName(const std::string& s, const std::string& field);

// Node ids are used in file paths, log lines and '|'-joined keys: 1-255
// characters of [A-Za-z0-9._:@[]-] and never "..". INVALID_ARGUMENT naming
// `field` otherwise.
Status validateNodeId(const std::string& id, const std::string& field);

// Overflow-checked forms of Resource's + and *: nullopt when any dimension
// leaves int64_t. Use them wherever an operand comes from input (node
// resources, capability x containers, gang sizes, sums of node capacities).
std::optional<Resource> checkedSum(const Resource& a, const Resource& b);
std::optional<Resource> checkedProduct(const Resource& r, int64_t k);

}  // namespace morpheus
