#include "train/config/config_value.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <vector>

#include "autograd/error.h"
#include "train/config/overloaded.h"

namespace relpos {
namespace {

// Parses the whole of `text` as a number of type T (a leading '+' is allowed).
template <class T>
std::optional<T> parse_number(std::string_view text) {
  if (text.starts_with('+')) {
    text.remove_prefix(1);
    if (text.starts_with('-')) return std::nullopt;
  }
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(const std::string& text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

// Reading and writing go through the same accessors; reading only takes a
// field's address, so it leaves `config` unchanged.
ConfigField field_of(const ConfigKey& key, const RunConfig& config) {
  return key.field(const_cast<RunConfig&>(config));
}

// A choice's index, or a UsageError listing the allowed values.
std::size_t choice_index(const ConfigKey& key, const std::string& prefix, const YAML::Node& node) {
  for (std::size_t i = 0; node.IsScalar() && i < key.choices.size(); ++i) {
    if (key.choices[i] == node.Scalar()) return i;
  }
  fail("{}: expected one of {}, got {}", prefix, fmt::join(key.choices, ", "), describe_node(node));
}

// The value of a scalar node as T, or a UsageError naming `prefix` and what was expected.
template <class T>
T read_number(const YAML::Node& node, const std::string& prefix, const char* expected) {
  std::optional<T> value;
  if (node.IsScalar()) value = parse_number<T>(node.Scalar());
  require(value.has_value(), "{}: expected {}, got {}", prefix, expected, describe_node(node));
  if constexpr (std::is_floating_point_v<T>) {
    require(std::isfinite(*value), "{}: expected a finite number, got {}", prefix,
            describe_node(node));
  }
  return *value;
}

// Counts the documents a YAML::Parser reports and keeps where the last one started.
struct DocumentStarts final : YAML::EventHandler {
  int count = 0;
  YAML::Mark last;
  void OnDocumentStart(const YAML::Mark& mark) override {
    ++count;
    last = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

YAML::Node parse_one_yaml_document(const std::string& text, const std::string& origin) {
  YAML::Node first;
  std::optional<YAML::Mark> second;  // where a second document starts, if there is one
  try {
    first = YAML::Load(text);
    // At most two documents are looked at (YAML::LoadAll on some broken inputs emits empty
    // documents without end, found by fuzz_config).
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    if (parser.HandleNextDocument(starts) && parser.HandleNextDocument(starts) && starts.count == 2)
      second = starts.last;
  } catch (const YAML::Exception& e) {
    fail("{}:{}:{}: invalid YAML: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  if (second) {
    fail("{}{}: a second YAML document; one is read, so the rest would be ignored", origin,
         second->line < 0 ? std::string() : fmt::format(":{}", second->line + 1));
  }
  return first;
}

std::string ConfigSource::at(const YAML::Node& node) const {
  if (is_override) return "override " + in_quotes(name);
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return name;
  return fmt::format("{}:{}", name, mark.line + 1);
}

std::string in_quotes(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\'':
      case '\\':
        out += '\\';
        out += c;
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "'";
}

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return in_quotes(node.Scalar());
    default:
      return "null";
  }
}

void read_config_value(const ConfigKey& key, const YAML::Node& node, const ConfigSource& source,
                       RunConfig& config) {
  const std::string prefix = fmt::format("{}: {}", source.at(node), key.path);
  std::visit(
      Overloaded{
          [&](std::int64_t* field) {
            *field = read_number<std::int64_t>(node, prefix, "an integer");
          },
          [&](std::uint64_t* field) {
            *field = read_number<std::uint64_t>(node, prefix, "a non-negative integer");
          },
          [&](double* field) { *field = read_number<double>(node, prefix, "a number"); },
          [&](bool* field) {
            std::optional<bool> value;
            if (node.IsScalar()) value = parse_bool(node.Scalar());
            require(value.has_value(), "{}: expected true or false, got {}", prefix,
                    describe_node(node));
            *field = *value;
          },
          [&](std::string* field) {
            if (!key.choices.empty()) {
              *field = key.choices[choice_index(key, prefix, node)];
              return;
            }
            require(node.IsScalar(), "{}: expected a string, got {}", prefix, describe_node(node));
            *field = node.Scalar();
          },
          // The choices of an enum-class key are listed in the enum's order.
          [&](NormKind* field) { *field = static_cast<NormKind>(choice_index(key, prefix, node)); },
          [&](AttentionPath* field) {
            *field = static_cast<AttentionPath>(choice_index(key, prefix, node));
          },
          [&](std::vector<std::int64_t>* field) {
            require(node.IsSequence(), "{}: expected a list of integers, got {}", prefix,
                    describe_node(node));
            std::vector<std::int64_t> values;
            for (const YAML::Node& element : node) {
              const std::string element_prefix =
                  fmt::format("{}: {}[{}]", source.at(element), key.path, values.size());
              values.push_back(read_number<std::int64_t>(element, element_prefix, "an integer"));
            }
            *field = std::move(values);
          },
      },
      key.field(config));
}

void emit_config_value(const ConfigKey& key, const RunConfig& config, YAML::Emitter& out) {
  std::visit(
      Overloaded{
          [&](const std::int64_t* field) { out << fmt::format("{}", *field); },
          [&](const std::uint64_t* field) { out << fmt::format("{}", *field); },
          // fmt writes the shortest text that parses back to the same double.
          [&](const double* field) { out << fmt::format("{}", *field); },
          [&](const bool* field) { out << (*field ? "true" : "false"); },
          // The emitter quotes strings that would read back as null, a list or a mapping.
          [&](const std::string* field) { out << *field; },
          [&](const NormKind* field) { out << key.choices[static_cast<std::size_t>(*field)]; },
          [&](const AttentionPath* field) { out << key.choices[static_cast<std::size_t>(*field)]; },
          [&](const std::vector<std::int64_t>* field) {
            out << YAML::Flow << YAML::BeginSeq;
            for (const std::int64_t value : *field) out << fmt::format("{}", value);
            out << YAML::EndSeq;
          },
      },
      field_of(key, config));
}

std::string config_value_text(const ConfigKey& key, const RunConfig& config) {
  YAML::Emitter out;
  emit_config_value(key, config, out);
  return out.c_str();
}

std::string config_type_name(const ConfigKey& key) {
  if (!key.choices.empty()) return "enum";
  return std::visit(Overloaded{
                        [](std::int64_t*) -> std::string { return "int"; },
                        [](std::uint64_t*) -> std::string { return "uint64"; },
                        [](double*) -> std::string { return "float"; },
                        [](bool*) -> std::string { return "bool"; },
                        [](std::string*) -> std::string { return "string"; },
                        [](std::vector<std::int64_t>*) -> std::string { return "list of int"; },
                        [](auto*) -> std::string { return "enum"; },
                    },
                    field_of(key, RunConfig{}));
}

}  // namespace relpos
