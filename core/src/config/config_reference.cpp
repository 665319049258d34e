// Renders the schema as the Markdown reference that docs/config.md embeds (a unit test keeps the
// two identical; `tessera config docs` prints it).
#include <fmt/format.h>

#include "config/config_schema.hpp"

namespace tessera::config_schema {

namespace {

// Inside a Markdown table cell a bare '|' would end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string code_cell(std::string_view text) {
  return text.empty() ? std::string() : fmt::format("`{}`", cell(text));
}

}  // namespace

std::string render_config_reference() {
  std::string out;
  for (const TableSpec& table : tables()) {
    const bool entries = table.kind == TableKind::kPluginEntries;
    out += fmt::format("### `{}{}{}`\n\n{}\n\n", entries ? "[[" : "[", table.path,
                       entries ? "]]" : "]", table.doc);
    std::string rows;
    if (entries)
      rows += fmt::format("| `plugin` | string | **required** | | Name of the {} plugin. |\n",
                          table.path);
    for (const KeySpec& key : keys())
      if (key.table == table.path)
        rows += fmt::format("| `{}` | {} | {} | {} | {} |\n", key.key, key.type_name(),
                            key.required() ? "**required**" : code_cell(key.default_text()),
                            code_cell(key.range_text()), cell(key.doc));
    if (!rows.empty())
      out += "| Key | Type | Default | Allowed | Meaning |\n|---|---|---|---|---|\n" + rows + "\n";
  }
  return out;
}

}  // namespace tessera::config_schema
