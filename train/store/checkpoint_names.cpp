#include "train/store/checkpoint_names.h"

#include "autograd/error.h"

namespace relpos {

std::string join_parts(const std::vector<std::string>& parts, char separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

std::vector<std::string> param_path(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t dot = name.find('.', begin);
    parts.push_back(name.substr(begin, dot - begin));
    require(!parts.back().empty() && parts.back().find('/') == std::string::npos,
            "parameter name '{}' must be non-empty parts separated by '.', without '/'", name);
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

std::vector<std::string> optim_path(const std::string& key) {
  const std::size_t slash = key.rfind('/');
  if (slash == std::string::npos) return param_path(key);
  require(slash + 1 < key.size(),
          "optimizer state key '{}' must look like '<param name>/<state>' or '<state>'", key);
  std::vector<std::string> parts = param_path(key.substr(0, slash));
  parts.push_back(key.substr(slash + 1));
  return parts;
}

}  // namespace relpos
